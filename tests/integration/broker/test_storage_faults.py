"""Storage faults on a running broker: a full disk under the logs and the metadata files.

A disk that fills up under a producer: no acknowledged record is ever missing, neither
from the files before a restart nor from a consumer after it; the log dir goes offline
with one ERROR line, Metadata and Fetch say KAFKA_STORAGE_ERROR, the failing disk is
not written again, and the broker still stops. The disk is a ``pwrite`` that cuts writes
short and then fails with ENOSPC (see ``disk_faults``).

Metadata on a full disk (a standalone broker keeps its cluster metadata in the local
coordination store of its data dir): every change is journalled before it takes effect,
so a failed write answers an error naming the journal and leaves the topics as they were.

Damaged indexes: random bytes over ``.index``/``.timeindex`` files never stop the broker,
fail a fetch, or change what a consumer reads or where a timestamp lookup lands.
"""

from __future__ import annotations

import asyncio
import errno
import logging
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from disk_faults import FillingDisk
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import CoordinatorNotAvailableError, KafkaStorageError
from kafkalite_server.cluster.local_store import LocalCoordination, LocalEnsemble
from kafkalite_server.config import BrokerConfig
from kafkalite_server.embedded import EmbeddedCluster
from kafkalite_server.launch import METADATA_DIR, launch_broker
from kafkalite_server.log.manager import CLEAN_SHUTDOWN_FILE

confluent_kafka = pytest.importorskip("confluent_kafka")
pytest.importorskip("confluent_kafka.admin")

TOPIC = "filling"


def _create_topic(client: Any) -> None:
    body = {"topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
                        "assignments": [], "configs": []}],
            "timeout_ms": 5000, "validate_only": False}
    assert client.call(ApiKey.CREATE_TOPICS, 4, body)["topics"][0]["error_code"] == 0


class _Producer:
    """A confluent-kafka producer (acks=all) that records what was acknowledged where."""

    def __init__(self, servers: str, topic: str = TOPIC) -> None:
        self.producer = confluent_kafka.Producer({
            "bootstrap.servers": servers, "acks": "all", "linger.ms": 5,
            "batch.num.messages": 20, "message.timeout.ms": 3000, "retry.backoff.ms": 50})
        self.topic = topic
        self.acked: dict[bytes, int] = {}
        self.failed: list[Any] = []

    def send(self, values: list[bytes], timestamps: list[int] | None = None) -> None:
        for i, value in enumerate(values):
            self.producer.produce(self.topic, value=value, partition=0, on_delivery=self._done,
                                  timestamp=timestamps[i] if timestamps else 0)
            self.producer.poll(0)
        assert self.producer.flush(30) == 0

    def _done(self, err: Any, message: Any) -> None:
        if err is None:
            self.acked[message.value()] = message.offset()
        else:
            self.failed.append(err)


def _values(start: int, count: int) -> list[bytes]:
    return [b"value-%06d-" % i + b"v" * 300 for i in range(start, start + count)]


def _stored(partition_dir: Path, read_records: Any) -> dict[bytes, int]:
    """value -> offset of every record in the partition's segment files (CRC checked)."""
    stored: dict[bytes, int] = {}
    for segment in sorted(partition_dir.glob("*.log")):
        for offset, _key, value, _ts in read_records(segment.read_bytes()):
            stored[value] = offset
    return stored


def _metadata_partition(client: Any) -> dict[str, Any]:
    body = {"topics": [{"name": TOPIC}], "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}
    return client.call(ApiKey.METADATA, 8, body)["topics"][0]["partitions"][0]


def _fetch_error(client: Any) -> int:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}
    return client.call(ApiKey.FETCH, 11, body)["responses"][0]["partitions"][0]["error_code"]


def _consume_all(servers: str, count: int) -> dict[bytes, int]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": servers, "group.id": "reader", "auto.offset.reset": "earliest",
        "enable.auto.commit": False})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0, 0)])
    seen: dict[bytes, int] = {}
    idle = 0
    while len(seen) < count and idle < 20:
        message = consumer.poll(0.5)
        if message is None:
            idle += 1
            continue
        assert message.error() is None, message.error()
        seen[message.value()] = message.offset()
    consumer.close()
    return seen


