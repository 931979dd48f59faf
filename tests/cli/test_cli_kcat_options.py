"""kcat's consume options (-o -N, -o s@MS, -e, -X) and a group's join under Kafka's defaults."""

from __future__ import annotations

import json

import pytest
from cli_runner import Cli
from test_cli_basics import assert_one_line_failure

from kafkalite import Producer


def offsets_by_partition(out: str) -> dict[int, list[int]]:
    seen: dict[int, list[int]] = {}
    for line in out.splitlines():
        partition, offset = map(int, line.split(":"))
        seen.setdefault(partition, []).append(offset)
    return seen


def test_relative_offsets_read_the_last_n_of_each_partition(cli: Cli, topic: str) -> None:
    cli.ok("topics", "create", topic, "--partitions", "2")
    cli.ok("produce", topic, "-p", "0", input="".join(f"a{n}\n" for n in range(5)))
    cli.ok("produce", topic, "-p", "1", input="b0\n")
    # -e ends the run without a --timeout-ms: the test would hang otherwise.
    out = cli.ok("consume", topic, "-o", "-2", "-e", "-f", "%p:%o\\n")
    assert offsets_by_partition(out) == {0: [3, 4], 1: [0]}  # never before the first record


def test_timestamp_offsets_start_at_the_first_record_at_or_after(cli: Cli, topic: str) -> None:
    base = 1_700_000_000_000
    with Producer(bootstrap_servers=cli.bootstrap_servers) as producer:
        for n in range(6):
            producer.send(topic, f"v{n}".encode(), timestamp_ms=base + 1000 * n)
        producer.flush()
    out = cli.ok("consume", topic, "-o", f"s@{base + 2500}", "-e")
    assert out.splitlines() == ["v3", "v4", "v5"]
    assert cli.ok("consume", topic, "-o", f"s@{base + 99_000}", "-e") == ""


def test_exit_at_end_with_a_group_stops_after_the_backlog(default_cli: Cli, topic: str) -> None:
    default_cli.ok("produce", topic, input="x\ny\n")
    out = default_cli.ok("consume", topic, "-g", f"{topic}-g", "--from-beginning", "-e")
    assert out.splitlines() == ["x", "y"]


def test_client_properties_reach_the_client(cli: Cli, topic: str) -> None:
    cli.ok("produce", topic, input="small\n")
    result = cli("produce", topic, "-X", "max.request.size=200", input="x" * 1000 + "\n")
    assert_one_line_failure(result, "above max_request_size (200)")

    out = cli.ok("consume", topic, "-o", "beginning", "-e", "-X", "fetch.max.bytes=1024",
                 "-X", "max_poll_records=1", "--json")
    assert [json.loads(line)["value"] for line in out.splitlines()] == ["small"]
    # A typo is a usage error named as it was typed, with the setting it most likely meant.
    result = cli("consume", topic, "-e", "-X", "fetch.max.bites=1")
    assert result.returncode == 2
    assert result.stderr.strip().endswith(
        "unknown consumer setting 'fetch.max.bites': did you mean fetch.max.bytes?")


@pytest.mark.parametrize("value", ["-0", "s@x", "--5", "later"])
def test_bad_offsets_are_usage_errors(cli: Cli, value: str) -> None:
    result = cli("consume", "t", f"--offset={value}")
    assert result.returncode == 2
    assert "is not N, -N, s@MS, 'beginning' or 'end'" in result.stderr


def test_group_join_does_not_count_as_idle_time(default_cli: Cli, topic: str) -> None:
    # Kafka's default group.initial.rebalance.delay.ms (3 s) holds the first join longer
    # than --timeout-ms: the idle clock must start only once partitions are assigned.
    default_cli.ok("produce", topic, input="a\nb\nc\n")
    out = default_cli.ok("consume", topic, "-g", f"{topic}-g", "--from-beginning",
                         "--timeout-ms", "1500")
    assert out.splitlines() == ["a", "b", "c"]
    grouped = json.loads(default_cli.ok("perf", "consume", topic, "--messages", "3",
                                        "--group", f"{topic}-perf", "--timeout", "1500",
                                        "--json"))
    assert grouped["records"] == 3
