"""The CLI's plumbing against a broker process: metadata, produce, errors, usage, perf."""

from __future__ import annotations

import json
import socket
import subprocess
import sys

from cli_runner import REPO_ROOT, Cli

import kafkalite
from kafkalite.cli import build_parser

TRACEBACK = "Traceback"


def closed_port() -> int:
    """A loopback port nothing listens on (bound, then released)."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def assert_one_line_failure(result: object, fragment: str) -> None:
    assert result.returncode != 0  # type: ignore[attr-defined]
    stderr: str = result.stderr  # type: ignore[attr-defined]
    assert TRACEBACK not in stderr
    lines = stderr.strip().splitlines()
    assert len(lines) == 1, stderr
    assert lines[0].startswith("kafkalite: ") and fragment in lines[0], stderr


def test_every_command_has_help_with_examples() -> None:
    parser = build_parser()
    leaves = [("produce",), ("consume",), ("metadata",), ("topics", "list"),
              ("topics", "create"), ("topics", "delete"), ("topics", "describe"),
              ("topics", "alter"),
              ("groups", "list"), ("groups", "describe"), ("groups", "reset-offsets"),
              ("perf", "produce"), ("perf", "consume")]
    for path in leaves:
        sub = parser
        for name in path:
            actions = [a for a in sub._actions if a.__class__.__name__ == "_SubParsersAction"]
            sub = actions[0].choices[name]  # type: ignore[attr-defined]
        help_text = sub.format_help()
        assert "examples:" in help_text, path
        assert "--bootstrap-servers" in help_text, path


def test_both_commands_print_their_version() -> None:
    cli = Cli("127.0.0.1:1")  # --version answers before any broker is asked
    assert cli.ok("--version") == f"kafkalite {kafkalite.__version__}\n"
    server = subprocess.run([sys.executable, "-m", "kafkalite_server", "--version"],
                            capture_output=True, text=True, timeout=60, cwd=REPO_ROOT,
                            check=True)
    assert server.stdout == f"kafkalite-server {kafkalite.__version__}\n"


def test_metadata_lists_broker_and_topics(cli: Cli, topic: str) -> None:
    cli.ok("produce", topic, input="one\n")
    data = json.loads(cli.ok("metadata", "--json"))
    assert [b["port"] for b in data["brokers"]] == [int(cli.bootstrap_servers.split(":")[1])]
    assert data["brokers"][0]["controller"] is True
    described = next(t for t in data["topics"] if t["name"] == topic)
    assert described["partitions"] == [
        {"partition": 0, "leader": 0, "leader_epoch": described["partitions"][0]["leader_epoch"],
         "replicas": [0], "isr": [0]}]
    assert described["internal"] is False
    text = cli.ok("metadata", "--topic", topic)
    assert f"topic '{topic}' with 1 partitions" in text
    assert "partition 0, leader 0, replicas: 0, isrs: 0" in text


def test_unreachable_broker_is_one_line(cli: Cli) -> None:
    address = f"127.0.0.1:{closed_port()}"
    for command in (["metadata"], ["topics", "list"], ["produce", "t"],
                    ["consume", "t", "--timeout-ms", "100"], ["groups", "list"],
                    ["topics", "create", "t"], ["perf", "produce", "t", "--records", "1"]):
        result = cli(*command, "--connect-timeout-ms", "500", bootstrap=address, input="x\n")
        assert_one_line_failure(result, f"no broker reachable at {address}")


def test_unknown_topic_is_one_line(cli: Cli) -> None:
    for command in (["consume", "no-such-topic", "--timeout-ms", "100"],
                    ["perf", "consume", "no-such-topic", "--records", "1"],
                    ["metadata", "--topic", "no-such-topic"]):
        assert_one_line_failure(cli(*command), "unknown topic 'no-such-topic'")


def test_bad_arguments_are_one_line_usage_errors(cli: Cli) -> None:
    for command, fragment in [
        (["consume", "t", "--offset", "soon"], "'soon' is not N, -N, s@MS"),
        (["consume", "t", "--format", "%q"], "unknown placeholder %q"),
        (["consume", "t", "--group", "g", "--offset", "5"], "--offset cannot be combined"),
        (["produce", "t", "--acks", "2"], "'2' is not one of all"),
        (["produce", "t", "--header", "novalue"], "'novalue' is not KEY=VALUE"),
        (["topics", "create", "t", "--partitions", "0"], "'0' is not a positive integer"),
        (["groups", "reset-offsets", "g", "--topic", "t", "--to-datetime", "yesterday"],
         "'yesterday' is not an ISO 8601 date-time"),
        (["groups", "reset-offsets", "g", "--topic", "t"], "one of the arguments --to-"),
    ]:
        result = cli(*command)
        assert result.returncode == 2, (command, result.stderr)
        assert TRACEBACK not in result.stderr
        assert fragment in result.stderr, (command, result.stderr)
        assert len(result.stderr.strip().splitlines()) == 1, result.stderr


def test_produce_to_a_missing_partition_fails(cli: Cli, topic: str) -> None:
    cli.ok("produce", topic, input="x\n")
    result = cli("produce", topic, "--partition", "5", input="x\n")
    assert_one_line_failure(result, f"topic '{topic}' has no partition 5 (it has 1)")


def test_produce_line_without_separator_fails(cli: Cli, topic: str) -> None:
    result = cli("produce", topic, "--key-separator", ":", input="k:v\nno separator\n")
    assert_one_line_failure(result, "line 2 has no key separator ':'")


def test_perf_produce_reports_json(cli: Cli, topic: str) -> None:
    result = json.loads(cli.ok("perf", "produce", topic, "--records", "2000",
                               "--record-size", "64", "--acks", "1", "--compression", "lz4",
                               "--batch-size", "4096", "--linger-ms", "2", "--json"))
    assert result["topic"] == topic
    assert result["records"] == 2000 and result["errors"] == 0
    assert result["bytes"] == 2000 * 64
    latency = result["latency_ms"]
    assert 0 < latency["p50"] <= latency["p95"] <= latency["p99"] <= latency["max"]
    assert result["records_per_second"] > 0
    text = cli.ok("perf", "produce", topic, "--records", "100", "--throughput", "1000")
    assert text.startswith("100 records, ") and "ms 99th" in text

    consumed = json.loads(cli.ok("perf", "consume", topic, "--records", "2000", "--json"))
    assert consumed["records"] == 2000 and consumed["bytes"] == 2000 * 64
    assert consumed["latency_ms"]["max"] >= consumed["latency_ms"]["p50"] > 0
    grouped = json.loads(cli.ok("perf", "consume", topic, "--records", "500",
                                "--group", f"{topic}-perf", "--json"))
    assert grouped["records"] == 500


def test_perf_takes_kafkas_perf_test_flag_names(cli: Cli, topic: str) -> None:
    # kafka-producer-perf-test: the address comes in --producer-props; -b points nowhere.
    produced = json.loads(cli.ok(
        "perf", "produce", "--topic", topic, "--num-records", "300", "--record-size", "20",
        "--throughput", "-1", "--producer-props", f"bootstrap.servers={cli.bootstrap_servers}",
        "acks=1", "linger.ms=2", "-b", f"127.0.0.1:{closed_port()}", "--json"))
    assert (produced["topic"], produced["records"], produced["bytes"]) == (topic, 300, 6000)
    consumed = json.loads(cli.ok("perf", "consume", "--bootstrap-server", cli.bootstrap_servers,
                                 "--topic", topic, "--messages", "300", "--timeout", "5000",
                                 "--json"))
    assert consumed["records"] == 300
    result = cli("perf", "produce", "--num-records", "1")
    assert result.returncode == 2 and "name the topic" in result.stderr
    result = cli("perf", "produce", topic, "--topic", "other", "--num-records", "1")
    assert result.returncode == 2 and "two topics given" in result.stderr
    # A setting the producer does not take is a usage error, named as it was typed.
    result = cli("perf", "produce", topic, "--num-records", "1",
                 "--producer-props", "no.such.key=1")
    assert result.returncode == 2 and TRACEBACK not in result.stderr
    assert result.stderr.strip().endswith("unknown producer setting 'no.such.key'")


def test_perf_consume_fails_when_records_run_out(cli: Cli, topic: str) -> None:
    cli.ok("produce", topic, input="only\n")
    result = cli("perf", "consume", topic, "--records", "5", "--timeout-ms", "1000")
    assert_one_line_failure(result, "only 1 of 5 records arrived")
