"""Compatibility matrix: real, unmodified clients (kcat, confluent-kafka, kafka-python,
aiokafka) against one embedded broker.

Every producing client writes with every codec and one of the acks settings, and a
*different* client reads the records back byte-exact (keys, values, headers, null keys,
tombstones), in per-partition order. Each client also reads by assignment from earliest,
latest, a given offset and a timestamp. Each client is the oracle of the others: what one
writes through the broker, another must decode.
"""

from __future__ import annotations

import asyncio
import shutil
import subprocess
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, Protocol

import pytest

from kafkalite.records.batch_header import iter_batch_headers
from kafkalite_server import EmbeddedCluster

pytestmark = pytest.mark.compat

confluent_kafka = pytest.importorskip("confluent_kafka")
confluent_admin = pytest.importorskip("confluent_kafka.admin")
kafka = pytest.importorskip("kafka")
aiokafka = pytest.importorskip("aiokafka")

CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
ACKS = ["all", "1", "0"]
PARTITIONS = 2
TIMEOUT_S = 30.0
BROKER_CONFIG = {"group.initial.rebalance.delay.ms": "0", "offsets.topic.num.partitions": "1",
                 "auto.create.topics.enable": "false"}


@dataclass(frozen=True)
class Record:
    """What a test compares: the bytes a client wrote and where they were meant to go."""

    partition: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...] = ()
    timestamp: int | None = None


@dataclass(frozen=True)
class Read:
    """One record as a consuming client returned it."""

    partition: int
    offset: int
    key: bytes | None
    value: bytes | None
    headers: tuple[tuple[str, bytes], ...]
    timestamp: int

    def content(self) -> tuple[int, bytes | None, bytes | None, tuple[tuple[str, bytes], ...]]:
        return self.partition, self.key, self.value, self.headers


Start = str | int
"""Where a reader starts: "earliest", "latest", an offset, or "ts:<ms>" (a timestamp)."""


class Reader(Protocol):
    def wait_positioned(self) -> None:
        """Returns once the start position is resolved (matters for "latest")."""

    def read(self, count: int) -> list[Read]: ...

    def close(self) -> None: ...


class Client(Protocol):
    name: str
    uniform_headers: bool
    """kcat can only give every record of a run the same headers."""

    def produce(self, servers: str, topic: str, records: list[Record], codec: str,
                acks: str) -> None: ...

    def reader(self, servers: str, topic: str, partition: int, start: Start) -> Reader: ...


def _timestamp_of(start: Start) -> int | None:
    return int(start[3:]) if isinstance(start, str) and start.startswith("ts:") else None


def _deadline() -> float:
    return time.monotonic() + TIMEOUT_S


# ------------------------------------------------------------------ confluent-kafka


class ConfluentReader:
    def __init__(self, servers: str, topic: str, partition: int, start: Start) -> None:
        self.consumer = confluent_kafka.Consumer({
            "bootstrap.servers": servers, "group.id": "matrix-unused",
            "enable.auto.commit": False, "enable.partition.eof": True})
        tp = confluent_kafka.TopicPartition(topic, partition)
        timestamp = _timestamp_of(start)
        if start == "earliest":
            tp.offset = confluent_kafka.OFFSET_BEGINNING
        elif start == "latest":
            tp.offset = confluent_kafka.OFFSET_END
        elif timestamp is not None:
            tp.offset = timestamp
            tp = self.consumer.offsets_for_times([tp], timeout=TIMEOUT_S)[0]
            assert tp.error is None, tp.error
        else:
            assert isinstance(start, int)
            tp.offset = start
        self.consumer.assign([tp])
        self.pending: list[Read] = []

    def wait_positioned(self) -> None:
        """librdkafka reports partition EOF once it fetched at the resolved position."""
        deadline = _deadline()
        while time.monotonic() < deadline:
            message = self.consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF
                return
            self.pending.append(self._convert(message))
        raise AssertionError("librdkafka never reached the end of the partition")

    def read(self, count: int) -> list[Read]:
        received, self.pending = self.pending, []
        deadline = _deadline()
        while len(received) < count and time.monotonic() < deadline:
            message = self.consumer.poll(0.5)
            if message is None:
                continue
            if message.error() is not None:
                assert message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF
                continue
            received.append(self._convert(message))
        return received

    @staticmethod
    def _convert(message: Any) -> Read:
        headers = tuple((k, bytes(v)) for k, v in message.headers() or [])
        return Read(message.partition(), message.offset(), message.key(), message.value(),
                    headers, message.timestamp()[1])

    def close(self) -> None:
        self.consumer.close()


