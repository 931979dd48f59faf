"""``kafkalite topics describe`` on a replicating cluster that has lost a broker: leader,
replicas, ISR, offline replicas, the under-replicated mark and ``--under-replicated``."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest
from cli_runner import Cli

from kafkalite_server import EmbeddedCluster


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=3,
                         config={"controlled.shutdown.retry.backoff.ms": "100"}) as cluster:
        yield cluster


def described(cli: Cli, *args: str) -> list[dict]:
    return json.loads(cli.ok("topics", "describe", *args, "--json"))


def until_isr_shrinks(cli: Cli, topic: str, size: int) -> list[dict]:
    """The controller drops a stopped broker from the ISR asynchronously."""
    deadline = time.monotonic() + 30
    while True:
        partitions = described(cli, topic)[0]["partitions"]
        if all(len(p["isr"]) == size for p in partitions) or time.monotonic() > deadline:
            return partitions
        time.sleep(0.2)


def test_describe_marks_under_replicated_partitions(cluster: EmbeddedCluster) -> None:
    cli = Cli(cluster.bootstrap_servers)
    cli.ok("topics", "create", "replicated", "--partitions", "3", "--replication-factor", "3")
    cli.ok("topics", "create", "single", "--partitions", "3", "--replication-factor", "1")
    healthy = until_isr_shrinks(cli, "replicated", 3)
    assert all(not p["under_replicated"] and p["offline_replicas"] == [] for p in healthy)
    assert cli.ok("topics", "describe", "--under-replicated") == ""
    assert "UnderReplicated" not in cli.ok("topics", "describe", "replicated")

    stopped = healthy[0]["leader"]
    cluster.stop_broker(stopped)
    cli = Cli(cluster.bootstrap_servers)
    survivors = sorted({0, 1, 2} - {stopped})

    partitions = until_isr_shrinks(cli, "replicated", 2)
    for p in partitions:
        assert sorted(p["replicas"]) == [0, 1, 2]
        assert p["isr"] == [r for r in p["replicas"] if r != stopped]
        assert p["leader"] in survivors
        assert p["offline_replicas"] == [stopped]
        assert p["under_replicated"] is True

    text = cli.ok("topics", "describe", "replicated")
    assert "Topic: replicated\tPartitionCount: 3\tReplicationFactor: 3" in text
    p0 = partitions[0]
    assert (f"\tTopic: replicated\tPartition: 0\tLeader: {p0['leader']}\t"
            f"Replicas: {','.join(map(str, p0['replicas']))}\t"
            f"Isr: {','.join(map(str, p0['isr']))}\tOffline: {stopped}\t"
            "UnderReplicated: true") in text.splitlines()

    # The filter keeps only under-replicated partitions: every partition of "replicated",
    # none of "single" (its ISR is its one replica, or it is offline with it).
    lines = cli.ok("topics", "describe", "--under-replicated").splitlines()
    assert len(lines) == 3 and all("Topic: replicated\t" in line for line in lines)
    assert not any(line.startswith("Topic:") for line in lines)
    filtered = described(cli, "--under-replicated")
    assert [t["name"] for t in filtered] == ["replicated"]
    assert described(cli, "single", "--under-replicated") == []
