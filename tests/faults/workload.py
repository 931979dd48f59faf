"""The workload of a fault run: idempotent acks=all producers that write unique values and
record every outcome, and the readers that collect everything back after the faults healed.

Two producer kinds run side by side: :class:`ConfluentWriter` (librdkafka) and
:class:`KafkaliteWriter` (this project's Producer). Each writes ``<name>-<n>`` values to
partition ``n % partitions`` at a bounded rate until stopped, and records a
:class:`~checker.Send` per value: acknowledged (with its offset), failed, or still unknown
when the writer was closed. :func:`read_back` reads every partition from its log start
offset to its high watermark; :func:`replica_batches` reads each replica's segment files
below the high watermark.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Iterable
from pathlib import Path

from checker import ACKED, FAILED, Batch, Send

from kafkalite.records.batch_header import iter_batch_headers

BATCH_BYTES = 8192
"""Producer batch size: below the retention scenario's segment size (a broker refuses a
batch larger than a segment)."""
SEND_INTERVAL_S = 0.004
"""Pause between two sends of one writer: a few hundred records per second each."""
CLOSE_TIMEOUT_S = 40.0
DELIVERY_TIMEOUT_MS = 30_000
"""How long a writer's client keeps trying a record before failing it (librdkafka's
message.timeout.ms, the Producer's delivery_timeout_ms). A record the client gives up on
while an earlier request of it may have been written is what librdkafka can write twice
(see the checker's "re-sent by the client")."""
REQUEST_TIMEOUT_MS = 10_000


class Writer(threading.Thread):
    """Base of the producer threads: numbering, rate, stop, and the shared record."""

    def __init__(self, name: str, bootstrap: str, topic: str, partitions: int,
                 max_records: int = 1_000_000,
                 delivery_timeout_ms: int = DELIVERY_TIMEOUT_MS) -> None:
        super().__init__(name=f"writer-{name}", daemon=True)
        self.writer = name
        self.bootstrap = bootstrap
        self.topic = topic
        self.partitions = partitions
        self.max_records = max_records
        self.delivery_timeout_ms = delivery_timeout_ms
        self.request_timeout_ms = min(REQUEST_TIMEOUT_MS, delivery_timeout_ms // 2)
        self.sends: list[Send] = []
        self.stopping = threading.Event()
        self.error = ""

    def run(self) -> None:
        """Sends until stopped. A client error (librdkafka's fatal idempotence errors, after
        the cluster lost acknowledged data, for one) ends the writer and is kept in
        :attr:`error`; its unanswered sends stay unknown."""
        try:
            self.open()
            count = 0
            while not self.stopping.is_set() and count < self.max_records:
                send = Send(self.writer, f"{self.writer}-{count}".encode(),
                            count % self.partitions, time.monotonic())
                self.sends.append(send)
                self.submit(send)
                count += 1
                self.stopping.wait(SEND_INTERVAL_S)
        except Exception as exc:
            self.error = f"{type(exc).__name__}: {exc}"
        try:
            self.close()
        except Exception as exc:
            self.error = self.error or f"{type(exc).__name__}: {exc}"

    def finish(self) -> list[Send]:
        """Stop sending, wait for outstanding answers (bounded), return the record."""
        self.stopping.set()
        self.join(CLOSE_TIMEOUT_S + 20)
        return self.sends

    @staticmethod
    def settle(send: Send, offset: int | None, error: object) -> None:
        send.done_at = time.monotonic()
        if error is None and offset is not None and offset >= 0:
            send.outcome, send.offset = ACKED, offset
        else:
            send.outcome, send.error = FAILED, str(error)

    def open(self) -> None:
        raise NotImplementedError

    def submit(self, send: Send) -> None:
        raise NotImplementedError

    def close(self) -> None:
        raise NotImplementedError


class ConfluentWriter(Writer):
    def open(self) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({
            "bootstrap.servers": self.bootstrap, "acks": "all", "enable.idempotence": True,
            "linger.ms": 5, "batch.size": BATCH_BYTES, "message.timeout.ms": self.delivery_timeout_ms,
            "request.timeout.ms": self.request_timeout_ms,
            "retry.backoff.ms": 100, "topic.metadata.refresh.interval.ms": 1000})

    def submit(self, send: Send) -> None:
        def delivered(error: object, message: object) -> None:
            self.settle(send, message.offset() if error is None else None,  # type: ignore[attr-defined]
                        error)
        while True:
            try:
                self.producer.produce(self.topic, send.value, partition=send.partition,
                                      on_delivery=delivered)
                break
            except BufferError:
                self.producer.poll(0.1)
        self.producer.poll(0)

    def close(self) -> None:
        if hasattr(self, "producer"):
            self.producer.flush(CLOSE_TIMEOUT_S)


class KafkaliteWriter(Writer):
    def open(self) -> None:
        from kafkalite import Producer

        self.producer = Producer(bootstrap_servers=self.bootstrap, acks="all",
                                 enable_idempotence=True, linger_ms=5, batch_size=BATCH_BYTES,
                                 delivery_timeout_ms=self.delivery_timeout_ms,
                                 request_timeout_ms=self.request_timeout_ms,
                                 retry_backoff_ms=100, metadata_max_age_ms=1000)

    def submit(self, send: Send) -> None:
        future = self.producer.send(self.topic, send.value, partition=send.partition)
        future.add_callback(lambda metadata: self.settle(send, metadata.offset, None))
        future.add_errback(lambda error: self.settle(send, None, error))

    def close(self) -> None:
        if hasattr(self, "producer"):
            self.producer.flush(CLOSE_TIMEOUT_S)
            self.producer.close(5)


WRITERS = {"confluent": ConfluentWriter, "kafkalite": KafkaliteWriter}


class Workload:
    """Starts one writer of each kind (or the kinds given) and collects their sends."""

    def __init__(self, bootstrap: str, topic: str, partitions: int, *,
                 delivery_timeout_ms: int = DELIVERY_TIMEOUT_MS,
                 kinds: Iterable[str] = ("confluent", "kafkalite")) -> None:
        self.writers = [WRITERS[kind](kind, bootstrap, topic, partitions,
                                      delivery_timeout_ms=delivery_timeout_ms)
                        for kind in kinds]

    def start(self) -> Workload:
        for writer in self.writers:
            writer.start()
        return self

    def acked(self) -> int:
        return sum(s.outcome == ACKED for w in self.writers for s in list(w.sends))

    def wait_acked(self, more: int, timeout: float = 30.0) -> None:
        """Waits until ``more`` further sends were acknowledged (progress under faults)."""
        target = self.acked() + more
        deadline = time.monotonic() + timeout
        while self.acked() < target and time.monotonic() < deadline:
            time.sleep(0.05)
        if self.acked() < target:
            raise AssertionError(f"writers made no progress: {self.acked()} < {target}")

    def finish(self) -> list[Send]:
        for writer in self.writers:
            writer.stopping.set()
        return [send for writer in self.writers for send in writer.finish()]

    def errors(self) -> list[str]:
        """Errors that ended a writer early, named by writer."""
        return [f"{w.writer}: {w.error}" for w in self.writers if w.error]


def read_back(bootstrap: str, topic: str, partitions: int, timeout: float = 60.0
              ) -> tuple[dict[int, list[tuple[int, bytes]]], dict[int, int]]:
    """Every record of every partition from its log start offset to its high watermark, and
    the log start offsets once the reading is done. Reads with librdkafka, assigned (no
    group)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fault-audit",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest",
                         "enable.partition.eof": False})
    try:
        marks = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)
                 for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        reads: dict[int, list[tuple[int, bytes]]] = {p: [] for p in range(partitions)}
        next_offset = {p: low for p, (low, _high) in marks.items()}
        deadline = time.monotonic() + timeout
        while any(next_offset[p] < marks[p][1] for p in reads):
            if time.monotonic() > deadline:
                raise AssertionError(f"read back stopped at {next_offset}, marks {marks}")
            message = consumer.poll(0.5)
            if message is None or message.error() is not None:
                continue
            reads[message.partition()].append((message.offset(), message.value()))
            next_offset[message.partition()] = message.offset() + 1
        # Retention may delete segments while this reads (F14 runs it on purpose): what went
        # below the log start offset meanwhile was deleted, not lost.
        after = {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[0]
                 for p in range(partitions)}
        return reads, {p: max(low, after[p]) for p, (low, _high) in marks.items()}
    finally:
        consumer.close()


def high_watermarks(bootstrap: str, topic: str, partitions: int) -> dict[int, int]:
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "fault-audit"})
    try:
        return {p: consumer.get_watermark_offsets(TopicPartition(topic, p), timeout=20)[1]
                for p in range(partitions)}
    finally:
        consumer.close()


def replica_batches(partition_dir: Path, below: int) -> list[Batch]:
    """The batches of one replica's segment files whose offsets all lie below ``below``, in
    offset order (segment boundaries may differ between replicas; batches may not)."""
    batches = []
    for segment in sorted(partition_dir.glob("*.log")):
        data = segment.read_bytes()
        for header in iter_batch_headers(data):
            if header.last_offset >= below:
                break
            batches.append(Batch(header.base_offset, header.last_offset,
                                 data[header.position:header.position + header.size]))
    return batches