class ConfluentClient:
    name = "confluent-kafka"
    uniform_headers = False

    def produce(self, servers: str, topic: str, records: list[Record], codec: str,
                acks: str, idempotent: bool = False) -> None:
        errors: list[Any] = []
        producer = confluent_kafka.Producer({
            "bootstrap.servers": servers, "compression.type": codec, "acks": acks,
            "enable.idempotence": idempotent, "linger.ms": 5})
        for record in records:
            extra = {"timestamp": record.timestamp} if record.timestamp is not None else {}
            producer.produce(topic, value=record.value, key=record.key,
                             partition=record.partition, headers=list(record.headers),
                             on_delivery=lambda err, _msg: err and errors.append(err), **extra)
        assert producer.flush(TIMEOUT_S) == 0
        assert errors == []

    def reader(self, servers: str, topic: str, partition: int, start: Start) -> Reader:
        return ConfluentReader(servers, topic, partition, start)


# ------------------------------------------------------------------ kafka-python


class KafkaPythonReader:
    def __init__(self, servers: str, topic: str, partition: int, start: Start) -> None:
        self.consumer = kafka.KafkaConsumer(bootstrap_servers=servers,
                                            enable_auto_commit=False)
        self.tp = kafka.TopicPartition(topic, partition)
        self.consumer.assign([self.tp])
        timestamp = _timestamp_of(start)
        if start == "earliest":
            self.consumer.seek_to_beginning(self.tp)
        elif start == "latest":
            self.consumer.seek_to_end(self.tp)
        elif timestamp is not None:
            found = self.consumer.offsets_for_times({self.tp: timestamp})[self.tp]
            assert found is not None, f"no offset for timestamp {timestamp}"
            self.consumer.seek(self.tp, found.offset)
        else:
            assert isinstance(start, int)
            self.consumer.seek(self.tp, start)

    def wait_positioned(self) -> None:
        self.consumer.position(self.tp)

    def read(self, count: int) -> list[Read]:
        received: list[Read] = []
        deadline = _deadline()
        while len(received) < count and time.monotonic() < deadline:
            for messages in self.consumer.poll(timeout_ms=500).values():
                received.extend(
                    Read(m.partition, m.offset, m.key, m.value,
                         tuple((k, bytes(v)) for k, v in m.headers), m.timestamp)
                    for m in messages)
        return received

    def close(self) -> None:
        self.consumer.close()


class KafkaPythonClient:
    name = "kafka-python"
    uniform_headers = False

    def produce(self, servers: str, topic: str, records: list[Record], codec: str,
                acks: str) -> None:
        """acks=all keeps kafka-python 3's default idempotent producer; lower acks need
        idempotence off (it requires acks=all)."""
        options: dict[str, Any] = {} if acks == "all" else {"enable_idempotence": False,
                                                            "acks": int(acks)}
        producer = kafka.KafkaProducer(bootstrap_servers=servers, linger_ms=5,
                                       compression_type=None if codec == "none" else codec,
                                       **options)
        futures = [producer.send(topic, value=r.value, key=r.key, partition=r.partition,
                                 headers=list(r.headers), timestamp_ms=r.timestamp)
                   for r in records]
        for future in futures:
            future.get(timeout=TIMEOUT_S)
        producer.close(timeout=TIMEOUT_S)

    def reader(self, servers: str, topic: str, partition: int, start: Start) -> Reader:
        return KafkaPythonReader(servers, topic, partition, start)