def test_a_filling_disk_never_loses_an_acknowledged_record(cluster_factory, wire, read_records,
                                                           tmp_path: Path,
                                                           caplog: pytest.LogCaptureFixture):
    data_dir = tmp_path / "data"
    cluster = cluster_factory(data_dir=data_dir)
    client = wire(cluster.bootstrap_servers)
    _create_topic(client)
    producer = _Producer(cluster.bootstrap_servers)
    producer.send(_values(0, 100))
    assert len(producer.acked) == 100 and producer.failed == []

    broker = cluster.brokers[0]
    disk = FillingDisk(room=40_000, chunk=3_000)  # room for ~120 more records
    broker.log_manager.pwrite = disk
    with caplog.at_level(logging.ERROR):
        producer.send(_values(100, 400))
    acked = dict(producer.acked)
    assert 100 < len(acked) < 500 and producer.failed, "the disk did not fill up"
    log_dir = data_dir / "broker-0"
    assert broker.log_manager.offline_dirs == {log_dir}
    errors = [r.getMessage() for r in caplog.records if r.levelno >= logging.ERROR]
    assert len(errors) == 1 and str(log_dir) in errors[0], errors
    assert disk.refused == 1, "the broker kept writing to the failed disk"

    partition = _metadata_partition(client)
    assert partition["error_code"] == KafkaStorageError.errno
    assert partition["leader_id"] == -1 and partition["offline_replicas"] == [0]
    assert _fetch_error(client) == KafkaStorageError.errno

    stored = _stored(log_dir / f"{TOPIC}-0", read_records)  # before the restart
    assert {value: stored.get(value) for value in acked} == acked

    cluster.stop()  # the disk is still full: the stop still completes
    assert disk.refused == 1
    assert not (log_dir / CLEAN_SHUTDOWN_FILE).exists()

    restarted = cluster_factory(data_dir=data_dir)
    consumed = _consume_all(restarted.bootstrap_servers, len(acked))
    assert {value: consumed.get(value) for value in acked} == acked
    after = _Producer(restarted.bootstrap_servers)
    after.send([b"after-restart"])
    assert after.acked == {b"after-restart": max(consumed.values()) + 1}


# ------------------------------------------------------------------ metadata files


class StandaloneBroker:
    """``kafkalite-server start`` without ``zookeeper.connect``, run in this process on a
    background loop so that a test can put its coordination store on a full disk."""

    def __init__(self, data_dir: Path) -> None:
        config = BrokerConfig.from_properties({
            "host.name": "127.0.0.1", "port": "0", "log.dirs": str(data_dir),
            "offsets.topic.num.partitions": "4", "group.initial.rebalance.delay.ms": "0"})
        self._loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self._loop.run_forever, daemon=True)
        self._thread.start()
        self.broker = self._run(launch_broker(config, data_dir))
        session = self.broker.membership.require_store()
        assert isinstance(session, LocalCoordination)
        self.store: LocalEnsemble = session.ensemble
        self.bootstrap_servers = f"127.0.0.1:{self.broker.port}"

    def _run(self, coro: Any) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self._loop).result(60)

    def stop(self) -> None:
        try:
            self._run(self.broker.stop())
        finally:
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join()
            self._loop.close()


@pytest.fixture
def standalone(tmp_path: Path) -> Iterator[Callable[[], StandaloneBroker]]:
    """``standalone()`` starts a broker on ``tmp_path / "data"`` (again after a stop)."""
    started: list[StandaloneBroker] = []

    def start() -> StandaloneBroker:
        started.append(StandaloneBroker(tmp_path / "data"))
        return started[-1]
    yield start
    for broker in started:
        if broker._thread.is_alive():
            broker.stop()


def _no_space(_fd: int) -> None:
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def _topics(client: Any) -> dict[str, int]:
    body = {"topics": None, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}
    return {t["name"]: len(t["partitions"])
            for t in client.call(ApiKey.METADATA, 8, body)["topics"]}


def _produce_one(client: Any, topic: str, make_batch: Any) -> int:
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [
                {"index": 0, "records": make_batch([b"still-here"])}]}]}
    return client.call(ApiKey.PRODUCE, 8, body)["responses"][0]["partition_responses"][0][
        "error_code"]


