"""Our Consumer's isolation levels against transactions written by librdkafka's producer
into librdkafka's mock cluster (real transactional batches and real commit/abort markers).

The mock's Fetch handler never fills ``aborted_transactions`` (it always sends an empty
list, and a last stable offset equal to the high watermark), so with the bare mock even
librdkafka's own read_committed consumer returns aborted records. To exercise the abort
filtering, :class:`AbortedIndex` plays the part of a real broker's transaction index: it
adds to each Fetch response the ``(producer_id, first_offset)`` entries Kafka would send,
the aborted transactions whose offset range overlaps the fetched range.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any

import confluent_kafka
import pytest

from kafkalite import Consumer
from kafkalite.protocol import ApiKey
from kafkalite.records import iter_batches
from kafkalite.structs import TopicPartition

pytestmark = pytest.mark.compat

TOPIC = "transactions"
PARTITIONS = (0, 1)
Read = tuple[int, int, bytes]  # (partition, offset, value)


@dataclass(frozen=True)
class Written:
    partition: int
    offset: int
    value: bytes
    aborted: bool


@dataclass(frozen=True)
class AbortedTransaction:
    partition: int
    first_offset: int
    last_offset: int  # the abort marker's offset


@dataclass
class Log:
    records: list[Written] = field(default_factory=list)
    aborted: list[AbortedTransaction] = field(default_factory=list)


class Writer:
    """One confluent-kafka producer whose delivery reports land in a shared :class:`Log`."""

    def __init__(self, bootstrap: str, log: Log, transactional_id: str | None = None) -> None:
        config: dict[str, Any] = {"bootstrap.servers": bootstrap, "linger.ms": 0,
                                  "log_level": 3}
        if transactional_id:
            config["transactional.id"] = transactional_id
        self.producer = confluent_kafka.Producer(config)
        self.log = log
        self.aborting = False
        self.first_offsets: dict[int, int] = {}  # of the open transaction, by partition
        if transactional_id:
            self.producer.init_transactions(10)

    def send(self, partition: int, value: bytes) -> None:
        """Produce and wait for the offset, so the log holds the order the broker assigned."""
        offsets: list[int] = []

        def delivered(error: Any, message: Any) -> None:
            assert error is None, error
            offsets.append(message.offset())

        self.producer.produce(TOPIC, value, partition=partition, on_delivery=delivered)
        assert self.producer.flush(10) == 0
        self.log.records.append(Written(partition, offsets[0], value, self.aborting))
        self.first_offsets.setdefault(partition, offsets[0])

    def begin(self, *, will_abort: bool = False) -> None:
        self.aborting = will_abort
        self.first_offsets = {}
        self.producer.begin_transaction()

    def commit(self) -> None:
        self.producer.commit_transaction(10)

    def abort(self, probe: confluent_kafka.Consumer) -> None:
        """Abort, noting each touched partition's range: first record to abort marker."""
        self.producer.abort_transaction(10)
        for partition, first in self.first_offsets.items():
            _, end = probe.get_watermark_offsets(
                confluent_kafka.TopicPartition(TOPIC, partition), timeout=10, cached=False)
            self.log.aborted.append(AbortedTransaction(partition, first, end - 1))