# ------------------------------------------------------------------ aiokafka


class AiokafkaReader:
    """Drives aiokafka's consumer from synchronous test code on a private event loop."""

    def __init__(self, servers: str, topic: str, partition: int, start: Start) -> None:
        self.runner = asyncio.Runner()
        self.tp = aiokafka.TopicPartition(topic, partition)
        self.consumer = self.runner.run(self._open(servers, start))

    async def _open(self, servers: str, start: Start) -> Any:
        consumer = aiokafka.AIOKafkaConsumer(bootstrap_servers=servers,
                                             enable_auto_commit=False)
        await consumer.start()
        consumer.assign([self.tp])
        timestamp = _timestamp_of(start)
        if start == "earliest":
            await consumer.seek_to_beginning(self.tp)
        elif start == "latest":
            await consumer.seek_to_end(self.tp)
        elif timestamp is not None:
            found = (await consumer.offsets_for_times({self.tp: timestamp}))[self.tp]
            assert found is not None, f"no offset for timestamp {timestamp}"
            consumer.seek(self.tp, found.offset)
        else:
            consumer.seek(self.tp, start)
        return consumer

    def wait_positioned(self) -> None:
        self.runner.run(self.consumer.position(self.tp))

    def read(self, count: int) -> list[Read]:
        async def read() -> list[Read]:
            received: list[Read] = []
            deadline = _deadline()
            while len(received) < count and time.monotonic() < deadline:
                for messages in (await self.consumer.getmany(timeout_ms=500)).values():
                    received.extend(
                        Read(m.partition, m.offset, m.key, m.value,
                             tuple((k, bytes(v)) for k, v in m.headers), m.timestamp)
                        for m in messages)
            return received
        return self.runner.run(read())

    def close(self) -> None:
        self.runner.run(self.consumer.stop())
        self.runner.close()


class AiokafkaClient:
    name = "aiokafka"
    uniform_headers = False

    def produce(self, servers: str, topic: str, records: list[Record], codec: str,
                acks: str) -> None:
        async def produce() -> None:
            producer = aiokafka.AIOKafkaProducer(
                bootstrap_servers=servers, linger_ms=5, enable_idempotence=acks == "all",
                acks="all" if acks == "all" else int(acks),
                compression_type=None if codec == "none" else codec)
            await producer.start()
            try:
                futures = [await producer.send(topic, value=r.value, key=r.key,
                                               partition=r.partition,
                                               headers=list(r.headers),
                                               timestamp_ms=r.timestamp)
                           for r in records]
                await asyncio.gather(*futures)
            finally:
                await producer.stop()
        asyncio.run(asyncio.wait_for(produce(), TIMEOUT_S))

    def reader(self, servers: str, topic: str, partition: int, start: Start) -> Reader:
        return AiokafkaReader(servers, topic, partition, start)


# ------------------------------------------------------------------ kcat

KCAT_KEY_DELIMITER = b"\x02"
KCAT_MESSAGE_DELIMITER = b"\x03"
KCAT_FORMAT = "%p %o %T %K %S %h\n%k%s\n"
"""Lengths first, so keys and values stay binary-safe on the way out."""


