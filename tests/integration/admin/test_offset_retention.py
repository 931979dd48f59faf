"""Offset retention on a running broker: an Empty group's offsets expire as tombstones in
``__consumer_offsets``, the group goes with them, and both stay gone after a restart.

The commit carries an explicit retention (OffsetCommit v2's ``retention_time_ms``), so the
broker expires it within seconds; when an Empty group's clock starts and how the retention
settings combine is the expiry policy's, tested on a fake clock in
tests/unit/group/test_offset_expiry.py."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalite import AdminClient, Consumer, NewTopic
from kafkalite.protocol import ApiKey
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster
from kafkalite_server.coordinator.runtime import read_log_chunks
from kafkalite_server.group import OFFSETS_TOPIC
from kafkalite_server.group import TopicPartition as GroupTopicPartition
from kafkalite_server.group.offsets_records import group_tombstone, offset_tombstone
from tests.conftest import WireClient
from tests.integration.consumer.helpers import poll_until, produce

pytestmark = pytest.mark.slow

GROUP = "fading"
RETENTION_MS = 5000
TP = TopicPartition("kept", 0)


def tombstoned_keys(cluster: EmbeddedCluster) -> set[bytes]:
    broker = cluster.brokers[0]
    partition = broker.group_coordinator.coordinator.partition_for(GROUP)
    log = broker.log_manager.get_log(OFFSETS_TOPIC, partition)
    return {r.key for records in read_log_chunks(log) for r in records if r.value is None}


def test_an_empty_groups_offsets_expire_and_stay_gone_after_a_restart(
    cluster_factory: Callable[..., EmbeddedCluster], tmp_path: Path,
    wire: Callable[[str], WireClient]
) -> None:
    settings = {"offsets.retention.check.interval.ms": "200"}
    cluster = cluster_factory(data_dir=tmp_path, **settings)
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap) as admin:
        admin.create_topics([NewTopic("kept", 1, 1)])
    produce(bootstrap, "kept", 1, 3)
    with Consumer("kept", bootstrap_servers=bootstrap, group_id=GROUP,
                  enable_auto_commit=False) as member:
        poll_until([member], lambda: bool(member.assignment()))
    # The member left and the group is Empty: a commit into it with a retention of a few
    # seconds (generation -1, as a tool's offset reset does).
    client = wire(bootstrap)
    assert client.find_coordinator(GROUP)["error_code"] == 0
    committed = client.call(ApiKey.OFFSET_COMMIT, 2, {
        "group_id": GROUP, "generation_id_or_member_epoch": -1, "member_id": "",
        "retention_time_ms": RETENTION_MS, "topics": [{"name": "kept", "partitions": [
            {"partition_index": 0, "committed_offset": 2, "committed_metadata": ""}]}]})
    assert committed["topics"][0]["partitions"][0]["error_code"] == 0
    with AdminClient(bootstrap) as admin:
        assert {tp: m.offset for tp, m in admin.list_consumer_group_offsets(GROUP).items()} \
            == {TP: 2}
        deadline = time.monotonic() + 60
        while admin.list_consumer_group_offsets(GROUP):
            assert time.monotonic() < deadline, "the offset never expired"
            time.sleep(1)
        assert admin.describe_groups([GROUP])[GROUP].state == "Dead"
    offset_key, _ = offset_tombstone(GROUP, GroupTopicPartition("kept", 0))
    group_key, _ = group_tombstone(GROUP)
    assert {offset_key, group_key} <= tombstoned_keys(cluster)

    cluster.stop()
    restarted = cluster_factory(data_dir=tmp_path, **settings)
    with AdminClient(restarted.bootstrap_servers) as admin:
        assert admin.list_consumer_group_offsets(GROUP) == {}
        assert admin.describe_groups([GROUP])[GROUP].state == "Dead"
