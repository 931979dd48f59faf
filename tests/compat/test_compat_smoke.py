"""One smoke test per real client against the embedded broker, each an oracle of the wire
format: what it writes we store, and what we send it can read."""

from __future__ import annotations

import asyncio
import shutil
import subprocess

import pytest

from kafkalite.records.batch_header import BatchHeader, iter_batch_headers

pytestmark = pytest.mark.compat

MESSAGES = [f"message-{i}".encode() for i in range(20)]


def _stored_batches(cluster, topic: str) -> list[BatchHeader]:
    log = cluster.brokers[0].replica_manager.partitions[(topic, 0)].log
    region = log.read(log.log_start_offset, 1 << 30)
    return list(iter_batch_headers(region.read_bytes())) if region is not None else []


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_metadata_and_round_trip(cluster):
    servers = cluster.bootstrap_servers
    cluster.create_topic("kcat-topic", 2)
    listing = subprocess.run(["kcat", "-b", servers, "-L", "-J"], capture_output=True,
                             text=True, timeout=60, check=True)
    assert '"kcat-topic"' in listing.stdout
    payload = "\n".join(m.decode() for m in MESSAGES) + "\n"
    subprocess.run(["kcat", "-b", servers, "-P", "-t", "kcat-topic", "-p", "1",
                    "-z", "lz4"], input=payload, text=True, timeout=60, check=True)
    consumed = subprocess.run(["kcat", "-b", servers, "-C", "-t", "kcat-topic", "-p", "1",
                               "-o", "beginning", "-e", "-q"], capture_output=True,
                              text=True, timeout=60, check=True)
    assert consumed.stdout.split() == [m.decode() for m in MESSAGES]


def test_confluent_kafka_produce_and_consume_by_assignment(cluster):
    confluent_kafka = pytest.importorskip("confluent_kafka")
    servers = cluster.bootstrap_servers
    producer = confluent_kafka.Producer({"bootstrap.servers": servers,
                                         "enable.idempotence": True,
                                         "compression.type": "zstd"})
    for i, value in enumerate(MESSAGES):
        producer.produce("ck-topic", value=value, key=str(i).encode(), partition=0)
    assert producer.flush(30) == 0
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "unused",
                                         "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition("ck-topic", 0, 0)])
    received = []
    try:
        while len(received) < len(MESSAGES):
            message = consumer.poll(10)
            assert message is not None, f"timed out after {len(received)} messages"
            assert message.error() is None, message.error()
            received.append((message.offset(), message.value()))
    finally:
        consumer.close()
    assert received == list(enumerate(MESSAGES))


def test_kafka_python_idempotent_producer_and_consumer(cluster):
    kafka = pytest.importorskip("kafka")
    servers = cluster.bootstrap_servers
    producer = kafka.KafkaProducer(bootstrap_servers=servers, compression_type="gzip")
    futures = [producer.send("kp-topic", value=value, partition=0) for value in MESSAGES]
    offsets = [future.get(timeout=30).offset for future in futures]
    producer.close()
    assert offsets == list(range(len(MESSAGES)))
    assert all(header.producer_id >= 0 for header in _stored_batches(cluster, "kp-topic"))
    consumer = kafka.KafkaConsumer(bootstrap_servers=servers, enable_auto_commit=False,
                                   auto_offset_reset="earliest", consumer_timeout_ms=10000)
    partition = kafka.TopicPartition("kp-topic", 0)
    consumer.assign([partition])
    consumer.seek_to_beginning(partition)
    received = []
    for message in consumer:
        received.append(message.value)
        if len(received) == len(MESSAGES):
            break
    consumer.close()
    assert received == MESSAGES


def test_aiokafka_producer_and_consumer(cluster):
    aiokafka = pytest.importorskip("aiokafka")
    servers = cluster.bootstrap_servers
    cluster.create_topic("aio-topic", 1)

    async def round_trip() -> list[bytes]:
        producer = aiokafka.AIOKafkaProducer(bootstrap_servers=servers,
                                             compression_type="snappy")
        await producer.start()
        try:
            for value in MESSAGES:
                await producer.send_and_wait("aio-topic", value, partition=0)
        finally:
            await producer.stop()
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=servers,
                                             enable_auto_commit=False,
                                             auto_offset_reset="earliest")
        await consumer.start()
        received: list[bytes] = []
        try:
            consumer.assign([aiokafka.TopicPartition("aio-topic", 0)])
            while len(received) < len(MESSAGES):
                batches = await consumer.getmany(timeout_ms=10000)
                assert batches, f"timed out after {len(received)} messages"
                for messages in batches.values():
                    received.extend(m.value for m in messages)
        finally:
            await consumer.stop()
        return received

    assert asyncio.run(asyncio.wait_for(round_trip(), 60)) == MESSAGES
