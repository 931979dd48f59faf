"""The sender: turns sendable batches into one Produce request per broker and handles replies.

It runs as a poll hook on the client's I/O thread. Each round it expires batches past
``delivery_timeout_ms``, asks the accumulator which leaders have sendable data, drains up to
``max_request_size`` per leader, builds (and compresses) the batches and sends them.

Errors: a retriable error (NOT_LEADER_OR_FOLLOWER, UNKNOWN_TOPIC_OR_PARTITION, a lost
connection, ...) puts the batch back at the head of its partition to retry after
``retry_backoff_ms``, re-routed to whatever leader the metadata names by then; errors that
invalidate metadata also trigger an immediate refresh. A batch fails with the broker's typed
error when the error is not retriable, ``retries`` are used up, or retrying would pass its
delivery deadline: so a record is never silently lost and never retried forever.

Ordering: with idempotence (or ``max_in_flight_requests_per_connection=1``) a partition has at
most one batch in flight, and retried batches keep their sequence numbers, so records stay in
order and a retry after a lost reply is deduplicated by the broker. A stamped batch that fails
leaves its partition's sequence unknown: the producer bumps its epoch and starts over (see
:mod:`kafkalite.producer.idempotence`); nothing is drained until the new identity is in.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Mapping
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.errors import KafkaConnectionError, KafkaError
from kafkalite.producer.accumulator import RecordAccumulator
from kafkalite.producer.batch import BatchResult, ProducerBatch
from kafkalite.producer.idempotence import IdempotenceState, State
from kafkalite.producer.transactions import TransactionManager
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    DuplicateSequenceNumberError,
    InvalidProducerEpochError,
    NetworkError,
    ProducerFencedError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)

_FENCED = (ProducerFencedError.errno, InvalidProducerEpochError.errno)


def record_magic_for(produce_version: int) -> int:
    """Produce v3+ carries RecordBatch v2; v2 message format 1; v0-1 message format 0."""
    return 2 if produce_version >= 3 else 1 if produce_version == 2 else 0


class SenderMetrics:
    """Counters the producer's ``metrics()`` reports."""

    def __init__(self) -> None:
        self.requests = 0
        self.batches = 0
        self.records = 0
        self.bytes = 0
        self.retries = 0
        self.errors = 0
        self.expired = 0
        self.epoch_bumps = 0
        self.uncompressed_bytes = 0
        """The batches' records before compression (``bytes`` counts them as sent)."""
        self.answered = 0
        """Produce requests answered, with their summed and longest latency (seconds)."""
        self.latency_total = 0.0
        self.latency_max = 0.0
        self.throttle_max_ms = 0

    def as_dict(self) -> dict[str, float]:
        return dict(vars(self))

    def answered_after(self, latency: float, throttle_ms: int) -> None:
        self.answered += 1
        self.latency_total += latency
        self.latency_max = max(self.latency_max, latency)
        self.throttle_max_ms = max(self.throttle_max_ms, throttle_ms)


