"""Offset retention and transactions: offsets committed in a transaction that has not ended
are what the group coordinator's retention pass must keep (the rule itself is unit-tested
with a fake clock in tests/unit/group/test_offset_expiry.py). Here the broker's view of
those pending offsets is checked against a real TxnOffsetCommit (confluent-kafka's
send_offsets_to_transaction), and after commit and abort."""

from __future__ import annotations

from collections.abc import Callable

import pytest
from confluent_kafka import Consumer, Producer
from confluent_kafka import TopicPartition as ConfluentPartition
from txn_helpers import TXN_SETTINGS, create_topic

from kafkalite_server.embedded import EmbeddedCluster
from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition
from kafkalite_server.group.offsets_records import offset_commit_record
from kafkalite_server.group.txn_offsets import TransactionalOffsets
from kafkalite_server.group.txn_offsets_replay import TxnOffsetsReplay


@pytest.fixture
def txn_cluster(cluster_factory: Callable[..., EmbeddedCluster]) -> EmbeddedCluster:
    return cluster_factory(**TXN_SETTINGS)


def _pending(cluster: EmbeddedCluster) -> dict[str, set[TopicPartition]]:
    offsets: TransactionalOffsets = cluster.brokers[0].group_coordinator.txn_offsets

    async def read() -> dict[str, set[TopicPartition]]:
        return offsets.pending_by_group()
    return cluster.call(read())


def _committed(bootstrap: str, group: str) -> int:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "log_level": 3})
    try:
        return consumer.committed([ConfluentPartition("in", 0)], timeout=15)[0].offset
    finally:
        consumer.close()


def test_offsets_of_an_open_transaction_are_pending_until_its_marker(
        txn_cluster: EmbeddedCluster) -> None:
    bootstrap = txn_cluster.bootstrap_servers
    create_topic(bootstrap, "in")
    group = Consumer({"bootstrap.servers": bootstrap, "group.id": "keeper",
                      "enable.auto.commit": False, "log_level": 3})
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-keeper",
                         "log_level": 3})
    producer.init_transactions(15)
    try:
        for offset, commit in ((5, False), (7, True)):
            producer.begin_transaction()
            producer.send_offsets_to_transaction([ConfluentPartition("in", 0, offset)],
                                                 group.consumer_group_metadata(), 15)
            assert _pending(txn_cluster) == {"keeper": {TopicPartition("in", 0)}}
            if commit:
                producer.commit_transaction(15)
            else:
                producer.abort_transaction(15)
            assert _pending(txn_cluster) == {}
            assert _committed(bootstrap, "keeper") == (7 if commit else -1001)
    finally:
        group.close()


def test_offsets_left_open_in_the_log_are_pending_after_loading() -> None:
    """Loading an offsets partition: entries of a transaction without its marker yet."""
    replay = TxnOffsetsReplay()
    replay.open = {42: [offset_commit_record("g", TopicPartition("t", 3),
                                             OffsetAndMetadata(9, -1, "", 0))]}
    offsets = TransactionalOffsets(None, None, lambda: 0)  # type: ignore[arg-type]
    offsets.loaded(1, replay)
    assert offsets.pending_by_group() == {"g": {TopicPartition("t", 3)}}
    offsets.complete(1, 42, commit=False)
    assert offsets.pending_by_group() == {}


def test_pending_offsets_of_a_deleted_topic_are_forgotten() -> None:
    """A deleted topic's offsets must not come back when their transaction commits."""
    replay = TxnOffsetsReplay()
    replay.open = {42: [offset_commit_record("g", tp, OffsetAndMetadata(9, -1, "", 0))
                        for tp in (TopicPartition("gone", 3), TopicPartition("kept", 0))]}
    offsets = TransactionalOffsets(None, None, lambda: 0)  # type: ignore[arg-type]
    offsets.loaded(1, replay)
    offsets.forget_deleted_topics({"gone"}.__contains__, partition=2)
    assert offsets.pending_by_group() == {"g": {TopicPartition("gone", 3),
                                                 TopicPartition("kept", 0)}}
    offsets.forget_deleted_topics({"gone"}.__contains__)
    assert offsets.pending_by_group() == {"g": {TopicPartition("kept", 0)}}
