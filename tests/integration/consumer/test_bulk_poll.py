"""Consumer.poll_arrow against a real broker, reading what confluent-kafka wrote."""

from __future__ import annotations

import time
from collections.abc import Callable

import pytest

from kafkalite import Consumer, TopicPartition
from kafkalite_server import EmbeddedCluster

pytestmark = pytest.mark.compat
pa = pytest.importorskip("pyarrow")


def write(bootstrap: str, topic: str, records: list[tuple], compression: str) -> None:
    """(partition, key, value, headers, timestamp) records, by librdkafka."""
    import confluent_kafka

    producer = confluent_kafka.Producer({"bootstrap.servers": bootstrap, "log_level": 3,
                                         "compression.type": compression, "linger.ms": 20})
    for partition, key, value, headers, timestamp in records:
        producer.produce(topic, value, key, partition=partition, headers=headers,
                         timestamp=timestamp)
    assert producer.flush(30) == 0


def poll_all(consumer: Consumer, count: int) -> list:
    batches = []
    deadline = time.monotonic() + 30
    while sum(b.num_rows for b in batches) < count and time.monotonic() < deadline:
        batches.append(consumer.poll_arrow(timeout_ms=500, max_records=700))
    return batches


@pytest.mark.parametrize("compression", ["none", "lz4", "snappy", "zstd"])
def test_poll_arrow_reads_what_librdkafka_wrote(
        cluster_factory: Callable[..., EmbeddedCluster], compression: str) -> None:
    bootstrap = cluster_factory(num_partitions="3").bootstrap_servers
    count = 2400
    records = [(i % 3, None if i % 4 == 0 else b"k%d" % i, None if i % 9 == 0 else b"v%d" % i,
                [("a", b"%d" % i), ("b", None)] if i % 5 == 0 else None,
                1_700_000_000_000 + i) for i in range(count)]
    write(bootstrap, "arrowed", records, compression)

    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition("arrowed", p) for p in range(3)])
        batches = poll_all(consumer, count)
        table = pa.Table.from_batches(batches)
        assert table.num_rows == count
        assert table.schema.names == ["key", "value", "topic", "partition", "offset",
                                      "timestamp", "headers"]
        assert all(b.num_rows <= 700 for b in batches)
        rows = table.to_pylist()
        # Positions moved past everything: a later poll has nothing.
        assert consumer.poll_arrow(timeout_ms=200).num_rows == 0
        assert {consumer.position(TopicPartition("arrowed", p)) for p in range(3)} == {800}

    expected_by_partition: dict[int, list] = {}
    for partition, key, value, headers, timestamp in records:
        expected_by_partition.setdefault(partition, []).append((key, value, headers, timestamp))
    for row in rows:
        key, value, headers, timestamp = expected_by_partition[row["partition"]][row["offset"]]
        assert row["topic"] == "arrowed"
        assert (row["key"], row["value"]) == (key, value)
        assert [(h["key"], h["value"]) for h in row["headers"]] == (headers or [])
        assert int(row["timestamp"].timestamp() * 1000) == timestamp


def test_poll_arrow_and_send_batch_round_trip(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    """A RecordBatch from poll_arrow is valid input to send_batch: a topic copy."""
    from kafkalite import Producer

    bootstrap = cluster_factory().bootstrap_servers
    write(bootstrap, "source", [(0, b"k", b"v%d" % i, [("h", b"x")], 1_700_000_000_000 + i)
                                for i in range(50)], "lz4")
    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer, \
            Producer(bootstrap) as producer:
        consumer.assign([TopicPartition("source", 0)])
        for batch in poll_all(consumer, 50):
            if batch.num_rows:
                for future in producer.send_batch("copy", batch, partition=0):
                    future.get(10)
        consumer.assign([TopicPartition("copy", 0)])
        copied = pa.Table.from_batches(poll_all(consumer, 50)).to_pylist()
    assert [(r["key"], r["value"], r["headers"]) for r in copied] == [
        (b"k", b"v%d" % i, [{"key": "h", "value": b"x"}]) for i in range(50)]
    assert int(copied[7]["timestamp"].timestamp() * 1000) == 1_700_000_000_007


@pytest.mark.parametrize("compression", ["none", "lz4"])
def test_poll_arrow_matches_poll_across_batches_seeks_and_small_polls(
        cluster_factory: Callable[..., EmbeddedCluster], compression: str) -> None:
    """Records without headers (what the compiled codec decodes straight into Arrow
    buffers): poll_arrow gives what poll gives, from a seek into the middle of a batch,
    with polls that end inside batches, nulls and two-byte lengths included."""
    bootstrap = cluster_factory(num_partitions="2").bootstrap_servers
    count = 3000
    records = [(i % 2, None if i % 7 == 0 else b"k%d" % i,
                None if i % 11 == 0 else b"v" * (i % 200), None, 1_700_000_000_000 + i)
               for i in range(count)]
    write(bootstrap, "plain", records, compression)
    partitions = [TopicPartition("plain", p) for p in range(2)]

    def read(arrow: bool) -> list[tuple]:
        with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
            consumer.assign(partitions)
            consumer.seek(partitions[1], 333)
            rows: list[tuple] = []
            deadline = time.monotonic() + 30
            while len(rows) < count - 333 and time.monotonic() < deadline:
                if arrow:
                    batch = consumer.poll_arrow(timeout_ms=500, max_records=97)
                    assert batch.num_rows <= 97
                    rows += [(r["partition"], r["offset"], r["key"], r["value"],
                              int(r["timestamp"].timestamp() * 1000), r["headers"])
                             for r in batch.to_pylist()]
                else:
                    for part in consumer.poll(timeout_ms=500, max_records=97).values():
                        rows += [(r.partition, r.offset, r.key, r.value, r.timestamp,
                                  list(r.headers)) for r in part]
            assert [consumer.position(tp) for tp in partitions] == [count // 2] * 2
            return sorted(rows)

    polled = read(arrow=False)
    assert len(polled) == count - 333
    assert polled[1500] == (1, 333, b"k%d" % 667, b"v" * 67, 1_700_000_000_667, [])
    assert read(arrow=True) == polled


def test_poll_arrow_without_pyarrow_names_the_extra(
        cluster_factory: Callable[..., EmbeddedCluster],
        monkeypatch: pytest.MonkeyPatch) -> None:
    import sys

    bootstrap = cluster_factory().bootstrap_servers
    with Consumer(bootstrap_servers=bootstrap) as consumer:
        consumer.assign([TopicPartition("t", 0)])
        monkeypatch.setitem(sys.modules, "pyarrow", None)
        with pytest.raises(ImportError, match=r"kafkalite\[arrow\]"):
            consumer.poll_arrow()
