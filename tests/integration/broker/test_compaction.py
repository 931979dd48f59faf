"""Compaction with real clients (the shape of librdkafka's 0077 compaction test): kcat and
confluent-kafka write keys and tombstones to a compacted topic that rolls fast, the
broker's cleaner compacts it, and a consumer from the start sees the compacted view."""

from __future__ import annotations

import shutil
import subprocess
import time

import pytest

from kafkalite_server.embedded import EmbeddedCluster

confluent_kafka = pytest.importorskip("confluent_kafka")
admin_api = pytest.importorskip("confluent_kafka.admin")

TOPIC = "compacted"
TOPIC_CONFIG = {"cleanup.policy": "compact", "segment.ms": "100", "segment.bytes": "4096",
                "min.cleanable.dirty.ratio": "0.01", "delete.retention.ms": "3600000",
                "file.delete.delay.ms": "1000"}


@pytest.fixture
def cluster():
    with EmbeddedCluster(config={"log.cleaner.backoff.ms": "50"}) as running:
        yield running


def _create_topic(servers: str) -> None:
    admin = admin_api.AdminClient({"bootstrap.servers": servers})
    futures = admin.create_topics([admin_api.NewTopic(
        TOPIC, num_partitions=1, replication_factor=1, config=TOPIC_CONFIG)])
    futures[TOPIC].result(30)


def _produce(servers: str, writes: list[tuple[str, str | None]]) -> dict[str, tuple[int, str | None]]:
    """Write with confluent-kafka (lz4, idempotent); key -> (offset, value) of the last."""
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "linger.ms": 5,
                                         "compression.type": "lz4",
                                         "enable.idempotence": True})
    last: dict[str, tuple[int, str | None]] = {}

    def delivered(err, msg) -> None:
        assert err is None, err
        value = msg.value()
        last[msg.key().decode()] = (msg.offset(), None if value is None else value.decode())

    for key, value in writes:
        producer.produce(TOPIC, key=key, value=value, partition=0, on_delivery=delivered)
        producer.poll(0)
    assert producer.flush(30) == 0
    return last


def _consume_all(servers: str) -> list[tuple[int, str, str | None]]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": servers, "group.id": "check",
                                         "enable.auto.commit": False,
                                         "enable.partition.eof": True})
    consumer.assign([confluent_kafka.TopicPartition(TOPIC, 0,
                                                    confluent_kafka.OFFSET_BEGINNING)])
    seen = []
    try:
        while True:
            msg = consumer.poll(10)
            assert msg is not None, "no end of partition within 10 s"
            if msg.error():
                assert msg.error().code() == confluent_kafka.KafkaError._PARTITION_EOF
                return seen
            value = msg.value()
            seen.append((msg.offset(), msg.key().decode(),
                         None if value is None else value.decode()))
    finally:
        consumer.close()


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_and_confluent_kafka_see_the_compacted_view(cluster: EmbeddedCluster) -> None:
    servers = cluster.bootstrap_servers
    _create_topic(servers)
    writes: list[tuple[str, str | None]] = []
    for round_ in range(6):
        for key in range(8):
            writes.append((f"k{key}", f"v{round_}-{key}-" + "x" * 100))
        writes.append(("k0", None) if round_ % 2 else (f"unique-{round_}", "u"))
    last = _produce(servers, writes)
    # kcat: a new value for k1 and a tombstone for k2 (-Z sends an empty value as NULL)
    subprocess.run(["kcat", "-b", servers, "-P", "-t", TOPIC, "-p", "0", "-K", ":", "-Z"],
                   input="k1:from-kcat\nk2:\n", text=True, timeout=60, check=True)
    time.sleep(0.2)  # past segment.ms: the next write rolls, so everything above is cleanable
    last.update(_produce(servers, [("tail", "roll")]))
    tail_offset = last["tail"][0]
    written_count = tail_offset + 1

    deadline = time.monotonic() + 60
    while True:
        seen = _consume_all(servers)
        keys = [key for _, key, _ in seen]
        if len(keys) == len(set(keys)) or time.monotonic() > deadline:
            break
        time.sleep(0.3)
    assert len(keys) == len(set(keys)), f"not compacted: {len(seen)} of {written_count} left"
    view = {key: value for _, key, value in seen}
    assert view["k1"] == "from-kcat" and view["k2"] is None  # kcat's writes are the newest
    assert view["k0"] is None  # confluent-kafka's last k0 write was a tombstone: still kept
    for key, (offset, value) in last.items():
        if key not in ("k1", "k2"):
            assert (offset, key, value) in seen
    assert len(seen) < written_count

    # kcat, reading from the start, agrees
    out = subprocess.run(["kcat", "-b", servers, "-C", "-t", TOPIC, "-p", "0", "-o",
                          "beginning", "-e", "-q", "-Z", "-f", "%o %k %s\n"],
                         capture_output=True, text=True, timeout=60, check=True)
    lines = [line.split(" ", 2) for line in out.stdout.splitlines()]
    assert [(int(o), k, None if v == "NULL" else v) for o, k, v in lines] == seen


def test_consumer_offsets_is_compacted_and_commits_survive_a_restart(tmp_path) -> None:
    """Each commit appends to ``__consumer_offsets``; the cleaner keeps one record per
    (group, partition) key, and the restarted coordinator loads the last commit."""
    settings = {"offsets.topic.num.partitions": "1", "offsets.topic.segment.bytes": "2000",
                "log.cleaner.backoff.ms": "50"}
    with EmbeddedCluster(data_dir=tmp_path, config=settings) as running:
        servers = running.bootstrap_servers
        _create_topic(servers)
        consumer = confluent_kafka.Consumer({"bootstrap.servers": servers,
                                             "group.id": "committer",
                                             "enable.auto.commit": False})
        for offset in range(1, 201):
            consumer.commit(offsets=[confluent_kafka.TopicPartition(TOPIC, 0, offset)],
                            asynchronous=False)
        log = running.brokers[0].log_manager.get_log("__consumer_offsets", 0)
        deadline = time.monotonic() + 30
        while sum(s.size for s in log.segments) > 6000 and time.monotonic() < deadline:
            time.sleep(0.2)
        assert sum(s.size for s in log.segments) <= 6000, "__consumer_offsets not compacted"
        consumer.close()
    with EmbeddedCluster(data_dir=tmp_path, config=settings) as restarted:
        consumer = confluent_kafka.Consumer({"bootstrap.servers": restarted.bootstrap_servers,
                                             "group.id": "committer"})
        committed = consumer.committed([confluent_kafka.TopicPartition(TOPIC, 0)], timeout=30)
        assert committed[0].offset == 200
        consumer.close()