class KcatReader:
    def __init__(self, servers: str, topic: str, partition: int, start: Start) -> None:
        timestamp = _timestamp_of(start)
        offset = ("beginning" if start == "earliest" else "end" if start == "latest"
                  else f"s@{timestamp}" if timestamp is not None else str(start))
        self.args = ["kcat", "-b", servers, "-C", "-t", topic, "-p", str(partition),
                     "-o", offset, "-f", KCAT_FORMAT]
        self.process: subprocess.Popen[bytes] | None = None
        if start == "latest":
            self.process = subprocess.Popen([*self.args, "-u"], stdout=subprocess.PIPE,
                                            stderr=subprocess.PIPE)
            self.watchdog = threading.Timer(2 * TIMEOUT_S, self.process.kill)
            self.watchdog.start()

    def wait_positioned(self) -> None:
        """kcat prints "Reached end of topic" once it fetched at the resolved offset."""
        assert self.process is not None and self.process.stderr is not None
        for line in self.process.stderr:
            if b"Reached end of topic" in line:
                return
        raise AssertionError("kcat exited before reaching the end of the partition")

    def read(self, count: int) -> list[Read]:
        if self.process is None:
            output = subprocess.run([*self.args, "-c", str(count), "-e", "-q"],
                                    capture_output=True, timeout=TIMEOUT_S, check=True).stdout
        else:
            output = self._read_running(count)
        return _parse_kcat(output)

    def _read_running(self, count: int) -> bytes:
        """The "latest" reader keeps running; stop it once ``count`` records arrived."""
        assert self.process is not None and self.process.stdout is not None
        output = b""
        deadline = _deadline()
        while len(_parse_kcat(output, partial=True)) < count and time.monotonic() < deadline:
            chunk = self.process.stdout.read1(65536)
            if not chunk:
                break
            output += chunk
        return output

    def close(self) -> None:
        if self.process is not None:
            self.watchdog.cancel()
            self.process.kill()
            self.process.communicate()


def _parse_kcat(output: bytes, partial: bool = False) -> list[Read]:
    reads: list[Read] = []
    pos = 0
    while pos < len(output):
        line_end = output.find(b"\n", pos)
        if line_end < 0:
            assert partial, output[pos:]
            break
        partition, offset, timestamp, key_size, value_size, *rest = (
            output[pos:line_end].decode().split(" ", 5))
        key_len, value_len = max(int(key_size), 0), max(int(value_size), 0)
        body = line_end + 1
        end = body + key_len + value_len + 1
        if end > len(output):
            assert partial
            break
        key = output[body:body + key_len] if int(key_size) >= 0 else None
        value = output[body + key_len:end - 1] if int(value_size) >= 0 else None
        headers = tuple((name, text.encode()) for name, text in
                        (pair.split("=", 1) for pair in rest[0].split(",") if pair)) if rest \
            else ()
        reads.append(Read(int(partition), int(offset), key, value, headers, int(timestamp)))
        pos = end
    return reads


class KcatClient:
    """kcat reads keys and values from stdin split on delimiters, so its records avoid the
    two delimiter bytes and empty values (``-Z`` turns empty into null); headers given
    with ``-H`` go on every record of a run."""

    name = "kcat"
    uniform_headers = True

    def produce(self, servers: str, topic: str, records: list[Record], codec: str,
                acks: str) -> None:
        acks_value = "-1" if acks == "all" else acks
        for partition in sorted({r.partition for r in records}):
            chosen = [r for r in records if r.partition == partition]
            headers = [arg for name, value in chosen[0].headers
                       for arg in ("-H", f"{name}={value.decode()}")]
            stdin = b"".join(_kcat_line(r) for r in chosen)
            subprocess.run(["kcat", "-b", servers, "-P", "-t", topic, "-p", str(partition),
                            "-K", r"\x02", "-D", r"\x03", "-Z", *headers,
                            "-X", f"compression.codec={codec}", "-X", f"acks={acks_value}"],
                           input=stdin, capture_output=True, timeout=TIMEOUT_S, check=True)

    def reader(self, servers: str, topic: str, partition: int, start: Start) -> Reader:
        return KcatReader(servers, topic, partition, start)


def _kcat_line(record: Record) -> bytes:
    key = b"" if record.key is None else record.key + KCAT_KEY_DELIMITER
    return key + (record.value or b"") + KCAT_MESSAGE_DELIMITER


# ------------------------------------------------------------------ fixtures and data

