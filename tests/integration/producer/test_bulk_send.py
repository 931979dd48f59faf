"""Producer.send_batch against a real broker, read back by confluent-kafka (librdkafka); and
send() and send_batch() from several threads into the same open batches."""

from __future__ import annotations

import itertools
import threading
import time
from collections.abc import Callable

import pytest

from kafkalite import Producer
from kafkalite.errors import MessageSizeTooLargeError, MessageTooLargeError
from kafkalite.producer import BatchMetadata
from kafkalite_server import EmbeddedCluster

pytestmark = pytest.mark.compat


def read_all(bootstrap: str, topic: str, partitions: int, count: int
             ) -> list[tuple[int, int, bytes | None, bytes | None, list, int]]:
    """(partition, offset, key, value, headers, timestamp) of ``count`` records, by librdkafka."""
    import confluent_kafka

    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "check",
                                         "enable.auto.commit": False, "log_level": 3})
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(partitions)])
    seen = []
    deadline = time.monotonic() + 30
    try:
        while len(seen) < count and time.monotonic() < deadline:
            for message in consumer.consume(num_messages=1000, timeout=0.5):
                assert not message.error(), message.error()
                seen.append((message.partition(), message.offset(), message.key(),
                             message.value(), message.headers() or [],
                             message.timestamp()[1]))
    finally:
        consumer.close()
    assert len(seen) == count
    return sorted(seen)


@pytest.mark.parametrize("compression", [None, "lz4", "gzip", "zstd"])
def test_send_batch_sequences_are_read_back_by_librdkafka(
        cluster_factory: Callable[..., EmbeddedCluster], compression: str | None) -> None:
    bootstrap = cluster_factory(num_partitions="3").bootstrap_servers
    count = 3000
    keys = [None if i % 5 == 0 else b"key-%d" % i for i in range(count)]
    values = [None if i % 7 == 0 else b"value-%d-" % i + bytes(i % 50) for i in range(count)]
    headers = [[("n", b"%d" % i), ("null", None)] if i % 3 == 0 else None
               for i in range(count)]
    timestamps = [1_700_000_000_000 + i for i in range(count)]
    with Producer(bootstrap, compression_type=compression, linger_ms=50,
                  batch_size=4096, max_request_size=20_000) as producer:
        futures = producer.send_batch("bulk", values, keys=keys, headers=headers,
                                      timestamps=timestamps)
        results = [future.get(30) for future in futures]
    assert sum(r.record_count for r in results) == count
    assert len(results) > 3  # several batches over several partitions
    assert {r.partition for r in results} == {0, 1, 2}

    seen = read_all(bootstrap, "bulk", 3, count)
    # Every record arrived once, with its key, value, headers and timestamp; records of
    # one partition kept their input order.
    by_value = {(key, value, ts): (partition, offset, hdrs)
                for partition, offset, key, value, hdrs, ts in seen}
    assert len(by_value) == count
    last_offset: dict[int, int] = {}
    for i in range(count):
        partition, offset, hdrs = by_value[(keys[i], values[i], timestamps[i])]
        assert hdrs == (headers[i] or [])
        assert offset > last_offset.get(partition, -1)
        last_offset[partition] = offset
    # The futures' metadata names where each run of records went.
    for result in results:
        offsets = [o for p, o, *_ in seen if p == result.partition]
        assert result.base_offset in offsets
        assert result.base_offset + result.record_count - 1 in offsets


