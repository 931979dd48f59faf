"""``kafkalite partitions reassign --execute --throttle``: the throttle Kafka's tool sets
(the rates on the brokers involved, the moving replicas on the topic), and ``--verify``
removing it once every move is done; ``kafkalite cluster rebalance`` planning, running and
waiting for the moves in one command. The commands run in this process, through the CLI's
``main``, against a two-broker EmbeddedCluster."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.admin import AdminClient, ConfigResource, ConfigResourceType, NewTopic
from kafkalite.cli.main import main
from kafkalite_server import EmbeddedCluster

RATE = 1048576
THROTTLE_KEYS = {"leader.replication.throttled.rate", "follower.replication.throttled.rate",
                 "leader.replication.throttled.replicas",
                 "follower.replication.throttled.replicas"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=2) as running:
        yield running


def modified(admin: AdminClient) -> dict[str, dict[str, str | None]]:
    resources = [ConfigResource(ConfigResourceType.BROKER, "0"),
                 ConfigResource(ConfigResourceType.BROKER, "1"),
                 ConfigResource(ConfigResourceType.TOPIC, "moved")]
    found = admin.describe_configs(resources, config_filter="modified")
    return {r.name: {k: v for k, v in found[r].items() if k in THROTTLE_KEYS}
            for r in resources}


def test_execute_sets_kafkas_throttle_and_verify_clears_it_when_done(
        cluster: EmbeddedCluster, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = cluster.bootstrap_servers
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "moved", "partition": 0, "replicas": [0, 1]}]}))
    with AdminClient(bootstrap) as admin:
        admin.create_topics([NewTopic("moved", replica_assignments={0: [0]})],
                            wait_for_metadata=True)
        assert main(["partitions", "reassign", "-b", bootstrap, "--execute",
                     "--reassignment-json-file", str(plan), "--throttle", str(RATE)]) == 0
        assert f"The inter-broker throttle limit was set to {RATE} B/s" in \
            capsys.readouterr().out
        rates = {"leader.replication.throttled.rate": str(RATE),
                 "follower.replication.throttled.rate": str(RATE)}
        assert modified(admin) == {"0": rates, "1": rates, "moved": {
            "leader.replication.throttled.replicas": "0:0",
            "follower.replication.throttled.replicas": "0:1"}}

        deadline = time.monotonic() + 30
        verified = 1
        while verified != 0 and time.monotonic() < deadline:
            verified = main(["partitions", "reassign", "-b", bootstrap, "--verify",
                             "--reassignment-json-file", str(plan)])
            if verified != 0:
                assert modified(admin)["0"] == rates  # kept while a move is under way
                time.sleep(0.2)
        assert verified == 0
        out = capsys.readouterr().out
        assert "Reassignment of partition moved-0 is completed." in out
        assert "Clearing broker-level throttles on brokers 0,1" in out
        assert "Clearing topic-level throttles on topic moved" in out
        assert modified(admin) == {"0": {}, "1": {}, "moved": {}}


def test_cluster_rebalance_moves_replicas_onto_the_emptier_broker_under_a_throttle(
        cluster: EmbeddedCluster, capsys: pytest.CaptureFixture[str]) -> None:
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap) as admin:
        admin.create_topics([NewTopic("lopsided", replica_assignments={
            index: [0] for index in range(4)})], wait_for_metadata=True)
        capsys.readouterr()
        assert main(["cluster", "rebalance", "-b", bootstrap, "--topic", "lopsided",
                     "--throttle", str(RATE), "--timeout", "60"]) == 0
        out = capsys.readouterr().out
        assert "Moving 2 of 4 partition(s) to spread their replicas over brokers 0,1." in out
        rollback = json.loads(out.split("current assignment):\n", 1)[1].splitlines()[0])
        assert [p["replicas"] for p in rollback["partitions"]] == [[0], [0]]
        assert "Clearing topic-level throttles on topic lopsided" in out
        assert "Rebalanced: 2 partition(s) moved." in out
        replicas = [p.replicas for p in
                    admin.describe_topics(["lopsided"])["lopsided"].partitions]
        assert sorted(r[0] for r in replicas) == [0, 0, 1, 1]
        assert admin.list_partition_reassignments() == {}
        assert modified(admin)["0"] == {}  # the throttle is gone
        assert main(["cluster", "rebalance", "-b", bootstrap, "--topic", "lopsided"]) == 0
        assert "Nothing to move" in capsys.readouterr().out
