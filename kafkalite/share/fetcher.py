"""Share fetching: one share session per partition leader, ShareFetch requests carrying the
pending acknowledgements, ShareAcknowledge for commits, and the records handed out.

The next ShareFetch to a broker goes out as soon as the previous one is answered, while
fewer than ``max_poll_records`` records wait to be polled (the application works while
the broker acquires the next records).

Sessions (KIP-932): the first ShareFetch to a broker opens a session (epoch 0) with the
partitions the member wants from it; later ones carry the next epoch, the partitions added
and forgotten, and the acknowledgements of records that broker handed out. One request is
in flight per broker at a time, so epochs stay in order. A broker that lost the session
(SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, a lost connection) gets a new one;
acknowledgements that did not reach it fail, and their records come back when their locks
expire.

The records of a response are those of its acquired ranges; an acquired offset without a
record (a control record, a compacted one) is acknowledged as a gap at once. A record not
taken by the application before its acquisition lock expired (the response says how long
locks last, counted here from when the request was sent) is dropped: the broker may have
handed it to another member already; so are the records of a session that failed (their
acknowledgements could not reach the broker that locked them).

Responses are handled on the client's I/O thread; the consumer's thread takes records and
results under the same condition.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafkalite.client.client import KafkaClient
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    InvalidShareSessionEpochError,
    NotLeaderOrFollowerError,
    ShareSessionNotFoundError,
    UnknownTopicIdError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkalite.records import decode_batches
from kafkalite.serde import Deserializer
from kafkalite.share.acknowledgements import GAP, PendingAcknowledgements, wire_batches
from kafkalite.structs import Header, TopicPartition

log = logging.getLogger(__name__)

OPEN_EPOCH, FINAL_EPOCH = 0, -1
SESSION_ERRORS = frozenset((ShareSessionNotFoundError.errno,
                            InvalidShareSessionEpochError.errno))
METADATA_ERRORS = frozenset((NotLeaderOrFollowerError.errno, UnknownTopicOrPartitionError.errno,
                             UnknownTopicIdError.errno))


class ShareRecord(NamedTuple):
    """A record a share consumer was handed: a ConsumerRecord's fields and how many times
    it has been delivered (1 the first time; more after releases and expired locks)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int
    key: Any
    value: Any
    headers: tuple[Header, ...]
    delivery_count: int
    leader_epoch: int = -1

    @property
    def topic_partition(self) -> TopicPartition:
        return TopicPartition(self.topic, self.partition)


AckResults = dict[TopicPartition, tuple[dict[int, int], KafkaError | None]]
"""Per partition: the acknowledgements sent (offset -> type) and their outcome."""


@dataclass
class _Session:
    epoch: int = OPEN_EPOCH
    """The epoch of the next request to this broker."""
    partitions: set[TopicPartition] = field(default_factory=set)
    in_flight: bool = False


