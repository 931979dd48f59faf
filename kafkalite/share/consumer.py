"""The ShareConsumer: a member of a share group (KIP-932, "queues for Kafka").

Where a consumer group gives each partition to one member, a share group gives every
member every partition of its subscription and hands each *record* to one member at a
time: several share consumers on one partition share its records. Each record a poll
returns is locked for the member for the group's ``share.record.lock.duration.ms``; the
member acknowledges it (accept, release, reject), or the lock expires and it goes to
someone else, at most ``group.share.delivery.count.limit`` times.

Modelled on confluent-kafka's ShareConsumer, with kafka-python's snake_case settings:

- ``share_acknowledgement_mode="implicit"`` (default): the records of a poll are accepted
  by the next ``poll()``, ``commit_sync()``, ``commit_async()`` or ``close()``.
- ``"explicit"``: each record is acknowledged with :meth:`ShareConsumer.acknowledge`; a
  poll before every record of the last one was acknowledged raises IllegalStateError.

Acknowledgements travel with the next fetch to the partition's leader, or at once with a
commit. Heartbeats run on the client's I/O thread. Not thread-safe: use it from one thread.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from types import TracebackType
from typing import Any

from kafkalite.client.client import CLIENT_DEFAULTS, KafkaClient
from kafkalite.errors import IllegalStateError, KafkaError
from kafkalite.record_iteration import RecordIterator
from kafkalite.share.acknowledgements import AcknowledgeType
from kafkalite.share.config import EXPLICIT, validate_share_consumer_config
from kafkalite.share.fetcher import AckResults, ShareFetcher, ShareRecord
from kafkalite.share.membership import ShareMembership
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)

AcknowledgementCallback = Callable[[dict[TopicPartition, set[int]], KafkaError | None], None]
"""``callback(offsets, error)``: the offsets of one partition's acknowledgements and their
outcome (None: the broker took them), as confluent-kafka calls it."""

_WAIT_STEP_S = 0.5


class ShareConsumer:
    """Reads records as a member of a share group.

    >>> with ShareConsumer("orders", bootstrap_servers="localhost:9092",
    ...                    group_id="workers") as consumer:
    ...     for record in consumer:
    ...         handle(record.value)   # accepted by the next poll

    ``config`` takes kafka-python-style names: ``group_id`` (required),
    ``share_acknowledgement_mode``, ``max_poll_records``, ``fetch_max_wait_ms``,
    ``key_deserializer`` ... and every client setting (security, timeouts); unknown names
    raise :class:`~kafkalite.errors.ConfigError`. ``consumer_timeout_ms`` ends iteration
    after that long without records (default: iterate forever).
    """

    def __init__(self, *topics: str, bootstrap_servers: str | Sequence[str] = "localhost:9092",
                 consumer_timeout_ms: float | None = None, **config: Any) -> None:
        self.config = validate_share_consumer_config({"bootstrap_servers": bootstrap_servers,
                                                      **config})
        self._records: RecordIterator[ShareRecord] = RecordIterator(
            lambda timeout_ms: self.poll(timeout_ms=timeout_ms), lambda: self._closed,
            consumer_timeout_ms)
        self._explicit = self.config["share_acknowledgement_mode"] == EXPLICIT
        self._client = KafkaClient(**{k: v for k, v in self.config.items()
                                      if k in CLIENT_DEFAULTS})
        self._membership = ShareMembership(self._client, self.config["group_id"],
                                           self.config["client_rack"], self._client.wakeup)
        self._fetcher = ShareFetcher(self._client, self.config, self.config["group_id"],
                                     lambda: self._membership.member_id)
        self._unacknowledged: dict[tuple[TopicPartition, int], ShareRecord] = {}
        """Records the last poll returned that were not acknowledged yet."""
        self._callback: AcknowledgementCallback | None = None
        self._api_timeout = self.config["default_api_timeout_ms"] / 1000
        self._closed = False
        self._client.start()
        if topics:
            self.subscribe(topics)

    # -- subscription ----------------------------------------------------------------------

    def subscribe(self, topics: Iterable[str]) -> None:
        """Join the share group for ``topics`` (replacing any earlier subscription)."""
        self._check_open()
        topics = [topics] if isinstance(topics, str) else list(topics)
        if not topics or any(not isinstance(t, str) or not t for t in topics) \
                or len(set(topics)) != len(topics):
            raise ValueError(f"subscribe() takes distinct, non-empty topic names, not {topics!r}")
        self._client.metadata.set_topics(set(topics))
        self._membership.subscribe(tuple(sorted(topics)))

    def subscription(self) -> set[str]:
        return set(self._membership.subscription)

    def unsubscribe(self) -> None:
        """Acknowledge what is pending, and leave the group."""
        self._check_open()
        self._implicit_accept()
        self._commit(time.monotonic() + self._api_timeout, final=False)
        future = self._membership.leave()
        if future is not None:
            future.wait(self._api_timeout)
        self._membership.subscribe(())

    def assignment(self) -> set[TopicPartition]:
        """The partitions the group assigned this member (shared with the other members)."""
        cluster = self._client.cluster
        return {TopicPartition(topic, partition)
                for topic_id, partitions in self._membership.assignment.items()
                if (topic := cluster.topic_for_id(topic_id)) is not None
                for partition in partitions}

    @property
    def member_id(self) -> str:
        return self._membership.member_id

    # -- polling -----------------------------------------------------------------------------

    def poll(self, timeout_ms: float = 0, max_records: int | None = None) -> list[ShareRecord]:
        """Records acquired for this member, waiting up to ``timeout_ms`` for some; ``[]`` if
        none came. In implicit mode the records of the previous poll are accepted first; in
        explicit mode each of them must have been acknowledged."""
        self._check_open()
        if not self._membership.subscription:
            raise IllegalStateError("poll() needs subscribe() first")
        if isinstance(timeout_ms, bool) or not isinstance(timeout_ms, int | float) or \
                timeout_ms < 0:
            raise ValueError(f"timeout_ms must be a non-negative number, not {timeout_ms!r}")
        if max_records is None:
            max_records = self.config["max_poll_records"]
        elif isinstance(max_records, bool) or not isinstance(max_records, int) or \
                max_records < 1:
            raise ValueError(f"max_records must be a positive integer, not {max_records!r}")
        if self._explicit and self._unacknowledged:
            raise IllegalStateError(
                f"{len(self._unacknowledged)} records of the last poll are not acknowledged: "
                "explicit mode acknowledges each record before the next poll")
        self._implicit_accept()
        deadline = time.monotonic() + timeout_ms / 1000
        while True:
            self._raise_membership_error()
            self._run_callbacks()
            assigned = self.assignment()
            records = self._fetcher.take(max_records, assigned)
            self._fetcher.send_fetches(assigned)
            if records:
                self._unacknowledged = {(r.topic_partition, r.offset): r for r in records}
                return records
            left = deadline - time.monotonic()
            if left <= 0:
                return []
            self._fetcher.wait(min(left, _WAIT_STEP_S))

    def __iter__(self) -> ShareConsumer:
        return self

    def __next__(self) -> ShareRecord:
        return next(self._records)

    # -- acknowledging -------------------------------------------------------------------------

    def acknowledge(self, record: ShareRecord,
                    kind: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """How ``record`` (returned by the last poll) was processed; sent with the next
        poll or commit. Explicit mode only."""
        if not isinstance(record, ShareRecord):
            raise TypeError(f"acknowledge() takes a record poll() returned, not {record!r}")
        self.acknowledge_offset(record.topic, record.partition, record.offset, kind)

    def acknowledge_offset(self, topic: str, partition: int, offset: int,
                           kind: AcknowledgeType = AcknowledgeType.ACCEPT) -> None:
        """:meth:`acknowledge` by the record's coordinates."""
        self._check_open()
        if not self._explicit:
            raise IllegalStateError("acknowledge() needs share_acknowledgement_mode='explicit'")
        kind = AcknowledgeType(kind)
        tp = TopicPartition(topic, partition)
        if self._unacknowledged.pop((tp, offset), None) is None:
            raise IllegalStateError(f"{tp} offset {offset} is not a record of the last poll "
                                    "waiting for its acknowledgement")
        with self._fetcher.condition:
            self._fetcher.pending.add(tp, offset, int(kind))

    def commit_sync(self, timeout_ms: float | None = None
                    ) -> dict[TopicPartition, KafkaError | None]:
        """Sends the pending acknowledgements and waits for the brokers' answers: per
        partition, None (taken) or the error (the records will be delivered again). In
        implicit mode the records of the last poll are accepted first."""
        self._check_open()
        self._implicit_accept()
        timeout = self._api_timeout if timeout_ms is None else timeout_ms / 1000
        results = self._commit(time.monotonic() + timeout, final=False)
        self._run_callbacks()
        return results

    def commit_async(self, callback: AcknowledgementCallback | None = None) -> None:
        """Sends the pending acknowledgements with the next fetches and returns at once;
        the outcome goes to ``callback`` (or the one set with
        :meth:`set_acknowledgement_commit_callback`) during a later call."""
        self._check_open()
        if callback is not None:
            self.set_acknowledgement_commit_callback(callback)
        self._implicit_accept()
        self._fetcher.send_fetches(self.assignment())

    def set_acknowledgement_commit_callback(self,
                                            callback: AcknowledgementCallback | None) -> None:
        if callback is not None and not callable(callback):
            raise TypeError("the acknowledgement commit callback must be callable or None")
        self._callback = callback

    def _commit(self, deadline: float, *, final: bool) -> dict[TopicPartition,
                                                                KafkaError | None]:
        outcome = self._fetcher.acknowledge(deadline, final=final)
        self._report(outcome)
        return {tp: error for tp, (_acks, error) in outcome.items()}

    def _implicit_accept(self) -> None:
        if self._explicit or not self._unacknowledged:
            return
        with self._fetcher.condition:
            for (tp, offset) in self._unacknowledged:
                self._fetcher.pending.add(tp, offset, int(AcknowledgeType.ACCEPT))
        self._unacknowledged = {}

    def _run_callbacks(self) -> None:
        for results in self._fetcher.take_results():
            self._report(results)

    def _report(self, results: AckResults) -> None:
        if self._callback is None:
            return
        for tp, (acks, error) in results.items():
            try:
                self._callback({tp: set(acks)}, error)
            except Exception:
                log.exception("the acknowledgement commit callback failed")

    def _raise_membership_error(self) -> None:
        error = self._membership.error
        if error is not None:
            raise error

    # -- lifecycle -------------------------------------------------------------------------

    def close(self, timeout_ms: float | None = None) -> None:
        """Send the pending acknowledgements (the last poll's are accepted in implicit
        mode), close the share sessions (what this member still holds goes to others at
        once), leave the group, and close the connections."""
        if self._closed:
            return
        timeout = self._api_timeout if timeout_ms is None else timeout_ms / 1000
        deadline = time.monotonic() + timeout
        try:
            self._implicit_accept()
            self._commit(deadline, final=True)
            future = self._membership.leave()
            if future is not None:
                future.wait(max(deadline - time.monotonic(), 0))
        except KafkaError as exc:
            log.info("share consumer of group %r closing: %s", self.config["group_id"], exc)
        finally:
            self._closed = True
            self._client.close()

    def __enter__(self) -> ShareConsumer:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 traceback: TracebackType | None) -> None:
        self.close()

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("the share consumer is closed")