class AbortedIndex:
    """Adds what a real broker's Fetch response carries and the mock's leaves out.

    Entries are taken for each aborted transaction whose range overlaps the fetched range,
    as Kafka does; the producer id is read from the transaction's first batch, which a
    consumer reading forwards always fetches before (or with) the rest of it.
    """

    def __init__(self, aborted: list[AbortedTransaction]) -> None:
        self.aborted = aborted
        self.producer_ids: dict[tuple[int, int], int] = {}
        self.injected = 0

    def install(self, consumer: Consumer) -> None:
        client = consumer._client
        send = client.send

        def send_and_amend(node: int, api_key: int, body: Any, **kwargs: Any) -> Any:
            future = send(node, api_key, body, **kwargs)
            if api_key == ApiKey.FETCH:
                offsets = {(t["topic"], p["partition"]): p["fetch_offset"]
                           for t in body["topics"] for p in t["partitions"]}
                names = {t["topic_id"]: t["topic"] for t in body["topics"]}  # Fetch v13+
                future.add_callback(self.amend, offsets, names)  # before the fetcher's
            return future

        client.send = send_and_amend  # type: ignore[method-assign,assignment]

    def amend(self, offsets: dict[tuple[str, int], int], names: dict[Any, str],
              response: dict[str, Any]) -> None:
        for topic in response["responses"]:
            name = topic["topic"] or names[topic["topic_id"]]
            for part in topic["partitions"]:
                partition = part["partition_index"]
                fetch_offset = offsets[(name, partition)]
                last_fetched = -1
                for batch in iter_batches(part["records"] or b""):
                    self.producer_ids[(partition, batch.base_offset)] = batch.producer_id
                    last_fetched = batch.last_offset
                entries = [
                    {"producer_id": self.producer_ids[(partition, a.first_offset)],
                     "first_offset": a.first_offset}
                    for a in self.aborted
                    if a.partition == partition and a.last_offset >= fetch_offset
                    and a.first_offset <= last_fetched]
                part["aborted_transactions"] = entries
                self.injected += len(entries)


@pytest.fixture(scope="module")
def cluster(mock_cluster_factory: Callable[[int], str]) -> Iterator[tuple[str, Log]]:
    """A 1-broker mock cluster holding interleaved committed, aborted and plain writes.

    Producer A's aborted transaction spans both partitions and has a plain record and a
    committed transaction of producer B inside its range; both partitions end with a
    commit marker (a trailing control batch).
    """
    bootstrap = mock_cluster_factory(1)
    log = Log()
    a = Writer(bootstrap, log, "txn-a")
    b = Writer(bootstrap, log, "txn-b")
    plain = Writer(bootstrap, log)
    probe = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "probe",
                                      "log_level": 3})
    a.begin()
    a.send(0, b"a-committed-1")
    a.send(0, b"a-committed-2")
    a.send(1, b"a-committed-3")
    a.commit()
    plain.send(0, b"plain-1")
    a.begin(will_abort=True)
    a.send(0, b"a-aborted-1")
    a.send(1, b"a-aborted-2")
    plain.send(0, b"plain-2")
    b.begin()
    b.send(0, b"b-committed-1")
    a.send(0, b"a-aborted-3")
    a.abort(probe)
    b.commit()
    plain.send(1, b"plain-3")
    a.begin()
    a.send(0, b"a-committed-4")
    a.send(1, b"a-committed-5")
    a.commit()
    probe.close()
    del a, b, plain  # gone before the cluster, so they do not log reconnect failures
    yield bootstrap, log


def read_ours(bootstrap: str, isolation_level: str, end: dict[int, int],
              index: AbortedIndex | None = None) -> tuple[list[Read], dict[int, int]]:
    """Everything up to each partition's end, and the positions reached."""
    consumer = Consumer(bootstrap_servers=bootstrap, isolation_level=isolation_level,
                        auto_offset_reset="earliest", enable_auto_commit=False)
    if index is not None:
        index.install(consumer)
    tps = [TopicPartition(TOPIC, p) for p in PARTITIONS]
    consumer.assign(tps)
    reads: list[Read] = []
    deadline = time.monotonic() + 10
    try:
        while any(consumer.position(tp) < end[tp.partition] for tp in tps):
            assert time.monotonic() < deadline, f"stalled at {[consumer.position(tp) for tp in tps]}"
            for records in consumer.poll(timeout_ms=100).values():
                reads.extend((r.partition, r.offset, r.value) for r in records)
        positions = {tp.partition: consumer.position(tp) for tp in tps}
    finally:
        consumer.close()
    return reads, positions


