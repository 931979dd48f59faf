"""Round trips through ``kafkalite produce`` and ``kafkalite consume`` on a broker process."""

from __future__ import annotations

import json
import shutil
import subprocess

import pytest
from cli_runner import Cli


def consume(cli: Cli, topic: str, *args: str) -> str:
    return cli.ok("consume", topic, "--timeout-ms", "1500", *args)


def test_keys_headers_and_format_placeholders(cli: Cli, topic: str) -> None:
    cli.ok("produce", topic, "--key-separator", ":", "--header", "source=cli",
           "--header", "trace=a=b", "--compression", "gzip",
           input="user-1:clicked\nuser-2:left:early\n")
    out = consume(cli, topic, "--from-beginning",
                  "--format", "%t|%p|%o|%k|%v|%h|%s|%%\\t%T\\n")
    lines = out.splitlines()
    assert len(lines) == 2
    fields, timestamp = lines[0].split("\t")
    assert fields == f"{topic}|0|0|user-1|clicked|source=cli,trace=a=b|7|%"
    assert int(timestamp) > 1_500_000_000_000
    assert lines[1].split("\t")[0] == f"{topic}|0|1|user-2|left:early|source=cli,trace=a=b|10|%"


def test_json_output_and_non_utf8_values(cli: Cli, topic: str, tmp_path: object) -> None:
    path = tmp_path / "lines.bin"  # type: ignore[operator]
    path.write_bytes(b"plain\n\xff\xfe\n")
    cli.ok("produce", topic, "--file", str(path), "--acks", "1")
    records = [json.loads(line) for line in
               consume(cli, topic, "--offset", "beginning", "--json").splitlines()]
    assert [r["offset"] for r in records] == [0, 1]
    assert records[0]["value"] == "plain" and records[0]["key"] is None
    assert records[0]["headers"] == [] and records[0]["timestamp_type"] == "CreateTime"
    assert "value" not in records[1] and records[1]["value_base64"] == "//4="


def test_default_output_is_values_and_offsets_pick_the_start(cli: Cli, topic: str) -> None:
    cli.ok("produce", topic, input="".join(f"v{n}\n" for n in range(5)))
    assert consume(cli, topic, "--from-beginning").splitlines() == [f"v{n}" for n in range(5)]
    assert consume(cli, topic, "--offset", "3").splitlines() == ["v3", "v4"]
    assert consume(cli, topic, "--partition", "0", "--offset", "1", "--max-messages", "2"
                   ).splitlines() == ["v1", "v2"]
    assert consume(cli, topic, "--offset", "end") == ""
    assert consume(cli, topic) == ""  # a consumer without a group starts at the end


def test_a_group_resumes_where_it_committed(cli: Cli, topic: str) -> None:
    cli.ok("produce", topic, input="a\nb\nc\n")
    first = cli.ok("consume", topic, "--group", "resumer", "--from-beginning",
                   "--max-messages", "2")
    assert first.splitlines() == ["a", "b"]
    cli.ok("produce", topic, input="d\n")
    rest = consume(cli, topic, "--group", "resumer", "--from-beginning")
    assert rest.splitlines() == ["c", "d"]


def test_consume_reports_the_count_on_stderr(cli: Cli, topic: str) -> None:
    cli.ok("produce", topic, input="x\ny\n")
    result = cli("consume", topic, "--from-beginning", "--max-messages", "2")
    assert result.returncode == 0
    assert result.stderr.strip() == "Processed a total of 2 messages"


def test_kcat_reads_what_we_produce_and_we_read_what_kcat_produces(cli: Cli, topic: str
                                                                   ) -> None:
    kcat = shutil.which("kcat")
    if kcat is None:
        pytest.skip("kcat is not installed")
    cli.ok("produce", topic, "-K", ":", "-H", "h=1", "-z", "snappy", input="k1:v1\nk2:v2\n")
    seen = subprocess.run([kcat, "-b", cli.bootstrap_servers, "-C", "-t", topic, "-e", "-q",
                           "-f", "%k=%s %h\\n"], capture_output=True, text=True, timeout=60)
    assert seen.stdout.splitlines() == ["k1=v1 h=1", "k2=v2 h=1"]

    other = topic + "-kcat"
    subprocess.run([kcat, "-b", cli.bootstrap_servers, "-P", "-t", other, "-K", ":",
                    "-H", "from=kcat", "-z", "lz4"], input="a:1\nb:2\n", text=True,
                   check=True, timeout=60)
    records = [json.loads(line) for line in consume(cli, other, "--from-beginning", "--json")
               .splitlines()]
    assert [(r["key"], r["value"], r["headers"]) for r in records] == [
        ("a", "1", [["from", "kcat"]]), ("b", "2", [["from", "kcat"]])]