def _journal_bytes(store_dir: Path) -> dict[str, bytes]:
    return {path.name: path.read_bytes() for path in store_dir.glob("journal-*")}


def test_metadata_changes_on_a_full_disk_fail_whole_and_change_nothing(
        standalone, wire, make_batch, tmp_path: Path):
    store_dir = tmp_path / "data" / METADATA_DIR
    cluster = standalone()
    client = wire(cluster.bootstrap_servers)
    _create_topic(client)
    saved = _journal_bytes(store_dir)
    cluster.store.fsync = _no_space

    deleted = client.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": [TOPIC], "timeout_ms": 5000})
    assert _answers(deleted) == [(TOPIC, KafkaStorageError.errno)]
    created = client.call(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": "new", "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout_ms": 5000, "validate_only": False})["topics"][0]
    assert created["error_code"] == KafkaStorageError.errno
    assert str(store_dir / "journal-0") in created["error_message"]
    grown = client.call(ApiKey.CREATE_PARTITIONS, 1, {
        "topics": [{"name": TOPIC, "count": 3, "assignments": None}],
        "timeout_ms": 5000, "validate_only": False})["results"][0]
    assert grown["error_code"] == KafkaStorageError.errno

    assert _topics(client) == {TOPIC: 1}  # nothing changed in memory
    assert _produce_one(client, TOPIC, make_batch) == 0
    assert _journal_bytes(store_dir) == saved  # nor on disk

    cluster.stop()  # a stop with the metadata disk full still stops
    restarted = standalone()
    client = wire(restarted.bootstrap_servers)
    assert _topics(client) == {TOPIC: 1}
    deleted = client.call(ApiKey.DELETE_TOPICS, 3, {"topic_names": [TOPIC], "timeout_ms": 5000})
    assert _answers(deleted) == [(TOPIC, 0)]


def _answers(deleted: dict[str, Any]) -> list[tuple[str, int]]:
    """DeleteTopics' (name, error) pairs (the decoded v3 answer also holds the later
    versions' fields at their defaults)."""
    return [(r["name"], r["error_code"]) for r in deleted["responses"]]


def test_find_coordinator_on_a_full_disk_answers_retriable_and_recovers(standalone, wire):
    cluster = standalone()
    client = wire(cluster.bootstrap_servers)
    cluster.store.fsync = _no_space
    for _ in range(2):
        found = client.call(ApiKey.FIND_COORDINATOR, 2, {"key": "group", "key_type": 0})
        assert found["error_code"] == CoordinatorNotAvailableError.errno
        assert "journal-0" in found["error_message"]
    assert "__consumer_offsets" not in _topics(client)
    cluster.store.fsync = os.fsync
    # As in Kafka, the lookup that creates the topic answers COORDINATOR_NOT_AVAILABLE
    # until the controller has placed it; clients retry.
    for _ in range(100):
        found = client.call(ApiKey.FIND_COORDINATOR, 2, {"key": "group", "key_type": 0})
        if found["error_code"] != CoordinatorNotAvailableError.errno:
            break
        time.sleep(0.05)
    assert found["error_code"] == 0 and found["node_id"] == 0
    assert _topics(client)["__consumer_offsets"] == 4


def _init_producer_id(client: Any) -> dict[str, Any]:
    return client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                                    "transaction_timeout_ms": 60000})


def test_a_producer_id_is_never_issued_twice_across_restarts(standalone, wire):
    cluster = standalone()
    first = _init_producer_id(wire(cluster.bootstrap_servers))
    assert first["error_code"] == 0
    cluster.stop()
    restarted = standalone()
    again = _init_producer_id(wire(restarted.bootstrap_servers))
    assert again["producer_id"] > first["producer_id"], "a producer id was issued twice"


# ------------------------------------------------------------------ damaged indexes


INDEXED = "indexed"
INDEXED_RECORDS = 300
FIRST_TIMESTAMP = 1_700_000_000_000


