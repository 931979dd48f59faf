"""Produce validation against a running broker: batches real Kafka rejects are rejected.

Each bad batch is crafted byte by byte (with a correct CRC, so only record validation can
catch it) and sent in a real Produce v8 request. The broker must answer INVALID_RECORD,
CORRUPT_MESSAGE or MESSAGE_TOO_LARGE with an error message (and the bad records' indexes
in ``record_errors``), append nothing, and leave the partition readable by every client.
"""

from __future__ import annotations

import random
import struct
import time
import tracemalloc
import zlib
from collections.abc import Callable
from typing import Any

import crc32c
import pytest

from kafkalite.consumer import Consumer
from kafkalite.protocol import ApiKey
from kafkalite.protocol.varint import encode_varint
from kafkalite.records import compress, encode_batch
from kafkalite.records.batch_header import V2_CRC_START, V2_HEADER
from kafkalite_server import EmbeddedCluster

INVALID_RECORD = 87
CORRUPT_MESSAGE = 2
MESSAGE_TOO_LARGE = 10
MIB = 1 << 20


def record(offset_delta: int, key: bytes | None, value: bytes | None, *,
           key_length: int | None = None) -> bytes:
    """One v2 record; ``key_length`` overrides the encoded key length (to lie about it)."""
    if key_length is None:
        key_length = -1 if key is None else len(key)
    body = b"".join((b"\x00", encode_varint(0), encode_varint(offset_delta),
                     encode_varint(key_length), key or b"",
                     encode_varint(-1 if value is None else len(value)), value or b"",
                     encode_varint(0)))
    return encode_varint(len(body)) + body


def batch(section: bytes, count: int, *, last_delta: int | None = None,
          compression: int = 0) -> bytes:
    """A v2 batch around a records section, header fields as given, with a valid CRC."""
    if last_delta is None:
        last_delta = count - 1
    header = bytearray(V2_HEADER.pack(0, V2_HEADER.size - 12 + len(section), -1, 2, 0,
                                      compression, last_delta, 1000, 1000, -1, -1, -1, count))
    crc = crc32c.crc32c(section, crc32c.crc32c(memoryview(header)[V2_CRC_START:]))
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + section


def produce(wire: Any, topic: str, records: bytes) -> dict[str, Any]:
    response = wire.call(ApiKey.PRODUCE, 8, {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]})
    part: dict[str, Any] = response["responses"][0]["partition_responses"][0]
    return part


def create_topic(wire: Any, topic: str, **configs: str) -> None:
    response = wire.call(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": topic, "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": [{"name": k.replace("_", "."), "value": v}
                                                   for k, v in configs.items()]}],
        "timeout_ms": 5000, "validate_only": False})
    assert response["topics"][0]["error_code"] == 0, response


def good(values: list[bytes]) -> bytes:
    return encode_batch([(b"k", value, 1000 + i, None) for i, value in enumerate(values)])