class Sender:
    """See the module docstring; every method runs on the I/O thread."""

    def __init__(self, client: KafkaClient, accumulator: RecordAccumulator,
                 config: Mapping[str, Any], clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._accumulator = accumulator
        self._acks: int = config["acks"]
        self._retries: int = config["retries"]
        self._timeout_ms: int = config["request_timeout_ms"]
        self._max_request_size: int = config["max_request_size"]
        self._retry_backoff = config["retry_backoff_ms"] / 1000
        self._idempotent: bool = config["enable_idempotence"]
        self._max_in_flight: int = config["max_in_flight_requests_per_connection"]
        self._guarantee_order = (self._idempotent
                                 or config["max_in_flight_requests_per_connection"] == 1)
        self._clock = clock
        self.metrics = SenderMetrics()
        self.idempotence = IdempotenceState()
        self.transactions: TransactionManager | None = None
        """Set for a transactional producer: its driver supplies the producer id."""
        self._init_retry_at = 0.0
        self._fatal_error: BaseException | None = None
        self.force_close = False

    @property
    def cluster(self) -> Any:
        return self._client.cluster

    def run_once(self) -> float | None:
        """One round; returns the monotonic time the sender next needs to run, if any."""
        now = self._clock()
        for batch in self._accumulator.expire():
            self.metrics.expired += 1
            self._fail(batch, self._client.timeout_error(
                f"{batch!r} expired: not delivered within delivery_timeout_ms"))
        if self._fatal_error is not None:
            for batch in self._accumulator.abort_all():
                self._fail(batch, self._fatal_error)
            return None
        if self._idempotent and not self.idempotence.ready:
            return None if self.transactions is not None else self._init_producer_id(now)
        # Drain again until nothing more can go (each round sends one request per ready
        # node, so max_in_flight rounds fill every window): the requests then leave
        # together before the next select instead of one per loop turn.
        for _ in range(self._max_in_flight):
            check = self._accumulator.ready(self.cluster)
            if check.unknown_leaders:
                self.cluster.request_update()
            wake = check.next_check
            nodes = set()
            for node in check.ready_nodes:
                if self._client.ready(node):
                    nodes.add(node)
                else:  # connecting, in backoff or at max in flight: a socket event or
                    retry_at = now + self._retry_backoff  # this retry time wakes us
                    wake = retry_at if wake is None else min(wake, retry_at)
            if not nodes:
                return wake
            drained = self._accumulator.drain(self.cluster, nodes, self._max_request_size)
            if not drained:
                return wake
            for node, batches in drained.items():
                self._send_produce(node, batches)
        return now  # more may be sendable (a request failed at once, say): look again soon

    # -- idempotence -----------------------------------------------------------------------

    @property
    def producer_id(self) -> int:
        return self.idempotence.identity.producer_id

    @property
    def producer_epoch(self) -> int:
        return self.idempotence.identity.epoch

    def _init_producer_id(self, now: float) -> float | None:
        """Ask for a producer id, or for an epoch bump, unless that is under way."""
        if not self.idempotence.needs_request:
            return None
        if now < self._init_retry_at:
            return self._init_retry_at
        node = self._client.least_loaded_node()
        if node is None or not self._client.ready(node):
            return now + self._retry_backoff
        body = self.idempotence.request_body(
            self._client.api_version(node, ApiKey.INIT_PRODUCER_ID))
        future = self._client.send(node, ApiKey.INIT_PRODUCER_ID, body)
        future.add_callback(self._on_producer_id)
        future.add_errback(self._on_producer_id_failure)
        return None

    def _on_producer_id(self, body: dict[str, Any]) -> None:
        error = body["error_code"]
        if error:
            self._on_producer_id_failure(error_for_code(error)("InitProducerId"))
            return
        bumping = self.idempotence.state is State.BUMPING
        self.idempotence.identity_received(body["producer_id"], body["producer_epoch"])
        self.metrics.epoch_bumps = self.idempotence.bumps
        log.log(logging.INFO if bumping else logging.DEBUG,
                "idempotent producer now has id %d epoch %d", body["producer_id"],
                body["producer_epoch"])

    def _on_producer_id_failure(self, error: BaseException) -> None:
        retriable = bool(getattr(error, "retriable", False))
        fenced = getattr(error, "errno", None) in _FENCED
        self.idempotence.request_failed(retriable=retriable, fenced=fenced)
        if self.idempotence.state is State.FATAL:
            log.error("idempotent producer cannot get a producer id: %s", error)
            self._fatal_error = error
        elif retriable:
            self._init_retry_at = self._clock() + self._retry_backoff
        else:
            log.warning("epoch bump refused (%s): asking for a new producer id", error)

    # -- produce ---------------------------------------------------------------------------

    def _send_produce(self, node: int, batches: list[ProducerBatch]) -> None:
        version = self._client.api_version(node, ApiKey.PRODUCE)
        magic = record_magic_for(version)
        self._accumulator.magic = min(self._accumulator.magic, magic)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        sending: dict[TopicPartition, ProducerBatch] = {}
        for batch in batches:
            if batch.builder.magic > magic:
                self._fail(batch, UnsupportedVersionError(
                    f"node {node} speaks Produce v{version}, too old for record format "
                    f"v{batch.builder.magic}"))
                continue
            if self._idempotent and not batch.is_closed:
                batch.set_producer_state(*self.idempotence.stamp(batch.tp, batch.record_count))
                if self.transactions is not None:
                    batch.builder.is_transactional = True  # type: ignore[attr-defined]
            self.metrics.uncompressed_bytes += batch.builder.size_in_bytes
            records = batch.close()
            if self._guarantee_order:
                self._accumulator.mute(batch.tp)
            sending[batch.tp] = batch
            by_topic.setdefault(batch.tp.topic, []).append(
                {"index": batch.tp.partition, "records": records})
            self.metrics.bytes += len(records)
            self.metrics.records += batch.record_count
        if not sending:
            return
        self.metrics.requests += 1
        self.metrics.batches += len(sending)
        body = {
            # A broker verifies (KIP-890) with this id that a transactional batch's
            # partition was added to the transaction.
            "transactional_id": (None if self.transactions is None
                                 else self.transactions.transactional_id),
            "acks": self._acks,
            "timeout_ms": self._timeout_ms,
            "topic_data": [{"name": topic, "partition_data": parts}
                           for topic, parts in by_topic.items()],
        }
        future = self._client.send(node, ApiKey.PRODUCE, body, expect_response=self._acks != 0)
        future.add_callback(self._on_produce_response, node, sending)
        future.add_errback(self._on_produce_failure, node, sending)
        if self._acks != 0:
            future.add_callback(self._produce_answered, self._clock())

    def _produce_answered(self, sent_at: float, body: dict[str, Any]) -> None:
        self.metrics.answered_after(self._clock() - sent_at, body.get("throttle_time_ms", 0))

    def _on_produce_response(self, node: int, sending: dict[TopicPartition, ProducerBatch],
                             body: dict[str, Any]) -> None:
        if self._acks == 0:
            for batch in sending.values():
                self._complete(batch, BatchResult(-1))
            return
        for topic in body["responses"]:
            for part in topic["partition_responses"]:
                tp = TopicPartition(topic["name"], part["index"])
                if tp not in sending:
                    continue
                batch = sending.pop(tp)
                error = part["error_code"]
                if error == 0:
                    self._complete(batch, BatchResult(part["base_offset"],
                                                      part["log_append_time_ms"],
                                                      part["log_start_offset"]))
                elif error == DuplicateSequenceNumberError.errno:
                    self._complete(batch, BatchResult(-1))  # already written: a success
                else:
                    message = part.get("error_message")
                    self._retry_or_fail(batch, error_for_code(error)(
                        f"produce to {topic['name']}-{part['index']} on node {node}"
                        + (f": {message}" if message else "")))
        for batch in sending.values():  # a partition the broker did not answer for
            self._retry_or_fail(batch, NetworkError(f"node {node} did not answer for {batch!r}"))

    def _on_produce_failure(self, node: int, sending: dict[TopicPartition, ProducerBatch],
                            error: BaseException) -> None:
        if not isinstance(error, KafkaError):
            error = KafkaConnectionError(f"produce to node {node}: {error!r}")
        for batch in sending.values():
            self._retry_or_fail(batch, error)

    def _retry_or_fail(self, batch: ProducerBatch, error: BaseException) -> None:
        self._accumulator.unmute(batch.tp)
        if getattr(error, "invalid_metadata", False):
            self.cluster.request_update()
        deadline = self._accumulator.delivery_deadline(batch)
        if (getattr(error, "retriable", False) and not self.force_close
                and batch.attempts < self._retries
                and self._clock() + self._retry_backoff < deadline):
            log.debug("retrying %r after %s", batch, error)
            self.metrics.retries += 1
            self._accumulator.reenqueue(batch)
            return
        self.metrics.errors += 1
        self._fail(batch, error)

    def _complete(self, batch: ProducerBatch, result: BatchResult) -> None:
        self._accumulator.unmute(batch.tp)
        self._accumulator.deallocate(batch)
        batch.future.success(result)

    def _fail(self, batch: ProducerBatch, error: BaseException) -> None:
        self._accumulator.unmute(batch.tp)
        self._accumulator.deallocate(batch)
        if self._idempotent:  # the broker may or may not have written it: start over
            self.idempotence.batch_failed(*batch.producer_identity)
        if self.transactions is not None:
            self.transactions.batch_failed(error)
        if not batch.future.is_done():
            batch.future.failure(error)

    def abort(self, error: BaseException) -> None:
        """Fail every batch still queued (forced close); in-flight ones fail with the client."""
        self.force_close = True
        for batch in self._accumulator.abort_all():
            self._fail(batch, error)
