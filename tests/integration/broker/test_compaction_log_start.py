"""Compaction never moves the log start offset (issue steps, with confluent-kafka).

A compacted topic with 16 KiB segments gets 30 keys x 50 versions and then tombstones for
10 keys. Once the cleaner has compacted it (and dropped the tombstones past
``delete.retention.ms``), the low watermark (ListOffsets earliest) is still 0, and a
consumer that starts at offset 0, or at a group's committed offset below the first kept
record, reads the compacted view with ``auto.offset.reset=error``: no OFFSET_OUT_OF_RANGE.
The same holds after a restart on the same data dir.
"""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from polling import until

from kafkalite.records import decode_batches
from kafkalite_server.embedded import EmbeddedCluster
from kafkalite_server.log.log import Log

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_api = pytest.importorskip("confluent_kafka.admin")

TOPIC = "table"
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.bytes": "16384", "segment.ms": "100",
                "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "1000",
                "file.delete.delay.ms": "0"}
SETTINGS = {"log.cleaner.backoff.ms": "50", "offsets.topic.num.partitions": "1",
            "group.initial.rebalance.delay.ms": "0"}
KEYS, VERSIONS, DELETED = 30, 50, 10


def _write_table(servers: str) -> dict[str, tuple[int, str | None]]:
    """Every key's last (offset, value) after the versions and the tombstones."""
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "linger.ms": 5,
                                         "batch.size": 4096})  # under segment.bytes
    last: dict[str, tuple[int, str | None]] = {}

    def delivered(err, msg) -> None:
        assert err is None, err
        value = msg.value()
        last[msg.key().decode()] = (msg.offset(), None if value is None else value.decode())

    for version in range(VERSIONS):
        for key in range(KEYS):
            producer.produce(TOPIC, key=f"k{key}", value=f"v{version}-" + "x" * 60,
                             partition=0, on_delivery=delivered)
            producer.poll(0)
    for key in range(DELETED):
        producer.produce(TOPIC, key=f"k{key}", value=None, partition=0,
                         on_delivery=delivered)
    assert producer.flush(30) == 0
    time.sleep(0.2)  # past segment.ms: the tail rolls a segment, so the table is cleanable
    producer.produce(TOPIC, key="tail", value="t", partition=0, on_delivery=delivered)
    assert producer.flush(30) == 0
    return last


def _read(servers: str, start: int | None, group: str) -> list[tuple[int, str, str | None]]:
    """Records from ``start`` (None: the group's committed offset) to the end, with
    ``auto.offset.reset=error``: an out-of-range position fails the read."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": group,
                                         "enable.auto.commit": False,
                                         "auto.offset.reset": "error",
                                         "enable.partition.eof": True})
    position = confluent_kafka.OFFSET_STORED if start is None else start
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, position)])
    seen = []
    try:
        for _ in range(100_000):
            msg = consumer.poll(10)
            assert msg is not None, "no end of partition within 10 s"
            if msg.error():
                assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF, \
                    msg.error()
                return seen
            value = msg.value()
            seen.append((msg.offset(), msg.key().decode(),
                         None if value is None else value.decode()))
    finally:
        consumer.close()
    raise AssertionError("the partition never ended")


def _commit(servers: str, group: str, offset: int) -> None:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": group})
    try:
        consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 0, offset)],
                        asynchronous=False)
    finally:
        consumer.close()


def _low_watermark(servers: str) -> int:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "marks"})
    try:
        low, _high = consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition(TOPIC, 0), timeout=30)
        return int(low)
    finally:
        consumer.close()


def _check_compacted_view(servers: str, last: dict[str, tuple[int, str | None]]) -> None:
    live = sorted((offset, key, value) for key, (offset, value) in last.items()
                  if value is not None)
    assert _low_watermark(servers) == 0
    assert _read(servers, 0, "from-zero") == live
    _commit(servers, "committed-early", 5)
    assert _read(servers, None, "committed-early") == live  # every live record is past 5


def test_compaction_keeps_the_log_start_and_readers_below_the_first_kept_record(
        tmp_path: Path) -> None:
    with EmbeddedCluster(data_dir=tmp_path, config=SETTINGS) as cluster:
        servers = cluster.bootstrap_servers
        admin = admin_api.AdminClient({"bootstrap.servers": servers})
        admin.create_topics([admin_api.NewTopic(TOPIC, num_partitions=1, replication_factor=1,
                                                config=TOPIC_CONFIG)])[TOPIC].result(30)
        last = _write_table(servers)
        log = cluster.brokers[0].log_manager.get_log(TOPIC, 0)
        first_live = min(offset for offset, value in last.values() if value is not None)
        # compacted up to the tail: the kept records below it are exactly the live ones
        until(lambda: _kept_below(log, last["tail"][0]) == KEYS - DELETED,
              "the cleaner dropping every old version and the expired tombstones", 60)
        assert first_live > 5  # a reader at 0 or at 5 starts below the first kept record
        _check_compacted_view(servers, last)
    with EmbeddedCluster(data_dir=tmp_path, config=SETTINGS) as restarted:
        _check_compacted_view(restarted.bootstrap_servers, last)


def _kept_below(log: Log, end: int) -> int:
    """Records left in the log's inactive segments below ``end``."""
    count = 0
    for segment in log.segments[:-1]:
        data = segment.read_bytes(0, segment.size)
        count += sum(1 for record in decode_batches(data) if record.offset < end)
    return count