def gzip_bomb(expanded: int) -> bytes:
    """A v2 batch of one record whose value is ``expanded`` zero bytes, gzip-compressed."""
    packer = zlib.compressobj(9, zlib.DEFLATED, 31)
    body_head = b"\x00" + encode_varint(0) + encode_varint(0) + encode_varint(-1) \
        + encode_varint(expanded)
    head = encode_varint(len(body_head) + expanded + 1) + body_head
    parts = [packer.compress(head)]
    zeros = bytes(MIB)
    for _ in range(expanded // MIB):
        parts.append(packer.compress(zeros))
    parts.append(packer.compress(b"\x00"))  # header count 0
    parts.append(packer.flush())
    return batch(b"".join(parts), 1, compression=1)


POISON = {
    "count 2^31-1 holding one record": (
        batch(record(0, None, b"v"), 2**31 - 1), INVALID_RECORD, "counts 2147483647 records"),
    "last offset delta disagrees with count": (
        batch(record(0, None, b"a") + record(1, None, b"b"), 2, last_delta=5),
        INVALID_RECORD, "last offset delta is 5"),
    "200 random bytes with a valid CRC": (
        batch(random.Random(7).randbytes(200), 1), INVALID_RECORD, "record"),
    "key length 2^31": (
        batch(record(0, b"k", b"v", key_length=2**31), 1), INVALID_RECORD,
        "key length 2147483648"),
    "offset deltas out of order": (
        batch(record(0, None, b"a") + record(7, None, b"b"), 2), INVALID_RECORD,
        "offset delta 7"),
    "bytes after the last record": (
        batch(record(0, None, b"a") + b"\x00\x00", 1), INVALID_RECORD, "follow"),
    "record longer than the batch": (
        batch(record(0, None, b"abc")[:-2], 1), INVALID_RECORD, "does not fit"),
    "lz4 batch holding a bad record": (
        batch(compress("lz4", record(0, b"k", b"v", key_length=1000)), 1, compression=3),
        INVALID_RECORD, "key length 1000"),
    "gzip data that does not decompress": (
        batch(b"\x1f\x8b" + bytes(30), 1, compression=1), CORRUPT_MESSAGE, "gzip"),
}


@pytest.mark.parametrize("name", sorted(POISON))
def test_bad_batches_are_rejected_and_nothing_is_appended(
        cluster: EmbeddedCluster, wire: Callable[[str], Any], name: str) -> None:
    client = wire(cluster.bootstrap_servers)
    create_topic(client, "poison")
    records, code, words = POISON[name]
    answer = produce(client, "poison", records)
    assert answer["error_code"] == code, answer
    assert words in answer["error_message"]
    answer = produce(client, "poison", good([b"after"]))
    assert (answer["error_code"], answer["base_offset"]) == (0, 0)


def test_record_errors_name_the_bad_records(cluster: EmbeddedCluster,
                                            wire: Callable[[str], Any]) -> None:
    client = wire(cluster.bootstrap_servers)
    create_topic(client, "poison")
    answer = produce(client, "poison", batch(
        record(0, None, b"a") + record(1, b"k", b"b", key_length=2**31), 2))
    assert answer["record_errors"] == [
        {"batch_index": 1, "batch_index_error_message": "key length 2147483648 overruns "
                                                        "the record"}]


def test_null_keys_on_a_compacted_topic_are_invalid_records(
        cluster: EmbeddedCluster, wire: Callable[[str], Any]) -> None:
    client = wire(cluster.bootstrap_servers)
    create_topic(client, "compacted", cleanup_policy="compact")
    section = b"".join(record(i, None if i in (1, 3) else b"k", b"v") for i in range(4))
    answer = produce(client, "compacted", batch(section, 4))
    assert answer["error_code"] == INVALID_RECORD
    assert [e["batch_index"] for e in answer["record_errors"]] == [1, 3]
    assert "without a key" in answer["record_errors"][0]["batch_index_error_message"]
    assert produce(client, "compacted", good([b"keyed"]))["error_code"] == 0


def test_a_decompression_bomb_is_rejected_with_bounded_memory(
        cluster: EmbeddedCluster, wire: Callable[[str], Any]) -> None:
    bomb = gzip_bomb(400 * MIB)
    assert len(bomb) < 500 * 1024
    client = wire(cluster.bootstrap_servers)
    create_topic(client, "bomb")
    tracemalloc.start()
    try:
        answer = produce(client, "bomb", bomb)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert answer["error_code"] == MESSAGE_TOO_LARGE, answer
    assert "max.message.bytes" in answer["error_message"]
    assert peak < 16 * MIB  # the broker (in this process) stopped near max.message.bytes
    assert produce(client, "bomb", good([b"after"]))["base_offset"] == 0


def test_partition_stays_readable_by_every_client_after_poison(
        cluster: EmbeddedCluster, wire: Callable[[str], Any]) -> None:
    client = wire(cluster.bootstrap_servers)
    create_topic(client, "mixed")
    values = []
    for i, name in enumerate(sorted(POISON)):
        values.append(f"good-{i}".encode())
        assert produce(client, "mixed", good([values[-1]]))["error_code"] == 0
        assert produce(client, "mixed", POISON[name][0])["error_code"] != 0
    values.append(b"last")
    assert produce(client, "mixed", good([b"last"]))["base_offset"] == len(values) - 1
    listed = client.call(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": "mixed", "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": 1000}]}]})
    assert listed["topics"][0]["partitions"][0]["offset"] == 0
    bootstrap = cluster.bootstrap_servers
    assert read_kafkalite(bootstrap, len(values)) == values
    assert read_kafka_python(bootstrap, len(values)) == values
    assert read_confluent(bootstrap, len(values)) == values


def read_kafkalite(bootstrap: str, count: int) -> list[bytes]:
    from kafkalite.structs import TopicPartition
    consumer = Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest")
    try:
        consumer.assign([TopicPartition("mixed", 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            for records in consumer.poll(500).values():
                values += [r.value for r in records]
        return values
    finally:
        consumer.close()


def read_kafka_python(bootstrap: str, count: int) -> list[bytes]:
    from kafka import KafkaConsumer
    from kafka import TopicPartition as KafkaTopicPartition
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                             auto_offset_reset="earliest")
    try:
        consumer.assign([KafkaTopicPartition("mixed", 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            for records in consumer.poll(500).values():
                values += [r.value for r in records]
        return values
    finally:
        consumer.close()


def read_confluent(bootstrap: str, count: int) -> list[bytes]:
    from confluent_kafka import Consumer as RdKafkaConsumer
    from confluent_kafka import TopicPartition as RdTopicPartition
    consumer = RdKafkaConsumer({"bootstrap.servers": bootstrap, "group.id": "validation",
                                "enable.auto.commit": False})
    try:
        consumer.assign([RdTopicPartition("mixed", 0, 0)])
        values: list[bytes] = []
        deadline = time.monotonic() + 20
        while len(values) < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                values.append(message.value())
        return values
    finally:
        consumer.close()
