"""Legacy message formats: magic 0/1 produce is up-converted to v2, old fetches down-convert.

kafka-python pinned to old protocol versions (api_version (0, 9): Produce/Fetch v0, magic
0; (0, 10): Produce/Fetch v2, magic 1) plays the old client; confluent-kafka (librdkafka)
the current one.
"""

from __future__ import annotations

import time

import pytest
from confluent_kafka import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.record.legacy_records import LegacyRecordBatchBuilder

from kafkalite.records import RecordBatchBuilder, iter_batches
from kafkalite_server.log.down_conversion import down_convert, fetch_magic

CREATE_TIME = 1_700_000_000_123


def create_topic(bootstrap: str, name: str, **config: str) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    future = admin.create_topics([NewTopic(name, 1, 1, config=config)])[name]
    future.result(10)


def produce_legacy(bootstrap: str, topic: str, api_version: tuple[int, int],
                   compression: str | None = None, count: int = 5) -> None:
    producer = KafkaProducer(bootstrap_servers=bootstrap, api_version=api_version,
                             compression_type=compression, linger_ms=50)
    for i in range(count):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i, timestamp_ms=CREATE_TIME + i)
    producer.flush(10)
    producer.close()


def consume_modern(bootstrap: str, topic: str, count: int) -> list:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    messages = []
    deadline = time.monotonic() + 30
    while len(messages) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None:
            assert message.error() is None, message.error()
            messages.append(message)
    consumer.close()
    return messages


def consume_old(bootstrap: str, topic: str, api_version: tuple[int, int], count: int) -> list:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, api_version=api_version,
                             enable_auto_commit=False)
    partition = TopicPartition(topic, 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    records = []
    deadline = time.monotonic() + 30
    while len(records) < count and time.monotonic() < deadline:
        for batch in consumer.poll(timeout_ms=500).values():
            records.extend(batch)
    consumer.close()
    return records


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_magic_0_reads_back_without_timestamp(cluster, compression) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "m0")
    produce_legacy(bootstrap, "m0", (0, 9), compression)
    messages = consume_modern(bootstrap, "m0", 5)
    assert [(m.offset(), m.key(), m.value()) for m in messages] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(5)]
    assert all(m.timestamp()[1] == -1 for m in messages)


@pytest.mark.parametrize("compression", [None, "gzip"])
def test_magic_1_keeps_create_time(cluster, compression) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "m1")
    produce_legacy(bootstrap, "m1", (0, 10), compression)
    messages = consume_modern(bootstrap, "m1", 5)
    assert [m.value() for m in messages] == [b"v%d" % i for i in range(5)]
    assert [m.timestamp() for m in messages] == [
        (TIMESTAMP_CREATE_TIME, CREATE_TIME + i) for i in range(5)]


def test_legacy_produce_on_log_append_time_topic(cluster) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "lat", **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    produce_legacy(bootstrap, "lat", (0, 9), "gzip")
    messages = consume_modern(bootstrap, "lat", 5)
    assert len(messages) == 5
    for message in messages:
        kind, stamp = message.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and before <= stamp <= before + 60_000


@pytest.mark.parametrize(("api_version", "compression"),
                         [((0, 9), None), ((0, 9), "gzip"), ((0, 10), None), ((0, 10), "lz4")])
def test_old_fetch_reads_v2_data(cluster, api_version, compression) -> None:
    bootstrap = cluster.bootstrap_servers
    create_topic(bootstrap, "v2")
    producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20,
                         "compression.type": compression or "none"})
    for i in range(6):
        producer.produce("v2", key=b"k%d" % i, value=b"v%d" % i, timestamp=CREATE_TIME + i,
                         headers=[("h", b"x")])
    assert producer.flush(10) == 0
    records = consume_old(bootstrap, "v2", api_version, 6)
    assert [(r.offset, r.key, r.value) for r in records] == [
        (i, b"k%d" % i, b"v%d" % i) for i in range(6)]
    # kafka-python reports None for magic 0, which has no timestamp
    expected = [None] * 6 if api_version == (0, 9) else [CREATE_TIME + i for i in range(6)]
    assert [r.timestamp for r in records] == expected


def test_fetch_magic_by_version() -> None:
    assert [fetch_magic(v) for v in range(6)] == [0, 0, 1, 1, None, None]


def test_down_conversion_of_a_mixed_log_keeps_offsets() -> None:
    """A log written before up-conversion holds legacy entries next to v2 batches."""
    legacy = LegacyRecordBatchBuilder(magic=1, compression_type=0, batch_size=1 << 20)
    legacy.append(0, CREATE_TIME, b"a", b"old")
    v2 = RecordBatchBuilder(base_offset=1, compression="gzip")
    v2.append(CREATE_TIME + 1, b"b", b"new1")
    v2.append(CREATE_TIME + 2, b"c", b"new2")
    log = bytes(legacy.build()) + v2.build()
    for magic in (0, 1):
        entries = list(iter_batches(down_convert(log, magic, max_bytes=1 << 20, max_decompressed=1 << 20)))
        assert all(entry.magic <= magic for entry in entries)
        records = [r for entry in entries for r in entry.records(check_crcs=True)]
        assert [(r.offset, r.value) for r in records] == [(0, b"old"), (1, b"new1"),
                                                          (2, b"new2")]
        stamps = [r.timestamp for r in records]
        assert stamps == ([-1, -1, -1] if magic == 0 else
                          [CREATE_TIME, CREATE_TIME + 1, CREATE_TIME + 2])
    assert down_convert(bytes(legacy.build()), 1, max_bytes=1 << 20,
                        max_decompressed=1 << 20) == bytes(legacy.build())


@pytest.mark.parametrize("timestamp_type", ["CreateTime", "LogAppendTime"])
@pytest.mark.parametrize("codec", ["none", "gzip"])
def test_librdkafka_in_0_9_mode(cluster, timestamp_type, codec) -> None:
    """librdkafka told the broker is 0.9 (no ApiVersions) produces magic 0 with Produce v0."""
    bootstrap = cluster.bootstrap_servers
    topic = f"rdk-{timestamp_type}-{codec}".lower()
    create_topic(bootstrap, topic, **{"message.timestamp.type": timestamp_type})
    producer = Producer({"bootstrap.servers": bootstrap, "api.version.request": False,
                         "broker.version.fallback": "0.9.0.0", "enable.idempotence": False,
                         "compression.codec": codec, "batch.num.messages": 4})
    before = int(time.time() * 1000)
    for i in range(10):
        producer.produce(topic, value=b"v%d" % i, timestamp=CREATE_TIME)
    assert producer.flush(10) == 0
    messages = consume_modern(bootstrap, topic, 10)
    assert [m.value() for m in messages] == [b"v%d" % i for i in range(10)]
    for message in messages:
        kind, stamp = message.timestamp()
        if timestamp_type == "CreateTime":
            assert stamp == -1  # magic 0 carried no timestamp
        else:
            assert kind == TIMESTAMP_LOG_APPEND_TIME and before <= stamp <= before + 60_000
