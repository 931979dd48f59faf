"""File descriptors are a bounded resource of the broker (issue 30, item 3).

- A ``kafkalite-server`` process whose RLIMIT_NOFILE (soft and hard) is 128 holds more
  segments than that: confluent-kafka writes 30 partitions full of small segments, reads
  every record back from offset 0, and the broker restarts on them after a clean stop and
  after SIGKILL, every record still readable.
- Running out of descriptors during a roll (an opener that fails with EMFILE, injected at
  the cache's one opening seam) fails that produce with KAFKA_STORAGE_ERROR naming the
  limit; the log dir stays online, the partition still serves reads and every other
  partition still takes writes; the next produce after descriptors are back rolls.
"""

from __future__ import annotations

import errno
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.embedded import EmbeddedCluster

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_api = pytest.importorskip("confluent_kafka.admin")

LIMIT = 128
PARTITIONS = 30
RECORDS = 60  # per partition, ~110 bytes each: 6-7 segments of 1 KiB
TOPIC = "many-segments"


def _create(servers: str, topic: str, partitions: int, segment_bytes: int) -> None:
    admin = admin_api.AdminClient({"bootstrap.servers": servers})
    admin.create_topics([admin_api.NewTopic(
        topic, num_partitions=partitions, replication_factor=1,
        config={"segment.bytes": str(segment_bytes)})])[topic].result(30)


def _write(servers: str) -> dict[tuple[int, int], bytes]:
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "linger.ms": 20,
                                         "batch.size": 512})
    acked: dict[tuple[int, int], bytes] = {}

    def delivered(err: Any, msg: Any) -> None:
        assert err is None, err
        acked[(msg.partition(), msg.offset())] = msg.value()

    for n in range(RECORDS):
        for partition in range(PARTITIONS):
            producer.produce(TOPIC, value=b"%03d-%03d-" % (partition, n) + b"v" * 90,
                             partition=partition, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(60) == 0
    return acked


def _read_all(servers: str) -> dict[tuple[int, int], bytes]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "all",
                                         "enable.auto.commit": False,
                                         "auto.offset.reset": "error",
                                         "enable.partition.eof": True})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, p, confluent_kafka.OFFSET_BEGINNING)
                     for p in range(PARTITIONS)])
    seen: dict[tuple[int, int], bytes] = {}
    ended: set[int] = set()
    try:
        for _ in range(PARTITIONS * RECORDS * 2):
            msg = consumer.poll(10)
            assert msg is not None, f"partitions {set(range(PARTITIONS)) - ended} stalled"
            if msg.error():
                assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF, \
                    msg.error()
                ended.add(msg.partition())
                if len(ended) == PARTITIONS:
                    return seen
                continue
            seen[(msg.partition(), msg.offset())] = msg.value()
    finally:
        consumer.close()
    raise AssertionError("the partitions never all ended")


def _segment_files(data_dir: Path) -> int:
    return sum(1 for path in data_dir.glob(f"{TOPIC}-*/*")
               if path.suffix in (".log", ".index", ".timeindex"))


def _descriptors(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


def test_a_broker_under_a_small_rlimit_serves_and_restarts_on_more_segments_than_it(
        broker_process_factory: Callable[..., Any]) -> None:
    broker = broker_process_factory(open_files_limit=LIMIT)
    try:
        servers = broker.bootstrap_servers
        _create(servers, TOPIC, PARTITIONS, 1024)
        acked = _write(servers)
        assert len(acked) == PARTITIONS * RECORDS
        assert _segment_files(broker.data_dir) > 2 * LIMIT  # far more files than descriptors
        assert _read_all(servers) == acked
        assert broker.process is not None and _descriptors(broker.process.pid) < LIMIT
        assert f"soft {LIMIT}, hard {LIMIT}" in broker.log_text()  # logged at start

        broker.restart()  # a clean stop: every segment but the active ones loads lazily
        assert _read_all(broker.bootstrap_servers) == acked
        broker.kill()  # no clean shutdown: recovery from the recovery points
        broker.start()
        assert _read_all(broker.bootstrap_servers) == acked
        assert "Too many open files" not in broker.log_text()
    finally:
        broker.kill()


def _produce(client: Any, topic: str, records: bytes) -> dict[str, Any]:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0,
                                                               "records": records}]}]}
    return client.call(ApiKey.PRODUCE, 8, body)["responses"][0]["partition_responses"][0]


def _fetch(client: Any, topic: str) -> dict[str, Any]:
    body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}
    return client.call(ApiKey.FETCH, 11, body)["responses"][0]["partitions"][0]


def test_running_out_of_descriptors_in_a_roll_fails_that_produce_only(
        cluster_factory: Callable[..., EmbeddedCluster], wire: Callable[[str], Any],
        make_batch: Callable[..., bytes], read_records: Callable[..., Any]) -> None:
    cluster = cluster_factory()
    servers = cluster.bootstrap_servers
    _create(servers, "rolling", 1, 1024)
    _create(servers, "other", 1, 1024)
    client = wire(servers)
    batch = make_batch([b"x" * 600])
    assert _produce(client, "rolling", batch)["error_code"] == 0

    manager = cluster.brokers[0].log_manager
    exhausted = True

    def opener(path: Path, flags: int) -> int:
        if exhausted and "rolling-0" in str(path) and flags & os.O_CREAT:
            raise OSError(errno.EMFILE, os.strerror(errno.EMFILE), str(path))
        return os.open(path, flags)

    manager.files.opener = opener
    refused = _produce(client, "rolling", batch)  # does not fit: needs a new segment
    assert refused["error_code"] == KafkaStorageError.errno
    assert "kafkalite.log.open.files.max" in (refused.get("error_message") or "")
    assert manager.offline_dirs == set()
    assert _produce(client, "other", batch)["error_code"] == 0
    assert _produce(client, "other", batch)["error_code"] == 0  # "other" rolls fine
    fetched = _fetch(client, "rolling")
    assert fetched["error_code"] == 0 and len(read_records(fetched["records"])) == 1

    exhausted = False
    assert _produce(client, "rolling", batch)["base_offset"] == 1
    fetched = _fetch(client, "rolling")
    assert [offset for offset, *_ in read_records(fetched["records"])] == [0]  # one batch
    assert len(manager.get_log("rolling", 0).segments) == 2