def test_send_batch_keyed_records_go_where_send_puts_them(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    bootstrap = cluster_factory(num_partitions="4").bootstrap_servers
    keys = [b"user-%d" % (i % 17) for i in range(400)]
    with Producer(bootstrap, linger_ms=20) as producer:
        singles = {key: producer.send("single", b"x", key=key).get(10).partition
                   for key in set(keys)}
        for future in producer.send_batch("keyed", [b"y"] * 400, keys=keys):
            future.get(10)
    for partition, _offset, key, _value, _headers, _ts in read_all(bootstrap, "keyed", 4, 400):
        assert singles[key] == partition


def test_send_batch_takes_arrow_arrays_and_tables(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    pa = pytest.importorskip("pyarrow")
    bootstrap = cluster_factory(num_partitions="2").bootstrap_servers
    table = pa.table({
        "key": pa.array([b"a", None, b"c"], pa.binary()),
        "value": pa.array(["one", "two", None], pa.string()),
        "headers": pa.array([[{"key": "h", "value": b"1"}], [], None],
                            pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
        "timestamp": pa.array([1_700_000_000_000, 1_700_000_000_001, 1_700_000_000_002],
                              pa.timestamp("ms")),
    })
    with Producer(bootstrap, compression_type="lz4") as producer:
        table_results = [f.get(10) for f in producer.send_batch("arrow", table, partition=1)]
        array_results = [f.get(10) for f in producer.send_batch(
            "arrow", pa.array([b"p", b"q"]), keys=pa.array(["k1", "k2"]), partition=0,
            timestamps=1_700_000_000_100)]
    assert table_results == [BatchMetadata("arrow", 1, 0, 3)]
    assert array_results == [BatchMetadata("arrow", 0, 0, 2)]
    assert read_all(bootstrap, "arrow", 2, 5) == [
        (0, 0, b"k1", b"p", [], 1_700_000_000_100),
        (0, 1, b"k2", b"q", [], 1_700_000_000_100),
        (1, 0, b"a", b"one", [("h", b"1")], 1_700_000_000_000),
        (1, 1, None, b"two", [], 1_700_000_000_001),
        (1, 2, b"c", None, [], 1_700_000_000_002),
    ]


def test_send_batch_refuses_bad_input_before_queueing_anything(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    bootstrap = cluster_factory().bootstrap_servers
    with Producer(bootstrap, max_request_size=10_000) as producer:
        with pytest.raises(ValueError, match="2 keys for 3 values"):
            producer.send_batch("bad", [b"a", b"b", b"c"], keys=[b"k", b"k"])
        with pytest.raises(MessageSizeTooLargeError, match="record 1"):
            producer.send_batch("bad", [b"a", bytes(20_000)])
        with pytest.raises(TypeError, match="headers must be"):
            producer.send_batch("bad", [b"a"], headers=[[("h", "text")]])
        assert producer.metrics(raw=True)["records"] == 0


def test_send_batch_fills_batches_past_batch_size_up_to_max_request_size(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    bootstrap = cluster_factory().bootstrap_servers
    count = 5000
    values = [b"%06d" % i + bytes(94) for i in range(count)]  # 100 B each, 500 KB
    with Producer(bootstrap, compression_type="lz4", batch_size=16384,
                  max_request_size=100_000) as producer:
        producer.send("big", b"first").get(10)  # offset 0
        futures = producer.send_batch("big", values, partition=0)
        results = [future.get(30) for future in futures]
    # Batches above batch_size (about 150 records) and within max_request_size.
    assert 5 <= len(results) <= 10
    assert all(150 < r.record_count < 1000 for r in results)
    # One partition: the runs follow each other, the first right after the single record.
    assert results[0].base_offset == 1
    for before, after in itertools.pairwise(results):
        assert after.base_offset == before.base_offset + before.record_count
    assert sum(r.record_count for r in results) == count
    seen = read_all(bootstrap, "big", 1, count + 1)
    assert [(offset, value) for _p, offset, _k, value, _h, _t in seen[1:]] == \
        list(enumerate(values, start=1))


def test_a_batch_the_broker_refuses_as_too_large_fails_only_its_own_future(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    bootstrap = cluster_factory(message_max_bytes="60000").bootstrap_servers
    with Producer(bootstrap, max_request_size=200_000, linger_ms=20) as producer:
        small = producer.send_batch("limited", [bytes(100)] * 300, partition=0)  # ~32 KB
        large = producer.send_batch("limited", [bytes(100)] * 900, partition=0)  # ~97 KB
        assert [f.get(10).record_count for f in small] == [300]
        (refused,) = large
        with pytest.raises(MessageTooLargeError, match=r"max\.message\.bytes"):
            refused.get(10)
        assert producer.send("limited", b"after", partition=0).get(10).offset == 300
    assert len(read_all(bootstrap, "limited", 1, 301)) == 301


def test_threads_sending_at_once_lose_and_repeat_nothing(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    """Unkeyed send() appends to the open batch without the accumulator's lock (see
    Producer._unkeyed_appends) while other threads append through it, send_batch() joins
    the same partitions and the I/O thread drains and builds batches under them: every
    future must name the offset its own record was read back at."""
    bootstrap = cluster_factory(num_partitions="2").bootstrap_servers
    sent: list[tuple[bytes, object]] = []
    sent_in_bulk: list[tuple[list[bytes], list]] = []

    def unkeyed(producer: Producer, name: int) -> None:
        for i in range(4000):
            value = b"u%d-%d" % (name, i)
            sent.append((value, producer.send("mixed", value)))
            if i % 100 == 99:  # the I/O thread drains open batches by linger meanwhile
                time.sleep(0.002)

    def keyed(producer: Producer) -> None:
        for i in range(2000):
            value = b"k%d" % i
            sent.append((value, producer.send("mixed", value, key=b"%d" % (i % 7))))

    def bulk(producer: Producer) -> None:
        for i in range(100):
            values = [b"b%d-%d" % (i, j) for j in range(20)]
            sent_in_bulk.append((values, producer.send_batch("mixed", values)))

    with Producer(bootstrap, compression_type="lz4", linger_ms=1, batch_size=2048) as producer:
        threads = [threading.Thread(target=unkeyed, args=(producer, n)) for n in range(3)]
        threads += [threading.Thread(target=keyed, args=(producer,)),
                    threading.Thread(target=bulk, args=(producer,))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join(60)
        expected: dict[tuple[int, int], bytes] = {}
        for value, future in sent:
            metadata = future.get(30)  # type: ignore[attr-defined]
            expected[(metadata.partition, metadata.offset)] = value
        for values, futures in sent_in_bulk:  # each future: the next run of its values
            remaining = iter(values)
            for future in futures:
                run = future.get(30)
                for offset in range(run.base_offset, run.base_offset + run.record_count):
                    expected[(run.partition, offset)] = next(remaining)
    count = 3 * 4000 + 2000 + 100 * 20
    assert len(expected) == count
    records = read_all(bootstrap, "mixed", 2, count)
    assert {(p, o): v for p, o, _, v, _, _ in records} == expected