class ShareFetcher:
    def __init__(self, client: KafkaClient, config: Mapping[str, Any], group_id: str,
                 member_id: Callable[[], str]) -> None:
        self._client = client
        self._group_id = group_id
        self._member_id = member_id
        self._max_wait_ms: int = config["fetch_max_wait_ms"]
        self._min_bytes: int = config["fetch_min_bytes"]
        self._max_bytes: int = config["fetch_max_bytes"]
        self._max_records: int = config["max_poll_records"]
        self._check_crcs: bool = config["check_crcs"]
        self._key_deserializer: Deserializer = config["key_deserializer"]
        self._value_deserializer: Deserializer = config["value_deserializer"]
        self.condition = threading.Condition()
        self.pending = PendingAcknowledgements()
        self._sessions: dict[int, _Session] = {}
        self._buffer: deque[tuple[ShareRecord, float, int]] = deque()
        """Records, when (monotonic) their locks expire, and the broker that locked them."""
        self._results: list[AckResults] = []
        self._wanted: dict[int, set[TopicPartition]] = {}
        """Each leader's assigned partitions, as the last ``send_fetches`` found them."""
        self._committing = False

    # ------------------------------------------------------------------ the consumer's thread

    def send_fetches(self, assigned: set[TopicPartition]) -> None:
        """A ShareFetch to each leader of ``assigned`` partitions (or holding a session or
        acknowledgements) without a request in flight."""
        cluster = self._client.cluster
        wanted: dict[int, set[TopicPartition]] = {}
        unknown_leader = False
        for tp in assigned:
            leader = cluster.leader_for(tp)
            if leader is None or leader < 0 or cluster.topic_id(tp.topic) is None:
                unknown_leader = True
                continue
            wanted.setdefault(leader, set()).add(tp)
        if unknown_leader:
            self._client.metadata.request_update()
        with self.condition:
            self._wanted = wanted
            requests = [(node, request) for node in set(wanted) | set(self._sessions)
                        if (request := self._next_request(node)) is not None]
            self._fail_orphans()
        for node, request in requests:
            self._send_fetch(node, request)

    def _next_request(self, node: int) -> tuple[dict[str, Any], _Sent] | None:
        """The next ShareFetch to ``node`` unless one is in flight (condition held)."""
        session = self._sessions.setdefault(node, _Session())
        if session.in_flight:
            return None
        request = self._fetch_request(node, session, self._wanted.get(node, set()),
                                      len(self._buffer) < self._max_records)
        if request is not None:
            session.in_flight = True
        return request

    def _send_fetch(self, node: int, request: tuple[dict[str, Any], _Sent]) -> None:
        body, sent = request
        future = self._client.send(node, ApiKey.SHARE_FETCH, body)
        future.add_callback(self._on_fetch, node, sent)
        future.add_errback(self._on_failure, node, sent)

    def _fetch_request(self, node: int, session: _Session, wanted: set[TopicPartition],
                       fetch_records: bool) -> tuple[dict[str, Any], _Sent] | None:
        if session.epoch == OPEN_EPOCH:
            if not wanted or not fetch_records:
                return None
            sent = _Sent(OPEN_EPOCH, set(wanted), set(), {}, time.monotonic())
        else:
            acks = self.pending.take(session.partitions)
            added, forgotten = wanted - session.partitions, session.partitions - wanted
            if not (acks or added or forgotten or (wanted and fetch_records)):
                return None
            sent = _Sent(session.epoch, added, forgotten, acks, time.monotonic())
        return self._body(sent, fetch_records and bool(wanted)), sent

    def _body(self, sent: _Sent, fetch_records: bool) -> dict[str, Any]:
        cluster = self._client.cluster
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp in sent.added | set(sent.acks):
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition,
                "acknowledgement_batches": wire_batches(sent.acks.get(tp, {}))})
        forgotten: dict[str, list[int]] = {}
        for tp in sent.forgotten:
            forgotten.setdefault(tp.topic, []).append(tp.partition)
        return {"group_id": self._group_id, "member_id": self._member_id(),
                "share_session_epoch": sent.epoch,
                "max_wait_ms": self._max_wait_ms if fetch_records and not sent.acks else 0,
                "min_bytes": self._min_bytes, "max_bytes": self._max_bytes,
                "max_records": self._max_records if fetch_records else 0,
                "batch_size": self._max_records,
                "topics": [{"topic_id": cluster.topic_id(topic), "partitions": partitions}
                           for topic, partitions in topics.items()],
                "forgotten_topics_data": [{"topic_id": cluster.topic_id(topic),
                                           "partitions": partitions}
                                          for topic, partitions in forgotten.items()]}

    def _fail_orphans(self) -> None:
        orphans = self._take_orphans()
        if orphans:
            self._results.append(orphans)

    def _take_orphans(self) -> AckResults:
        """Acknowledgements of records from a session that is gone cannot reach anyone:
        they fail (the records come back when their locks expire)."""
        held = {tp for session in self._sessions.values() for tp in session.partitions}
        orphans = self.pending.take(self.pending.partitions() - held)
        return {tp: (acks, NotLeaderOrFollowerError(
            f"{tp}: the share session its records came from is gone"))
            for tp, acks in orphans.items()}

    def take(self, max_records: int, assigned: set[TopicPartition]) -> list[ShareRecord]:
        """Up to ``max_records`` buffered records whose locks hold, of ``assigned``
        partitions. Records of a partition no longer assigned are dropped, not handed out:
        the next request forgets the partition, which releases their locks to its new
        owner, so an acknowledgement of them could only fail and they would be read twice."""
        with self.condition:
            now = time.monotonic()
            taken: list[ShareRecord] = []
            while self._buffer and len(taken) < max_records:
                record, expires, _node = self._buffer.popleft()
                if expires > now and record.topic_partition in assigned:
                    taken.append(record)
            return taken

    def wait(self, timeout: float) -> None:
        """Until a response arrives (or ``timeout``)."""
        with self.condition:
            if not self._buffer:
                self.condition.wait(timeout)

    def take_results(self) -> list[AckResults]:
        with self.condition:
            results, self._results = self._results, []
        return results

    def acknowledge(self, deadline: float, *, final: bool = False) -> AckResults:
        """Sends every pending acknowledgement with ShareAcknowledge and waits for the
        answers (``final``: and closes every session); what each partition's came to."""
        outcome: AckResults = {}
        closed: set[int] = set()
        with self.condition:
            self._committing = True
            try:
                return self._acknowledge(deadline, final, outcome, closed)
            finally:
                self._committing = False

    def _acknowledge(self, deadline: float, final: bool, outcome: AckResults,
                     closed: set[int]) -> AckResults:
        """:meth:`acknowledge`'s loop, the condition held; no prefetch meanwhile."""
        while True:
            for node, session in self._sessions.items():
                if session.in_flight:
                    continue
                acks = self.pending.take(session.partitions)
                close = final and node not in closed and session.epoch != OPEN_EPOCH
                if not acks and not close:
                    continue
                if close:
                    closed.add(node)
                session.in_flight = True
                self._send_acknowledge(
                    node, _Sent(FINAL_EPOCH if close else session.epoch, set(), set(), acks),
                    outcome)
            for tp, (taken, error) in self._take_orphans().items():
                outcome[tp] = (taken, error)
            busy = [n for n, s in self._sessions.items() if s.in_flight]
            if not busy and not self.pending:
                return outcome
            left = deadline - time.monotonic()
            if left <= 0:
                raise KafkaTimeoutError("acknowledgements not answered in time")
            self.condition.wait(left)

    def _send_acknowledge(self, node: int, sent: _Sent, outcome: AckResults) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for tp, acks in sent.acks.items():
            topics.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "acknowledgement_batches": wire_batches(acks)})
        cluster = self._client.cluster
        body = {"group_id": self._group_id, "member_id": self._member_id(),
                "share_session_epoch": sent.epoch,
                "topics": [{"topic_id": cluster.topic_id(topic), "partitions": partitions}
                           for topic, partitions in topics.items()]}
        future = self._client.send(node, ApiKey.SHARE_ACKNOWLEDGE, body)
        future.add_callback(self._on_acknowledged, node, sent, outcome)
        future.add_errback(self._on_acknowledge_failure, node, sent, outcome)

    def forget_sessions(self) -> None:
        """The member joined again: every broker gets a new session."""
        with self.condition:
            for session in self._sessions.values():
                if not session.in_flight:
                    session.epoch, session.partitions = OPEN_EPOCH, set()

    # ------------------------------------------------------------------ the I/O thread

    def _on_fetch(self, node: int, sent: _Sent, body: dict[str, Any]) -> None:
        code = body["error_code"]
        with self.condition:
            session = self._sessions.setdefault(node, _Session())
            session.in_flight = False
            if code:
                self._session_failed(session, sent, error_for_code(code)(
                    body.get("error_message") or "ShareFetch"))
                return
            self._advance(session, sent)
            acked: AckResults = {}
            for topic in body["responses"]:
                name = self._client.cluster.topic_for_id(topic["topic_id"])
                if name is None:
                    self._client.metadata.request_update()
                    continue
                for partition in topic["partitions"]:
                    tp = TopicPartition(name, partition["partition_index"])
                    if tp in sent.acks:
                        acked[tp] = (sent.acks[tp], _error(partition["acknowledge_error_code"],
                                                           tp))
                    if partition["error_code"] in METADATA_ERRORS:
                        self._client.metadata.request_update()
                    elif not partition["error_code"]:
                        expires = sent.at + body["acquisition_lock_timeout_ms"] / 1000
                        self._buffer.extend((record, expires, node)
                                            for record in self._records(tp, partition))
            for tp, acks in sent.acks.items():
                acked.setdefault(tp, (acks, None))
            if acked:
                self._results.append(acked)
            self.condition.notify_all()
            # prefetch while the application works; acknowledgements wait for the
            # application's next poll or commit, which answers for them
            request = None if self._committing or self.pending else self._next_request(node)
        if request is not None:
            self._send_fetch(node, request)

    def _on_failure(self, node: int, sent: _Sent, error: BaseException) -> None:
        with self.condition:
            session = self._sessions.setdefault(node, _Session())
            session.in_flight = False
            self._session_failed(session, sent, error)

    def _on_acknowledged(self, node: int, sent: _Sent, outcome: AckResults,
                         body: dict[str, Any]) -> None:
        code = body["error_code"]
        with self.condition:
            session = self._sessions.setdefault(node, _Session())
            session.in_flight = False
            if code:
                self._session_failed(session, sent, error_for_code(code)("ShareAcknowledge"),
                                     outcome)
                return
            if sent.epoch == FINAL_EPOCH:
                session.epoch, session.partitions = OPEN_EPOCH, set()
            else:
                session.epoch += 1
            for topic in body["responses"]:
                name = self._client.cluster.topic_for_id(topic["topic_id"])
                for partition in topic["partitions"]:
                    tp = TopicPartition(name or "", partition["partition_index"])
                    if tp in sent.acks:
                        outcome[tp] = (sent.acks[tp], _error(partition["error_code"], tp))
            for tp, acks in sent.acks.items():
                outcome.setdefault(tp, (acks, None))
            self.condition.notify_all()

    def _on_acknowledge_failure(self, node: int, sent: _Sent, outcome: AckResults,
                                error: BaseException) -> None:
        with self.condition:
            session = self._sessions.setdefault(node, _Session())
            session.in_flight = False
            self._session_failed(session, sent, error, outcome)

    def _session_failed(self, session: _Session, sent: _Sent, error: BaseException,
                        outcome: AckResults | None = None) -> None:
        """The broker's session is gone or unknown: a new one next time; what this
        request acknowledged failed."""
        log.debug("share session of group %r: %s", self._group_id, error)
        session.epoch, session.partitions = OPEN_EPOCH, set()
        node = next((n for n, s in self._sessions.items() if s is session), None)
        self._buffer = deque(entry for entry in self._buffer if entry[2] != node)
        failure = error if isinstance(error, KafkaError) else KafkaError(str(error))
        failed: AckResults = {tp: (acks, failure) for tp, acks in sent.acks.items()}
        if outcome is not None:
            outcome.update(failed)
        elif failed:
            self._results.append(failed)
        self.condition.notify_all()

    def _advance(self, session: _Session, sent: _Sent) -> None:
        session.epoch = sent.epoch + 1
        session.partitions |= sent.added
        session.partitions -= sent.forgotten

    def _records(self, tp: TopicPartition, partition: dict[str, Any]) -> list[ShareRecord]:
        ranges = [(r["first_offset"], r["last_offset"], r["delivery_count"])
                  for r in partition["acquired_records"]]
        if not ranges:
            return []
        counts = {offset: count for first, last, count in ranges
                  for offset in range(first, last + 1)}
        records = []
        for record in decode_batches(partition["records"] or b"", check_crcs=self._check_crcs):
            count = counts.pop(record.offset, None)
            if count is None:
                continue
            if record.batch.is_control:
                counts[record.offset] = count  # acknowledged as a gap below
                continue
            key = record.key if record.key is None else \
                self._key_deserializer.deserialize(tp.topic, record.key)
            value = record.value if record.value is None else \
                self._value_deserializer.deserialize(tp.topic, record.value)
            records.append(ShareRecord(tp.topic, tp.partition, record.offset, record.timestamp,
                                       record.timestamp_type, key, value, record.headers,
                                       count, record.batch.partition_leader_epoch))
        for offset in counts:  # acquired, yet no record there
            self.pending.add(tp, offset, GAP)
        return records


class _Sent(NamedTuple):
    """What one request to a broker carried."""

    epoch: int
    added: set[TopicPartition]
    forgotten: set[TopicPartition]
    acks: dict[TopicPartition, dict[int, int]]
    at: float = 0.0
    """When (monotonic) it was sent."""


def _error(code: int, tp: TopicPartition) -> KafkaError | None:
    return error_for_code(code)(str(tp)) if code else None