def read_librdkafka(bootstrap: str, isolation_level: str,
                    end: dict[int, int]) -> tuple[list[Read], dict[int, int]]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"oracle-{isolation_level}",
        "isolation.level": isolation_level, "enable.auto.commit": False, "log_level": 3})
    tps = [confluent_kafka.TopicPartition(TOPIC, p, 0) for p in PARTITIONS]
    consumer.assign(tps)
    reads: list[Read] = []
    deadline = time.monotonic() + 10

    def positions() -> dict[int, int]:
        return {tp.partition: tp.offset for tp in consumer.position(tps)}

    try:
        while any(positions()[p] < end[p] for p in PARTITIONS):
            assert time.monotonic() < deadline, f"stalled at {positions()}"
            message = consumer.poll(0.1)
            if message is not None:
                assert not message.error(), message.error()
                partition, offset, value = message.partition(), message.offset(), message.value()
                assert partition is not None and offset is not None and value is not None
                reads.append((partition, offset, value))
        return reads, positions()
    finally:
        consumer.close()


def end_offsets(bootstrap: str) -> dict[int, int]:
    consumer = confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": "ends",
                                         "log_level": 3})
    try:
        return {p: consumer.get_watermark_offsets(
            confluent_kafka.TopicPartition(TOPIC, p), timeout=10)[1] for p in PARTITIONS}
    finally:
        consumer.close()


def in_order(reads: list[Read]) -> dict[int, list[tuple[int, bytes]]]:
    return {p: [(o, v) for q, o, v in reads if q == p] for p in PARTITIONS}


def expected(log: Log, *, with_aborted: bool) -> dict[int, list[tuple[int, bytes]]]:
    kept = sorted((w.partition, w.offset, w.value) for w in log.records
                  if with_aborted or not w.aborted)
    return in_order(kept)


def test_the_log_has_markers_inside_and_after_the_data(cluster: tuple[str, Log]) -> None:
    """Preconditions for the other tests: gaps left by markers, trailing markers at the end."""
    bootstrap, log = cluster
    end = end_offsets(bootstrap)
    for partition in PARTITIONS:
        offsets = [w.offset for w in log.records if w.partition == partition]
        assert max(offsets) + 1 < end[partition]  # a control batch after the last record
        assert len(offsets) < end[partition] - min(offsets)  # and markers in between
    assert {a.partition for a in log.aborted} == set(PARTITIONS)


def test_read_uncommitted_returns_aborted_records_but_no_markers(
        cluster: tuple[str, Log]) -> None:
    bootstrap, log = cluster
    end = end_offsets(bootstrap)
    reads, positions = read_ours(bootstrap, "read_uncommitted", end)
    assert in_order(reads) == expected(log, with_aborted=True)
    assert positions == end
    oracle_reads, oracle_positions = read_librdkafka(bootstrap, "read_uncommitted", end)
    assert in_order(oracle_reads) == in_order(reads)
    assert oracle_positions == end


def test_read_committed_skips_aborted_transactions(cluster: tuple[str, Log]) -> None:
    bootstrap, log = cluster
    end = end_offsets(bootstrap)
    index = AbortedIndex(log.aborted)
    reads, positions = read_ours(bootstrap, "read_committed", end, index)
    assert index.injected > 0
    assert in_order(reads) == expected(log, with_aborted=False)
    assert positions == end


def test_read_committed_matches_librdkafka_on_the_same_responses(
        cluster: tuple[str, Log]) -> None:
    """Without the index both clients see the mock's empty aborted list: same records (the
    aborted ones included), no markers, and both positions past the trailing markers."""
    bootstrap, _ = cluster
    end = end_offsets(bootstrap)
    reads, positions = read_ours(bootstrap, "read_committed", end)
    oracle_reads, oracle_positions = read_librdkafka(bootstrap, "read_committed", end)
    assert in_order(reads) == in_order(oracle_reads)
    assert positions == oracle_positions == end
