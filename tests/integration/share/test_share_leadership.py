"""A share partition's leader stays its leader through an ISR change (which raises the
leader epoch): an acknowledgement whose write is still on its way when the change lands
must not be lost, and its records must not go to another member meanwhile. (The leader
once reloaded the share partition from its durable state at every LeaderAndIsr, which
handed out again records whose acceptance was then confirmed.)"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite import Producer, ShareConsumer
from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster
from kafkalite_server.share.records import StateKey
from kafkalite_server.share.state import PartitionState
from tests.conftest import WireClient
from tests.integration.share.helpers import at_coordinator, set_group_configs
from tests.polling import until

TOPIC, GROUP = "isr-change", "isr-change"


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=3, config={
            "offsets.topic.num.partitions": "1",
            "share.coordinator.state.topic.num.partitions": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.share.heartbeat.interval.ms": "500"}) as cluster:
        yield cluster


class GatedWrites:
    """Holds the leader's share-state writes until released (a slow share coordinator)."""

    def __init__(self, cluster: EmbeddedCluster, persister: Any) -> None:
        self._cluster = cluster
        self._persister = persister
        self._write = persister.write
        self.held = threading.Event()
        self._gate: asyncio.Event | None = None

        async def make_gate() -> asyncio.Event:
            return asyncio.Event()
        self._gate = cluster.call(make_gate())
        persister.write = self._gated

    async def _gated(self, key: StateKey, state: PartitionState) -> int:
        self.held.set()
        assert self._gate is not None
        await self._gate.wait()
        return int(await self._write(key, state))

    def release(self) -> None:
        async def open_gate() -> None:
            assert self._gate is not None
            self._gate.set()
        self._cluster.call(open_gate())
        self._persister.write = self._write


def test_an_isr_change_during_a_write_hands_nothing_out_again(cluster: EmbeddedCluster) -> None:
    cluster.create_topic(TOPIC, 1, 3)
    until(lambda: len(cluster.partition_state(TOPIC, 0).isr) == 3, "a leader and its ISR")
    state = cluster.partition_state(TOPIC, 0)
    leader = cluster.broker(state.leader)
    set_group_configs(cluster.bootstrap_servers, GROUP, share_auto_offset_reset="earliest")
    with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all") as producer:
        for i in range(5):
            producer.send(TOPIC, f"r{i}".encode())
        producer.flush(30)
    first = ShareConsumer(TOPIC, bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP,
                          share_acknowledgement_mode="explicit")
    second = ShareConsumer(TOPIC, bootstrap_servers=cluster.bootstrap_servers, group_id=GROUP)
    try:
        records: list[Any] = []
        until(lambda: records.extend(first.poll(500)) or len(records) == 5, "five records")
        gate = GatedWrites(cluster, leader.share.persister)
        for record in records:
            first.acknowledge(record)
        outcome: dict[str, Any] = {}
        committing = threading.Thread(target=lambda: outcome.update(first.commit_sync(60_000)))
        committing.start()
        assert gate.held.wait(30), "the acceptance reached the share partition's leader"
        epoch = cluster.partition_state(TOPIC, 0).leader_epoch
        follower = next(b for b in state.replicas if b != leader.node_id)
        cluster.kill_broker(follower)  # the ISR shrinks: a LeaderAndIsr with a new epoch
        until(lambda: cluster.partition_state(TOPIC, 0).leader_epoch > epoch
              and len(cluster.partition_state(TOPIC, 0).isr) == 2, "the ISR shrunk")
        handed = [r.offset for _ in range(10) for r in second.poll(300)]
        gate.release()
        committing.join(60)
        assert handed == []  # the accepted records are not handed out again
        assert list(outcome.values()) == [None]
    finally:
        first.close()
        second.close()


def test_group_configs_are_one_groups_wherever_they_are_asked(
        cluster: EmbeddedCluster) -> None:
    """AlterConfigs and DescribeConfigs of a GROUP resource reach the group's coordinator
    from any broker."""
    group = "configured-anywhere"
    coordinator = at_coordinator(cluster.bootstrap_servers, group)
    coordinator_port = coordinator.sock.getpeername()[1]
    coordinator.close()
    others = [b for b in cluster.brokers if b.port != coordinator_port]
    resource = {"resource_type": 32, "resource_name": group}
    via = WireClient(f"127.0.0.1:{others[0].port}")
    try:
        answer = via.call(ApiKey.ALTER_CONFIGS, 0, {"validate_only": False, "resources": [
            {**resource, "configs": [{"name": "share.auto.offset.reset", "value": "earliest"}]}]})
    finally:
        via.close()
    assert answer["responses"][0]["error_code"] == 0, answer
    for broker in cluster.brokers:
        client = WireClient(f"127.0.0.1:{broker.port}")
        try:
            described = client.call(ApiKey.DESCRIBE_CONFIGS, 1, {
                "resources": [{**resource, "configuration_keys": ["share.auto.offset.reset"]}],
                "include_synonyms": False})["results"][0]
        finally:
            client.close()
        assert described["error_code"] == 0, described
        [entry] = described["configs"]
        assert (entry["value"], entry["config_source"]) == ("earliest", 8)  # the group's own
