"""Manual assignment on an EmbeddedCluster: positions, seek, pause/resume, offset lookups."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from kafkalite import Producer
from kafkalite.consumer import Consumer, IllegalStateError, NoOffsetForPartitionError
from kafkalite.errors import OffsetOutOfRangeError
from kafkalite.serde import StringDeserializer
from kafkalite.structs import ConsumerRecord, TopicPartition
from tests.integration.consumer.helpers import poll_until, produce

TP0, TP1 = TopicPartition("seek", 0), TopicPartition("seek", 1)


def test_seek_pause_and_resume(bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    produce(bootstrap, "seek", 2, 5)
    consumer = consumers(value_deserializer=StringDeserializer())
    consumer.assign([TP0, TP1])
    read: list[ConsumerRecord] = []
    poll_until([consumer], lambda: len(read) >= 10, sink=read)
    assert [r.value for r in read if r.partition == 0] == [f"seek-0-{i}" for i in range(5)]
    assert consumer.position(TP0) == 5

    consumer.seek(TP0, 3)
    again: list[ConsumerRecord] = []
    poll_until([consumer], lambda: len(again) >= 2, sink=again)
    assert [(r.partition, r.offset) for r in again] == [(0, 3), (0, 4)]

    consumer.pause(TP1)
    assert consumer.paused() == {TP1}
    produce(bootstrap, "seek", 2, 1, prefix="new-")
    fresh: list[ConsumerRecord] = []
    poll_until([consumer], lambda: len(fresh) >= 1, sink=fresh)
    assert consumer.poll(timeout_ms=300) == {}
    assert [r.partition for r in fresh] == [0]
    consumer.resume(TP1)
    poll_until([consumer], lambda: len(fresh) >= 2, sink=fresh)
    assert (fresh[1].partition, fresh[1].offset, fresh[1].value) == (1, 5, "new-seek-1-0")

    consumer.seek_to_beginning(TP1)
    assert consumer.position(TP1) == 0
    consumer.seek_to_end()
    assert consumer.position(TP0) == consumer.position(TP1) == 6


def test_offsets_for_times_and_bounds(bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    tp = TopicPartition("times", 0)
    with Producer(bootstrap, linger_ms=0) as producer:
        for i in range(5):
            producer.send("times", b"x", partition=0, timestamp_ms=1_000_000 + 1000 * i)
        producer.flush(30)
    consumer = consumers()
    found = consumer.offsets_for_times({tp: 1_002_500, TopicPartition("times", 1): 0})
    assert found[tp] == (3, 1_003_000)
    assert found[TopicPartition("times", 1)] is None
    assert consumer.offsets_for_times({tp: 2_000_000})[tp] is None
    assert consumer.beginning_offsets([tp]) == {tp: 0}
    assert consumer.end_offsets([tp]) == {tp: 5}
    assert consumer.partitions_for_topic("times") == set(range(6))
    assert "times" in consumer.topics()


def test_records_keep_keys_headers_and_timestamps(bootstrap: str,
                                                  consumers: Callable[..., Consumer]) -> None:
    with Producer(bootstrap, linger_ms=0, compression_type="lz4") as producer:
        producer.send("meta", b"v", key=b"k", partition=2, timestamp_ms=1234,
                      headers=[("h", b"1"), ("n", None)])
        producer.flush(30)
    consumer = consumers(key_deserializer=bytes.decode)
    consumer.assign([TopicPartition("meta", 2)])
    read: list[ConsumerRecord] = []
    poll_until([consumer], lambda: bool(read), sink=read)
    record = read[0]
    assert (record.topic, record.partition, record.offset) == ("meta", 2, 0)
    assert (record.key, record.value, record.timestamp, record.timestamp_type) == \
        ("k", b"v", 1234, 0)
    assert record.headers == (("h", b"1"), ("n", None))
    assert (record.serialized_key_size, record.serialized_value_size) == (1, 1)


def test_reset_strategies(bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    produce(bootstrap, "reset", 1, 3)
    tp = TopicPartition("reset", 0)
    latest = consumers(auto_offset_reset="latest")
    latest.assign([tp])
    assert latest.position(tp) == 3
    strict = consumers(auto_offset_reset="none", group_id="strict")
    strict.assign([tp])
    with pytest.raises(NoOffsetForPartitionError, match="reset"):
        strict.poll()
    strict.seek(tp, 99)
    with pytest.raises(OffsetOutOfRangeError, match="offset 99"):
        poll_until([strict], lambda: False, timeout=10)
    earliest = consumers(auto_offset_reset="earliest")
    earliest.assign([tp])
    earliest.seek(tp, 99)
    read: list[ConsumerRecord] = []
    poll_until([earliest], lambda: len(read) >= 3, sink=read)
    assert [r.offset for r in read] == [0, 1, 2]


def test_misuse_is_a_clear_error(bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    consumer = consumers()
    with pytest.raises(IllegalStateError, match="subscribe"):
        consumer.poll()
    with pytest.raises(Exception, match="group_id"):
        consumer.commit()
    consumer.assign([TopicPartition("t", 0)])
    with pytest.raises(IllegalStateError, match="not assigned"):
        consumer.seek(TopicPartition("t", 1), 0)
    consumer.close()
    with pytest.raises(IllegalStateError, match="closed"):
        consumer.poll()


def test_first_poll_after_seek_waits_for_the_leader_not_its_whole_timeout(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    """A seek makes the position known, so the first poll needs only the partition's
    leader: its Metadata answer must wake the poll, which then fetches within the same
    call (a poll that slept its whole timeout returned nothing)."""
    produce(bootstrap, "leader-wait", 1, 3)
    consumer = consumers()
    tp = TopicPartition("leader-wait", 0)
    consumer.assign([tp])
    consumer.seek(tp, 1)
    records = consumer.poll(timeout_ms=990)
    assert [r.offset for r in records.get(tp, [])] == [1, 2]
