"""Offset retention on a running broker: an Empty group's offsets go after
``offsets.retention.minutes`` (the smallest, 1) as tombstones in ``__consumer_offsets``, and
stay gone after a restart."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalite import AdminClient, Consumer, NewTopic
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster
from kafkalite_server.coordinator.runtime import read_log_chunks
from kafkalite_server.group import OFFSETS_TOPIC
from kafkalite_server.group import TopicPartition as GroupTopicPartition
from kafkalite_server.group.offsets_records import group_tombstone, offset_tombstone
from tests.integration.consumer.helpers import poll_until, produce

pytestmark = pytest.mark.slow

GROUP = "fading"
TP = TopicPartition("kept", 0)


def tombstoned_keys(cluster: EmbeddedCluster) -> set[bytes]:
    broker = cluster.brokers[0]
    partition = broker.group_coordinator.coordinator.partition_for(GROUP)
    log = broker.log_manager.get_log(OFFSETS_TOPIC, partition)
    return {r.key for records in read_log_chunks(log) for r in records if r.value is None}


def test_an_empty_groups_offsets_expire_and_stay_gone_after_a_restart(
    cluster_factory: Callable[..., EmbeddedCluster], tmp_path: Path
) -> None:
    settings = {"offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "200"}
    cluster = cluster_factory(data_dir=tmp_path, **settings)
    bootstrap = cluster.bootstrap_servers
    with AdminClient(bootstrap) as admin:
        admin.create_topics([NewTopic("kept", 1, 1)])
    produce(bootstrap, "kept", 1, 3)
    with Consumer("kept", bootstrap_servers=bootstrap, group_id=GROUP,
                  enable_auto_commit=False) as member:
        poll_until([member], lambda: bool(member.assignment()))
        member.commit({TP: 2})
    # The member left: the minute starts now. Well inside it the offset is still there.
    with AdminClient(bootstrap) as admin:
        assert {tp: m.offset for tp, m in admin.list_consumer_group_offsets(GROUP).items()} \
            == {TP: 2}
        deadline = time.monotonic() + 120
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