@pytest.fixture(scope="module")
def indexed_data(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[int, int]]:
    """A stopped broker's data dir: several segments with dense indexes, and where
    offsets_for_times lands for a range of timestamps."""
    data_dir = tmp_path_factory.mktemp("indexed") / "data"
    with EmbeddedCluster(data_dir=data_dir) as cluster:
        admin = confluent_kafka.admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        topic = confluent_kafka.admin.NewTopic(INDEXED, 1, 1, config={
            "segment.bytes": "8192", "segment.index.bytes": "4096",
            "index.interval.bytes": "1"})
        admin.create_topics([topic])[INDEXED].result(10)
        producer = _Producer(cluster.bootstrap_servers, topic=INDEXED)
        producer.send([b"record-%04d-" % i + b"r" * 100 for i in range(INDEXED_RECORDS)],
                      timestamps=[FIRST_TIMESTAMP + 10 * i for i in range(INDEXED_RECORDS)])
        assert len(producer.acked) == INDEXED_RECORDS and producer.failed == []
        lookups = _offsets_for_times(cluster.bootstrap_servers)
    assert list(lookups.values()) == [-(-(t - FIRST_TIMESTAMP) // 10) for t in lookups]
    partition_dir = data_dir / "broker-0" / f"{INDEXED}-0"
    assert len(list(partition_dir.glob("*.index"))) >= 3
    return data_dir, lookups


def _offsets_for_times(servers: str) -> dict[int, int]:
    """One lookup per call: librdkafka keeps one timestamp per partition in a request."""
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "times"})
    found = {}
    for target in range(FIRST_TIMESTAMP - 5, FIRST_TIMESTAMP + 10 * INDEXED_RECORDS + 5, 293):
        [answer] = consumer.offsets_for_times(
            [confluent_kafka.TopicPartition(INDEXED, 0, target)], timeout=10)
        assert answer.error is None, answer.error
        found[target] = answer.offset
    consumer.close()
    return found


_index_damage = st.one_of(
    st.tuples(st.just("overwrite"), st.integers(0, 600), st.binary(min_size=1, max_size=16)),
    st.tuples(st.just("cut"), st.integers(0, 600), st.just(b"")),
    st.tuples(st.just("extend"), st.just(0), st.binary(min_size=1, max_size=30)),
    st.tuples(st.just("replace"), st.just(0), st.binary(max_size=300)),
)


@settings(max_examples=8, deadline=None, derandomize=True,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damages=st.lists(st.tuples(st.integers(0, 1000), _index_damage), min_size=1,
                        max_size=6))
def test_random_bytes_over_indexes_never_stop_the_broker_or_a_fetch(indexed_data,
                                                                    tmp_path_factory,
                                                                    damages):
    template, lookups = indexed_data
    data_dir = tmp_path_factory.mktemp("damaged") / "data"
    shutil.copytree(template, data_dir)
    indexes = sorted((data_dir / "broker-0" / f"{INDEXED}-0").glob("*index"))
    for which, (kind, at, data) in damages:
        path = indexes[which % len(indexes)]
        content = bytearray(path.read_bytes())
        if kind == "overwrite":
            content[min(at, len(content)):min(at, len(content)) + len(data)] = data
        elif kind == "cut":
            del content[at:]
        elif kind == "extend":
            content += data
        else:
            content = bytearray(data)
        path.write_bytes(bytes(content))
    with EmbeddedCluster(data_dir=data_dir) as cluster:
        consumed = _consume_all_of(cluster.bootstrap_servers)
        assert consumed == [(i, b"record-%04d-" % i + b"r" * 100)
                            for i in range(INDEXED_RECORDS)]
        assert _offsets_for_times(cluster.bootstrap_servers) == lookups
    shutil.rmtree(data_dir.parent)


def _consume_all_of(servers: str) -> list[tuple[int, bytes]]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": servers, "group.id": "all", "enable.auto.commit": False,
        "fetch.max.bytes": 2048, "message.max.bytes": 2048, "max.partition.fetch.bytes": 1024})
    consumer.assign([confluent_kafka.TopicPartition(INDEXED, 0, 0)])
    out: list[tuple[int, bytes]] = []
    idle = 0
    while len(out) < INDEXED_RECORDS and idle < 20:
        message = consumer.poll(0.5)
        if message is None:
            idle += 1
            continue
        assert message.error() is None, message.error()
        out.append((message.offset(), message.value()))
    consumer.close()
    return out