CLIENTS: list[Client] = [ConfluentClient(), KafkaPythonClient(), AiokafkaClient(), KcatClient()]
CLIENT_NAMES = [client.name for client in CLIENTS]


def reading_client(producer: Client) -> Client:
    """The next client in the list: every client reads another's records."""
    return CLIENTS[(CLIENTS.index(producer) + 1) % len(CLIENTS)]


def sample_records(uniform_headers: bool, count: int = 24) -> list[Record]:
    """Binary keys and values (NUL, newline, high bytes), null keys, tombstones, headers,
    spread over two partitions."""
    records = []
    for i in range(count):
        partition = i % PARTITIONS
        key = None if i % 6 == 0 else b"key-\x00\n\xff" + bytes([i + 16])
        value = None if i % 6 == 3 else bytes(range(4, 40)) * (i + 1) + b"\x00\n\xfe"
        if uniform_headers:
            headers: tuple[tuple[str, bytes], ...] = (("origin", b"kcat"), ("part", b"p"))
        else:
            headers = () if i % 4 == 1 else (("index", str(i).encode()), ("kind", b"matrix"))
        records.append(Record(partition, key, value, headers))
    return records


def by_partition(items: list[Any]) -> dict[int, list[Any]]:
    grouped: dict[int, list[Any]] = {}
    for item in items:
        grouped.setdefault(item.partition, []).append(item)
    return grouped


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=BROKER_CONFIG) as running:
        yield running


@pytest.fixture
def new_topic(cluster: EmbeddedCluster) -> Callable[..., str]:
    def create(partitions: int = PARTITIONS) -> str:
        name = f"matrix-{uuid.uuid4().hex[:10]}"
        cluster.create_topic(name, partitions)
        return name
    return create


def read_all(client: Client, servers: str, topic: str, start: Start,
             expected: dict[int, int]) -> list[Read]:
    """Every partition's records from ``start``; ``expected`` counts per partition."""
    reads: list[Read] = []
    for partition, count in sorted(expected.items()):
        reader = client.reader(servers, topic, partition, start)
        try:
            reads.extend(reader.read(count))
        finally:
            reader.close()
    return reads


@dataclass
class Stored:
    producer_ids: set[int] = field(default_factory=set)
    batches: int = 0


def stored_batches(cluster: EmbeddedCluster, topic: str, partition: int) -> Stored:
    log = cluster.brokers[0].replica_manager.partitions[(topic, partition)].log
    region = log.read(log.log_start_offset, 1 << 30)
    stored = Stored()
    for header in iter_batch_headers(region.read_bytes() if region is not None else b""):
        stored.batches += 1
        stored.producer_ids.add(header.producer_id)
    return stored


# ------------------------------------------------------------------ produce x codec x acks


@pytest.mark.parametrize("codec", CODECS)
@pytest.mark.parametrize("producer", CLIENTS, ids=CLIENT_NAMES)
def test_records_written_by_one_client_are_read_exactly_by_another(
        cluster: EmbeddedCluster, new_topic: Callable[..., str], producer: Client,
        codec: str) -> None:
    acks = ACKS[(CODECS.index(codec) + CLIENTS.index(producer)) % len(ACKS)]
    topic = new_topic()
    records = sample_records(producer.uniform_headers)
    producer.produce(cluster.bootstrap_servers, topic, records, codec, acks)

    consumer = reading_client(producer)
    expected = {p: len(rs) for p, rs in by_partition(records).items()}
    reads = read_all(consumer, cluster.bootstrap_servers, topic, "earliest", expected)

    for partition, written in by_partition(records).items():
        got = by_partition(reads).get(partition, [])
        assert [r.content() for r in got] == [
            (w.partition, w.key, w.value, w.headers) for w in written], \
            f"{producer.name} -> {consumer.name}, {codec}, acks={acks}, partition {partition}"
        assert [r.offset for r in got] == list(range(len(written)))


