"""Durability of the broker process: SIGKILL in the middle of a produce stream, a torn log
tail and damaged indexes. After each restart every acknowledged record is served, once."""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.records.batch_header import iter_batch_headers

confluent_kafka = pytest.importorskip("confluent_kafka")

TOPIC = "durable"
PARTITIONS = 2


def _create_topic(client: Any, partitions: int = PARTITIONS) -> None:
    body = {"topics": [{"name": TOPIC, "num_partitions": partitions, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout_ms": 5000, "validate_only": False}
    assert client.call(ApiKey.CREATE_TOPICS, 4, body)["topics"][0]["error_code"] == 0


def _produce(client: Any, partition: int, batch: bytes) -> int:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": TOPIC, "partition_data": [{"index": partition,
                                                               "records": batch}]}]}
    response = client.call(ApiKey.PRODUCE, 8, body)["responses"][0]["partition_responses"][0]
    assert response["error_code"] == 0
    return response["base_offset"]


def _fetch(client: Any, partition: int, offset: int, max_bytes: int = 1 << 20
           ) -> dict[str, Any]:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": max_bytes,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": partition, "current_leader_epoch": -1, "fetch_offset": offset,
                 "log_start_offset": -1, "partition_max_bytes": max_bytes}]}]}
    response = client.call(ApiKey.FETCH, 11, body)["responses"][0]["partitions"][0]
    assert response["error_code"] == 0, response
    return response


def _read_all(client: Any, read_records: Callable[[bytes], list[Any]], partition: int,
              start: int = 0) -> list[tuple[int, bytes | None]]:
    """(offset, value) of every record from ``start`` to the high watermark."""
    out: list[tuple[int, bytes | None]] = []
    offset = start
    while True:
        response = _fetch(client, partition, offset, max_bytes=64 * 1024)
        records = [(o, v) for o, _k, v, _t in read_records(response["records"] or b"")
                   if o >= offset]
        out.extend(records)
        if records:
            offset = records[-1][0] + 1
        if offset >= response["high_watermark"]:
            return out
        assert records, f"no progress at offset {offset}"


def _list_offset(client: Any, partition: int, timestamp: int) -> int:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [{"name": TOPIC, "partitions": [
        {"partition_index": partition, "current_leader_epoch": -1, "timestamp": timestamp}]}]}
    answer = client.call(ApiKey.LIST_OFFSETS, 5, body)["topics"][0]["partitions"][0]
    assert answer["error_code"] == 0
    return answer["offset"]


def _partition_dir(data_dir: Path, partition: int) -> Path:
    found = list(data_dir.rglob(f"{TOPIC}-{partition}"))
    assert len(found) == 1, found
    return found[0]


# ------------------------------------------------------------------ SIGKILL mid-stream


class AckedStream:
    """A librdkafka idempotent acks=all producer writing numbered values until stopped;
    remembers which ones the broker acknowledged, and where."""

    def __init__(self, servers: str) -> None:
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": servers, "acks": "all", "enable.idempotence": True,
            "linger.ms": 2, "message.timeout.ms": 60000, "reconnect.backoff.ms": 50,
            "reconnect.backoff.max.ms": 500})
        self.acked: dict[bytes, tuple[int, int]] = {}
        self.failed: list[Any] = []
        self.sent = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, daemon=True)

    def _on_delivery(self, err: Any, message: Any) -> None:
        if err is None:
            self.acked[message.value()] = (message.partition(), message.offset())
        else:
            self.failed.append(err)

    def _run(self) -> None:
        while not self._stop.is_set():
            try:
                self.producer.produce(TOPIC, value=b"value-%08d" % self.sent,
                                      partition=self.sent % PARTITIONS,
                                      on_delivery=self._on_delivery)
                self.sent += 1
            except BufferError:
                pass
            self.producer.poll(0.001)

    def start(self) -> AckedStream:
        self._thread.start()
        return self

    def wait_for_acks(self, count: int, timeout: float = 60.0) -> None:
        deadline = time.monotonic() + timeout
        while len(self.acked) < count:
            assert time.monotonic() < deadline, f"only {len(self.acked)} acks"
            time.sleep(0.01)

    def stop(self) -> None:
        self._stop.set()
        self._thread.join()
        assert self.producer.flush(60) == 0


