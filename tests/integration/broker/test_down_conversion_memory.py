"""Fetch v0-3 (down-conversion) holds bounded memory (issue 30, item 12.2).

A topic holds 22.5 MiB of records in zstd batches (values that compress well, so each
batch of 960 KiB is a few KB on disk). Legacy formats have no zstd, so an old fetcher gets
them uncompressed: the broker must hold their full size. Old fetchers ask for everything:
Fetch v0-2 carry no ``max_bytes``, and ``partition_max_bytes`` is 256 MiB here. With
``fetch.max.bytes`` at 4 MiB:

- each response holds at most 4 MiB of records plus one batch, and repeated fetches read
  every record in order (raw requests at v0, v1 and v3; kafka-python pinned to 0.10 reads
  them too);
- eight such fetches at once, on eight connections, make the broker allocate (tracemalloc's
  peak, in this process) a small multiple of ``fetch.max.bytes``, not eight copies of the
  topic decompressed, and the converted bytes held across connections never pass it by
  more than a batch each.
"""

from __future__ import annotations

import threading
import tracemalloc
from collections.abc import Callable
from typing import Any

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.record.memory_records import MemoryRecords

from kafkalite.protocol import ApiKey
from kafkalite.records import encode_batch
from kafkalite_server.embedded import EmbeddedCluster

MIB = 1 << 20
FETCH_MAX = 4 * MIB
BATCHES = 24
PER_BATCH = 60  # records of 16 KiB: 960 KiB a batch decompressed, under max.message.bytes
VALUE = 16 * 1024
TOPIC = "old-readers"


@pytest.fixture
def loaded(cluster_factory: Callable[..., EmbeddedCluster], wire: Callable[[str], Any]
           ) -> EmbeddedCluster:
    cluster = cluster_factory(fetch_max_bytes=str(FETCH_MAX))
    client = wire(cluster.bootstrap_servers)
    topics = [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
               "assignments": [], "configs": []}]
    assert client.call(ApiKey.CREATE_TOPICS, 4, {"topics": topics, "timeout_ms": 5000,
                                                 "validate_only": False}
                       )["topics"][0]["error_code"] == 0
    for batch in range(BATCHES):
        records = encode_batch([(b"%d" % (batch * PER_BATCH + i), b"%08d" % i * (VALUE // 8),
                                 1000, None) for i in range(PER_BATCH)], compression="zstd")
        body = {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
                "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0,
                                                                  "records": records}]}]}
        response = client.call(ApiKey.PRODUCE, 8, body)
        assert response["responses"][0]["partition_responses"][0]["error_code"] == 0
    return cluster


def _fetch(client: Any, version: int, offset: int) -> bytes:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 2**31 - 1,
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "fetch_offset": offset,
                 "partition_max_bytes": 256 * MIB}]}]}
    partition = client.call(ApiKey.FETCH, version, body)["responses"][0]["partitions"][0]
    assert partition["error_code"] == 0
    return bytes(partition["records"] or b"")


def _offsets(records: bytes) -> list[int]:
    batches = MemoryRecords(records)
    offsets = []
    while (batch := batches.next_batch()) is not None:
        offsets.extend(record.offset for record in batch)
    return offsets


def _read_everything(client: Any, version: int, sizes: list[int]) -> list[int]:
    offsets: list[int] = []
    for _ in range(BATCHES * 4):
        records = _fetch(client, version, len(offsets))
        sizes.append(len(records))
        offsets.extend(_offsets(records))
        if len(offsets) == BATCHES * PER_BATCH:
            break
    return offsets


@pytest.mark.parametrize("version", [0, 1, 3])
def test_old_fetches_come_in_bounded_responses_and_read_everything(
        loaded: EmbeddedCluster, wire: Callable[[str], Any], version: int) -> None:
    sizes: list[int] = []
    offsets = _read_everything(wire(loaded.bootstrap_servers), version, sizes)
    assert offsets == list(range(BATCHES * PER_BATCH))
    assert max(sizes) <= FETCH_MAX + 2 * MIB  # the budget plus at most one converted batch
    assert len(sizes) >= BATCHES * PER_BATCH * VALUE // FETCH_MAX  # several fetches


def test_kafka_python_at_0_10_reads_everything(loaded: EmbeddedCluster) -> None:
    consumer = KafkaConsumer(bootstrap_servers=loaded.bootstrap_servers, api_version=(0, 10),
                             enable_auto_commit=False, max_partition_fetch_bytes=256 * MIB,
                             fetch_max_bytes=256 * MIB)
    partition = TopicPartition(TOPIC, 0)
    consumer.assign([partition])
    consumer.seek(partition, 0)
    seen: list[int] = []
    try:
        for _ in range(200):
            for records in consumer.poll(timeout_ms=500).values():
                seen.extend(record.offset for record in records)
            if len(seen) >= BATCHES * PER_BATCH:
                break
    finally:
        consumer.close()
    assert seen == list(range(BATCHES * PER_BATCH))


def test_eight_concurrent_old_fetchers_cost_a_bounded_amount(
        loaded: EmbeddedCluster, wire: Callable[[str], Any]) -> None:
    budget = loaded.brokers[0].down_conversion
    clients = [wire(loaded.bootstrap_servers) for _ in range(8)]
    results: list[list[int]] = [[] for _ in clients]
    held: list[int] = []
    done = threading.Event()

    def watch() -> None:
        while not done.wait(0.005):
            held.append(budget.held)

    def read(index: int) -> None:
        results[index] = _read_everything(clients[index], 1, [])

    watcher = threading.Thread(target=watch)
    readers = [threading.Thread(target=read, args=(n,)) for n in range(len(clients))]
    tracemalloc.start()
    try:
        watcher.start()
        for reader in readers:
            reader.start()
        for reader in readers:
            reader.join(120)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        done.set()
        watcher.join()
        tracemalloc.stop()
    assert all(offsets == list(range(BATCHES * PER_BATCH)) for offsets in results)
    assert max(held) <= FETCH_MAX + len(clients) * 2 * MIB
    assert peak < 12 * FETCH_MAX + len(clients) * 4 * MIB  # old: 8 x 22.5 MiB and more