def test_idempotent_producers_write_producer_ids_and_read_back(
        cluster: EmbeddedCluster, new_topic: Callable[..., str]) -> None:
    """librdkafka with enable.idempotence and kafka-python 3's default producer (acks=all,
    idempotent, retries on) both get producer ids and lose or repeat nothing."""
    topic = new_topic()
    records = sample_records(uniform_headers=False, count=40)
    ConfluentClient().produce(cluster.bootstrap_servers, topic, records, "lz4", "all",
                              idempotent=True)
    KafkaPythonClient().produce(cluster.bootstrap_servers, topic, records, "zstd", "all")
    for partition in range(PARTITIONS):
        stored = stored_batches(cluster, topic, partition)
        assert -1 not in stored.producer_ids
        assert len(stored.producer_ids) == 2, "each producer has its own id"

    written = by_partition(records)
    expected = {p: 2 * len(rs) for p, rs in written.items()}
    reads = read_all(AiokafkaClient(), cluster.bootstrap_servers, topic, "earliest", expected)
    for partition, rs in written.items():
        contents = [(r.partition, r.key, r.value, r.headers) for r in rs]
        assert [r.content() for r in by_partition(reads)[partition]] == contents * 2


# ------------------------------------------------------------------ start positions


TIMESTAMP_BASE = 1_700_000_000_000


@pytest.fixture(scope="module")
def positioned_topic(cluster: EmbeddedCluster) -> tuple[str, list[Record]]:
    """One partition, ten records one second apart: the first five written by kafka-python
    one batch each, the last five in one lz4 batch by librdkafka (so a timestamp lookup
    must land inside a batch)."""
    topic = f"matrix-positions-{uuid.uuid4().hex[:8]}"
    cluster.create_topic(topic, 1)
    records = [Record(0, f"k{i}".encode(), f"v{i}".encode(), (),
                      TIMESTAMP_BASE + 1000 * i) for i in range(10)]
    for record in records[:5]:
        KafkaPythonClient().produce(cluster.bootstrap_servers, topic, [record], "none", "all")
    ConfluentClient().produce(cluster.bootstrap_servers, topic, records[5:], "lz4", "1")
    assert stored_batches(cluster, topic, 0).batches == 6
    return topic, records


@pytest.mark.parametrize(("start", "first"), [("earliest", 0), (6, 6),
                                              (f"ts:{TIMESTAMP_BASE + 3500}", 4),
                                              (f"ts:{TIMESTAMP_BASE + 7000}", 7)],
                         ids=["earliest", "offset", "timestamp-between", "timestamp-exact"])
@pytest.mark.parametrize("client", CLIENTS, ids=CLIENT_NAMES)
def test_read_from_a_start_position(cluster: EmbeddedCluster,
                                    positioned_topic: tuple[str, list[Record]],
                                    client: Client, start: Start, first: int) -> None:
    topic, records = positioned_topic
    reader = client.reader(cluster.bootstrap_servers, topic, 0, start)
    try:
        reads = reader.read(len(records) - first)
    finally:
        reader.close()
    assert [(r.offset, r.key, r.value, r.timestamp) for r in reads] == [
        (i, r.key, r.value, r.timestamp) for i, r in enumerate(records)][first:]


@pytest.mark.parametrize("client", CLIENTS, ids=CLIENT_NAMES)
def test_read_from_latest_sees_only_new_records(cluster: EmbeddedCluster,
                                                new_topic: Callable[..., str],
                                                client: Client) -> None:
    topic = new_topic(partitions=1)
    old = [Record(0, b"old", f"old-{i}".encode()) for i in range(5)]
    new = [Record(0, b"new", f"new-{i}".encode()) for i in range(3)]
    ConfluentClient().produce(cluster.bootstrap_servers, topic, old, "none", "1")
    reader = client.reader(cluster.bootstrap_servers, topic, 0, "latest")
    try:
        reader.wait_positioned()
        ConfluentClient().produce(cluster.bootstrap_servers, topic, new, "none", "1")
        reads = reader.read(len(new))
    finally:
        reader.close()
    assert [(r.offset, r.value) for r in reads] == [(5 + i, r.value)
                                                   for i, r in enumerate(new)]