@pytest.fixture
def stream_factory() -> Iterator[Callable[[str], AckedStream]]:
    streams: list[AckedStream] = []

    def make(servers: str) -> AckedStream:
        stream = AckedStream(servers).start()
        streams.append(stream)
        return stream
    yield make
    for stream in streams:
        if stream._thread.is_alive():
            stream._stop.set()
            stream._thread.join()


def test_every_acknowledged_record_survives_sigkill(broker_process, wire, read_records,
                                                    stream_factory):
    _create_topic(wire(broker_process.bootstrap_servers))
    stream = stream_factory(broker_process.bootstrap_servers)
    stream.wait_for_acks(2000)
    broker_process.kill()
    acked_before_kill = dict(stream.acked)
    broker_process.start()
    stream.wait_for_acks(len(acked_before_kill) + 2000)
    stream.stop()
    assert stream.failed == []

    client = wire(broker_process.bootstrap_servers)
    stored: dict[bytes | None, list[tuple[int, int]]] = {}
    for partition in range(PARTITIONS):
        for offset, value in _read_all(client, read_records, partition):
            stored.setdefault(value, []).append((partition, offset))
    assert {value: places[0] for value, places in stored.items()
            if value in stream.acked} == stream.acked, "an acknowledged record moved or is lost"
    duplicated = {value: places for value, places in stored.items() if len(places) > 1}
    assert duplicated == {}, "the idempotent producer's retries were written twice"
    assert len(acked_before_kill) < len(stream.acked) == stream.sent


# ------------------------------------------------------------------ torn tail, bad indexes


def _write_batches(client: Any, make_batch: Callable[..., bytes], count: int,
                   records_per_batch: int = 5, base_timestamp: int = 1_600_000_000_000
                   ) -> list[bytes]:
    values = []
    for b in range(count):
        batch_values = [b"batch-%04d-record-%d-" % (b, r) + b"x" * 200
                        for r in range(records_per_batch)]
        stamps = [base_timestamp + 1000 * (b * records_per_batch + r)
                  for r in range(records_per_batch)]
        assert _produce(client, 0, make_batch(batch_values, timestamps=stamps)) == len(values)
        values.extend(batch_values)
    return values


@pytest.mark.parametrize("stop", ["kill", "terminate"])
def test_torn_tail_is_cut_and_everything_before_it_is_served(broker_process, wire, make_batch,
                                                             read_records, stop):
    client = wire(broker_process.bootstrap_servers)
    _create_topic(client, partitions=1)
    values = _write_batches(client, make_batch, 40)
    getattr(broker_process, stop)()

    log_file = _partition_dir(broker_process.data_dir, 0) / f"{0:020d}.log"
    data = log_file.read_bytes()
    last = list(iter_batch_headers(data))[-1]
    with log_file.open("r+b") as file:  # half of the last batch reached the disk
        file.truncate(last.position + last.size // 2)

    broker_process.start()
    client = wire(broker_process.bootstrap_servers)
    intact = values[:last.base_offset]
    assert _read_all(client, read_records, 0) == list(enumerate(intact))
    assert _produce(client, 0, make_batch([b"after-recovery"])) == len(intact)
    assert _read_all(client, read_records, 0, start=len(intact)) == [
        (len(intact), b"after-recovery")]


@pytest.mark.parametrize("damage", ["delete", "garbage", "truncate"])
def test_damaged_indexes_are_rebuilt(broker_process, wire, make_batch, read_records, damage):
    client = wire(broker_process.bootstrap_servers)
    _create_topic(client, partitions=1)
    values = _write_batches(client, make_batch, 60)
    broker_process.terminate()

    directory = _partition_dir(broker_process.data_dir, 0)
    for suffix in (".index", ".timeindex"):
        index = directory / f"{0:020d}{suffix}"
        if damage == "delete":
            index.unlink()
        elif damage == "garbage":
            size = index.stat().st_size
            index.write_bytes(bytes(range(7, 256)) * (size // 249 + 1))
        else:
            index.write_bytes(index.read_bytes()[:13])

    broker_process.start()
    client = wire(broker_process.bootstrap_servers)
    assert _read_all(client, read_records, 0) == list(enumerate(values))
    for offset in (0, 1, 99, 150, 297, len(values) - 1):
        assert _read_all(client, read_records, 0, start=offset)[0] == (offset, values[offset])
    for target in (0, 137, 250):
        assert _list_offset(client, 0, 1_600_000_000_000 + 1000 * target) == target
