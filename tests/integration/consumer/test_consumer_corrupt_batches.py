"""A corrupt batch in a partition: the consumer returns every record before it, then raises
a CorruptRecordError naming topic, partition and offset, and continues after a seek.

The batch is damaged in the running broker's segment file (fetches are served from the
file, so the next read sees it), as a disk fault or an older broker's bad append would
leave it.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import crc32c
import pytest

from kafkalite.consumer import Consumer
from kafkalite.errors import CorruptRecordError
from kafkalite.protocol import ApiKey
from kafkalite.records import encode_batch
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster

TOPIC = "garbled"
TP = TopicPartition(TOPIC, 0)


def produce(client: Any, values: list[bytes]) -> int:
    records = encode_batch([(None, value, 1000, None) for value in values])
    response = client.call(ApiKey.PRODUCE, 8, {
        "transactional_id": None, "acks": 1, "timeout_ms": 5000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}]})
    part = response["responses"][0]["partition_responses"][0]
    assert part["error_code"] == 0, part
    return int(part["base_offset"])


def flip_a_value_byte(segment: bytearray, position: int) -> None:
    segment[-3] ^= 0xFF  # inside the last record's value: the CRC no longer matches


def overstate_a_key_length(segment: bytearray, position: int) -> None:
    """The last record's key length says 5 where it was null, with a correct CRC: only
    decoding the records finds it."""
    assert segment[-5] == 0x01  # varint -1, then value length 2, "c6", no headers
    segment[-5] = 0x0A
    crc = crc32c.crc32c(bytes(segment[position + 21:]))
    struct.pack_into(">I", segment, position + 17, crc)


@pytest.mark.parametrize("damage", [flip_a_value_byte, overstate_a_key_length])
def test_records_before_a_corrupt_batch_are_returned_then_a_typed_error(
        cluster_factory: Callable[..., EmbeddedCluster], wire: Callable[[str], Any],
        damage: Callable[[bytearray, int], None]) -> None:
    cluster = cluster_factory()
    client = wire(cluster.bootstrap_servers)
    created = client.call(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": []}], "timeout_ms": 5000,
        "validate_only": False})
    assert created["topics"][0]["error_code"] == 0
    produce(client, [b"a0", b"a1", b"a2"])
    produce(client, [b"b3", b"b4"])
    log_file = _segment_file(cluster)
    bad_position = log_file.stat().st_size
    assert produce(client, [b"c5", b"c6"]) == 5
    segment = bytearray(log_file.read_bytes())
    damage(segment, bad_position)
    log_file.write_bytes(segment)

    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers, max_poll_records=2)
    try:
        consumer.assign([TP])
        consumer.seek(TP, 0)
        values: list[bytes] = []
        error = _poll_until_error(consumer, values)
        assert values == [b"a0", b"a1", b"a2", b"b3", b"b4"]
        assert (error.topic, error.partition, error.offset) == (TOPIC, 0, 5)
        assert f"{TOPIC}-0 at offset 5" in str(error)
        assert consumer.position(TP) == 5
        again = _poll_until_error(consumer, values)  # still there until the app moves on
        assert again.offset == 5 and len(values) == 5

        consumer.seek(TP, 7)
        produce(client, [b"d7"])
        assert _poll_values(consumer, 1) == [b"d7"]
    finally:
        consumer.close()


def _segment_file(cluster: EmbeddedCluster) -> Path:
    assert cluster.data_dir is not None
    (log_file,) = cluster.data_dir.glob(f"*/{TOPIC}-0/*.log")
    return log_file


def _poll_until_error(consumer: Consumer, values: list[bytes]) -> CorruptRecordError:
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        try:
            for records in consumer.poll(200).values():
                values += [record.value for record in records]
        except CorruptRecordError as exc:
            return exc
    raise AssertionError(f"no CorruptRecordError; read {values}")


def _poll_values(consumer: Consumer, count: int) -> list[bytes]:
    values: list[bytes] = []
    deadline = time.monotonic() + 20
    while len(values) < count and time.monotonic() < deadline:
        for records in consumer.poll(200).values():
            values += [record.value for record in records]
    return values