# ------------------------------------------------------------------ metadata and admin


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
def test_kcat_and_confluent_metadata_agree(cluster: EmbeddedCluster,
                                           new_topic: Callable[..., str]) -> None:
    import json

    topic = new_topic(partitions=3)
    listing = json.loads(subprocess.run(["kcat", "-b", cluster.bootstrap_servers, "-L", "-J"],
                                        capture_output=True, timeout=TIMEOUT_S,
                                        check=True).stdout)
    broker = cluster.brokers[0]
    assert [b["name"] for b in listing["brokers"]] == [
        f"{broker.endpoint.host}:{broker.endpoint.port}"]
    kcat_topic = next(t for t in listing["topics"] if t["topic"] == topic)
    assert sorted(p["partition"] for p in kcat_topic["partitions"]) == [0, 1, 2]
    assert {p["leader"] for p in kcat_topic["partitions"]} == {listing["brokers"][0]["id"]}

    admin = confluent_admin.AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    metadata = admin.list_topics(timeout=TIMEOUT_S)
    assert sorted(metadata.topics[topic].partitions) == [0, 1, 2]
    assert list(metadata.brokers) == [listing["brokers"][0]["id"]]


def _topic_partitions(servers: str, topic: str) -> int | None:
    """Partition count of ``topic`` seen by kcat (an independent client), or None."""
    import json

    listing = json.loads(subprocess.run(["kcat", "-b", servers, "-L", "-J", "-t", topic],
                                        capture_output=True, timeout=TIMEOUT_S,
                                        check=True).stdout)
    for entry in listing["topics"]:
        if entry["topic"] == topic and entry.get("error") is None:
            return len(entry["partitions"])
    return None


def _confluent_admin(servers: str, create: str | None, delete: str | None) -> None:
    admin = confluent_admin.AdminClient({"bootstrap.servers": servers})
    futures = (admin.create_topics([confluent_admin.NewTopic(create, 3, 1)])
               if create else admin.delete_topics([delete]))
    for future in futures.values():
        future.result(TIMEOUT_S)


def _kafka_python_admin(servers: str, create: str | None, delete: str | None) -> None:
    admin = kafka.KafkaAdminClient(bootstrap_servers=servers)
    try:
        if create:
            admin.create_topics([kafka.admin.NewTopic(create, 3, 1)])
        else:
            admin.delete_topics([delete])
    finally:
        admin.close()


def _aiokafka_admin(servers: str, create: str | None, delete: str | None) -> None:
    from aiokafka.admin import AIOKafkaAdminClient, NewTopic

    async def run() -> None:
        admin = AIOKafkaAdminClient(bootstrap_servers=servers)
        await admin.start()
        try:
            if create:
                await admin.create_topics([NewTopic(create, 3, 1)])
            else:
                await admin.delete_topics([delete])
        finally:
            await admin.close()
    asyncio.run(asyncio.wait_for(run(), TIMEOUT_S))


@pytest.mark.skipif(shutil.which("kcat") is None, reason="kcat is not installed")
@pytest.mark.parametrize("admin", [_confluent_admin, _kafka_python_admin, _aiokafka_admin],
                         ids=["confluent-kafka", "kafka-python", "aiokafka"])
def test_admin_clients_create_and_delete_topics(cluster: EmbeddedCluster,
                                                admin: Callable[..., None]) -> None:
    servers = cluster.bootstrap_servers
    topic = f"matrix-admin-{uuid.uuid4().hex[:8]}"
    admin(servers, create=topic, delete=None)
    assert _topic_partitions(servers, topic) == 3
    admin(servers, create=None, delete=topic)
    assert _topic_partitions(servers, topic) is None
