"""The consumer's side of the group protocol: coordinator, membership, heartbeats, commits.

Joining runs on the application's thread inside ``poll()`` as a small state machine over
request futures (FindCoordinator, then JoinGroup, SyncGroup), so ``poll(timeout_ms=0)``
never blocks on a rebalance: each call advances it as far as the responses allow. The group
leader runs the assignor the broker chose over every member's decoded subscription.
Heartbeats run on the client's I/O thread as a poll hook, which also leaves the group when the
application stops calling ``poll()`` for longer than ``max_poll_interval_ms``.

Commits carry the generation and member id. A member that lost its place (evicted, or the
group moved to a new generation without it) still sends its last generation, so the
coordinator, not a guess, fences it; the refusal surfaces as :class:`CommitFailedError`.
"""

from __future__ import annotations

import enum
import logging
import random
import struct
import threading
import time
from collections import defaultdict, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.client.future import Future
from kafkalite.consumer.assignors import Assignment, Assignor, Subscription
from kafkalite.consumer.subscription_state import SubscriptionState, SubscriptionType
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedInstanceIdError,
    IllegalGenerationError,
    MemberIdRequiredError,
    NotCoordinatorError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_for_code,
)
from kafkalite.structs import OffsetAndMetadata, TopicPartition

log = logging.getLogger(__name__)

PROTOCOL_TYPE = "consumer"
NO_GENERATION = -1
_VERSION = struct.Struct(">h")
_COORDINATOR_ERRORS = (NotCoordinatorError.errno, CoordinatorNotAvailableError.errno)
_FENCING_ERRORS = (IllegalGenerationError.errno, UnknownMemberIdError.errno,
                   FencedInstanceIdError.errno)

CommitCallback = Callable[[Mapping[TopicPartition, OffsetAndMetadata], BaseException | None],
                          None]


class CommitFailedError(KafkaError):
    """The coordinator refused a commit because this member no longer owns the partitions.

    The group moved to a new generation (a rebalance) without this member, or evicted it:
    its partitions may now belong to another member, which will read from the last
    successful commit. Not retriable; the next ``poll()`` rejoins the group.
    """


class MemberState(enum.Enum):
    UNJOINED = "unjoined"
    REBALANCING = "rebalancing"
    STABLE = "stable"


def _remaining(deadline: float) -> float:
    return max(deadline - time.monotonic(), 0.0)


def _backoff(client: KafkaClient, deadline: float) -> None:
    delay = client.config["retry_backoff_ms"] / 1000
    if time.monotonic() + delay >= deadline:
        raise KafkaTimeoutError("the group coordinator did not answer in time")
    time.sleep(delay)


def _any_node(client: KafkaClient) -> int:
    """A broker from metadata, else the first bootstrap address (node -1)."""
    brokers = [b.node_id for b in client.cluster.brokers()]
    return random.choice(brokers) if brokers else -1


def find_coordinator(client: KafkaClient, group_id: str, deadline: float) -> int:
    """The node id of ``group_id``'s coordinator (FindCoordinator, retried until the deadline);
    metadata is refreshed until that node is known, so requests can be routed to it."""
    while True:
        try:
            body = client.send(
                _any_node(client), ApiKey.FIND_COORDINATOR,
                {"key": group_id, "key_type": 0, "coordinator_keys": [group_id]},
            ).get(_remaining(deadline))
        except KafkaError as exc:
            if not exc.retriable:
                raise
            client.metadata.request_update()
            _backoff(client, deadline)
            continue
        if "coordinators" in body:  # v4+: one entry per key asked
            body = body["coordinators"][0]
        code = body["error_code"]
        if code:
            error = error_for_code(code)
            if not error.retriable:
                raise error(f"finding the coordinator of group {group_id!r}")
            _backoff(client, deadline)
            continue
        node = body["node_id"]
        while client.cluster.broker(node) is None:
            remaining = _remaining(deadline)
            if remaining <= 0:
                raise KafkaTimeoutError(f"coordinator node {node} is not in the metadata")
            version = client.metadata.request_update()
            try:
                client.metadata.await_update(version, min(remaining, 1.0))
            except KafkaTimeoutError:
                continue
        return int(node)


def fetch_committed_offsets(
    client: KafkaClient, group_id: str, partitions: Iterable[TopicPartition] | None,
    deadline: float, coordinator: int | None = None,
) -> dict[TopicPartition, OffsetAndMetadata]:
    """The group's committed offsets (OffsetFetch); ``partitions=None`` asks for all of them.

    Partitions without a commit are left out of the result.
    """
    topics: list[dict[str, Any]] | None = None
    if partitions is not None:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in partitions:
            by_topic[tp.topic].append(tp.partition)
        topics = [{"name": t, "partition_indexes": sorted(p)} for t, p in by_topic.items()]
    body_out = {"group_id": group_id, "topics": topics}
    while True:
        node = coordinator if coordinator is not None else \
            find_coordinator(client, group_id, deadline)
        try:
            body = client.send(node, ApiKey.OFFSET_FETCH, body_out).get(_remaining(deadline))
        except KafkaError as exc:
            if not exc.retriable:
                raise
            coordinator = None
            _backoff(client, deadline)
            continue
        codes = [body.get("error_code", 0)] + [
            part["error_code"] for topic in body["topics"] for part in topic["partitions"]]
        code = next((c for c in codes if c), 0)
        if code:
            error = error_for_code(code)
            if not error.retriable:
                raise error(f"fetching committed offsets of group {group_id!r}")
            if code in _COORDINATOR_ERRORS:
                coordinator = None
            _backoff(client, deadline)
            continue
        return {
            TopicPartition(topic["name"], part["partition_index"]): OffsetAndMetadata(
                part["committed_offset"], part["metadata"] or "",
                part["committed_leader_epoch"])
            for topic in body["topics"] for part in topic["partitions"]
            if part["committed_offset"] >= 0
        }


def subscription_from_wire(member: Mapping[str, Any]) -> tuple[Subscription, int]:
    """A JoinGroup member entry as the assignor sees it, plus its subscription version."""
    metadata = member["metadata"]
    decoded = ConsumerProtocolSubscription.decode(metadata)
    (version,) = _VERSION.unpack_from(metadata, 0)
    owned = [TopicPartition(t, p) for t, ids in decoded.owned_partitions for p in ids]
    return Subscription(
        topics=list(decoded.topics), user_data=decoded.user_data, owned_partitions=owned,
        generation_id=decoded.generation_id, rack_id=decoded.rack_id,
        group_instance_id=member.get("group_instance_id"),
    ), version


def assignment_to_wire(assignment: Assignment, version: int) -> bytes:
    """ConsumerProtocolAssignment bytes, at a version the member's subscription showed it reads."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in assignment.partitions:
        if not isinstance(tp, TopicPartition):
            raise TypeError(f"an assignor returned {tp!r}, not a TopicPartition")
        by_topic[tp.topic].append(tp.partition)
    partitions = [(topic, sorted(ids)) for topic, ids in sorted(by_topic.items())]
    return ConsumerProtocolAssignment(partitions, assignment.user_data).encode(
        max(0, min(version, 3)))


def assignment_from_wire(data: bytes) -> Assignment:
    decoded = ConsumerProtocolAssignment.decode(data)
    return Assignment([TopicPartition(t, p) for t, ids in decoded.partitions for p in ids],
                      decoded.user_data)


class ConsumerCoordinator:
    """Group membership and commits for one consumer; see the module docstring."""

    def __init__(self, client: KafkaClient, subscriptions: SubscriptionState,
                 config: Mapping[str, Any], wakeup: Callable[[], None]) -> None:
        self._client = client
        self._subscriptions = subscriptions
        self.group_id: str = config["group_id"]
        self._instance_id: str | None = config["group_instance_id"]
        self._assignors: list[Assignor] = config["partition_assignment_strategy"]
        self._session_timeout_ms: int = config["session_timeout_ms"]
        self._heartbeat_interval = config["heartbeat_interval_ms"] / 1000
        self._max_poll_interval_ms: int = config["max_poll_interval_ms"]
        self._auto_commit: bool = config["enable_auto_commit"]
        self._auto_commit_interval = config["auto_commit_interval_ms"] / 1000
        self._retry_backoff = config["retry_backoff_ms"] / 1000
        self._wakeup = wakeup
        self._lock = threading.Lock()
        self._coordinator: int | None = None
        self._state = MemberState.UNJOINED
        self._generation = NO_GENERATION
        self._member_id = ""
        self._last_generation = (NO_GENERATION, "")
        self._rejoin_needed = True
        self._pending: tuple[str, Future[dict[str, Any]]] | None = None
        self._retry_at = 0.0
        self._joined_topics: frozenset[str] = frozenset()
        self._partition_counts: dict[str, int] = {}
        self._owned: list[TopicPartition] = []
        self._protocol = ""
        self._last_poll = time.monotonic()
        self._next_heartbeat = 0.0
        self._heartbeat_in_flight = False
        self._last_heartbeat_ok = time.monotonic()
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        self._commit_results: deque[tuple[CommitCallback | None,
                                          Mapping[TopicPartition, OffsetAndMetadata],
                                          BaseException | None]] = deque()
        client.add_poll_hook(self._heartbeat_hook)

    # -- read-only state -----------------------------------------------------------------------

    @property
    def generation_id(self) -> int:
        return self._generation

    @property
    def member_id(self) -> str:
        return self._member_id

    @property
    def state(self) -> MemberState:
        return self._state

    # -- the application's poll ----------------------------------------------------------------

    def poll(self, deadline: float) -> bool:
        """Called by ``Consumer.poll``: run commit callbacks, keep the membership current,
        auto commit when due. False when a rebalance is still under way at the deadline."""
        self._last_poll = time.monotonic()
        self.run_commit_callbacks()
        if not self._subscriptions.is_auto_assigned:
            self.maybe_auto_commit()
            return True
        self._refresh_pattern()
        ready = self.ensure_active_group(deadline)
        if ready:
            self.maybe_auto_commit()
        return ready

    def _refresh_pattern(self) -> None:
        if self._subscriptions.type is not SubscriptionType.PATTERN:
            return
        metadata = self._client.metadata
        if not metadata.all_topics:
            metadata.all_topics = True
            metadata.await_update(metadata.request_update(), self._session_timeout_ms / 1000)
        topics = self._subscriptions.matching_topics(self._client.cluster.topics(
            exclude_internal=True))
        if self._subscriptions.change_topics(topics):
            log.info("pattern subscription now matches %s", sorted(topics))

    def need_rejoin(self) -> bool:
        if self._rejoin_needed or self._state is not MemberState.STABLE:
            return True
        if self._subscriptions.topics != self._joined_topics:
            return True
        cluster = self._client.cluster
        for topic, count in self._partition_counts.items():
            partitions = cluster.partitions_for_topic(topic)
            if partitions is not None and len(partitions) != count:
                log.info("topic %r now has %d partitions; rejoining", topic, len(partitions))
                return True
        return False

    # -- coordinator discovery -------------------------------------------------------------------

    def ensure_coordinator(self, deadline: float) -> int | None:
        """The coordinator's node id, looked up if unknown; None if not found by the deadline."""
        node = self._coordinator
        if node is not None:
            return node
        try:
            node = find_coordinator(self._client, self.group_id, max(deadline, time.monotonic()
                                                                     + self._retry_backoff * 2))
        except KafkaTimeoutError:
            return None
        with self._lock:
            self._coordinator = node
        return node

    def mark_coordinator_unknown(self, reason: object) -> None:
        with self._lock:
            if self._coordinator is not None:
                log.info("group %r: coordinator %s unavailable (%s); rediscovering",
                         self.group_id, self._coordinator, reason)
            self._coordinator = None

    # -- joining ---------------------------------------------------------------------------------

    def ensure_active_group(self, deadline: float) -> bool:
        """Drive FindCoordinator / JoinGroup / SyncGroup until stable or the deadline."""
        while self.need_rejoin() or self._pending is not None:
            if self._pending is None:
                now = time.monotonic()
                if now < self._retry_at:
                    if self._retry_at > deadline:
                        return False
                    time.sleep(self._retry_at - now)
                node = self.ensure_coordinator(deadline)
                if node is None:
                    return False
                if self._state is not MemberState.REBALANCING:
                    self._on_join_prepare()
                self._pending = ("join", self._client.send(
                    node, ApiKey.JOIN_GROUP, self._join_request()))
            kind, future = self._pending
            if not future.wait(_remaining(deadline)):
                return False
            self._pending = None
            if future.failed():
                self._on_request_failure(future.exception)
            elif kind == "join":
                self._on_join_response(future.value, deadline)
            else:
                self._on_sync_response(future.value)
        return True

    def _on_join_prepare(self) -> None:
        """Before (re)joining: commit and revoke what this member holds (eager protocol)."""
        revoked = self._subscriptions.assigned_partitions()
        if self._generation != NO_GENERATION and self._auto_commit and revoked:
            try:
                self.commit_sync(None, time.monotonic() + self._session_timeout_ms / 1000)
            except KafkaError as exc:
                log.warning("group %r: auto commit before the rebalance failed: %s",
                            self.group_id, exc)
        listener = self._subscriptions.listener
        if listener is not None and self._joined_topics:
            listener.on_partitions_revoked(revoked)
        self._owned = sorted(revoked)
        self._subscriptions.assign_from_subscribed(())
        with self._lock:
            self._state = MemberState.REBALANCING
            self._rejoin_needed = True

    def _join_request(self) -> dict[str, Any]:
        self._joined_topics = self._subscriptions.topics
        self._client.metadata.add_topics(self._joined_topics)
        protocols = []
        for assignor in self._assignors:
            subscription = assignor.metadata(self._joined_topics)
            owned: dict[str, list[int]] = defaultdict(list)
            for tp in self._owned:
                owned[tp.topic].append(tp.partition)
            wire = ConsumerProtocolSubscription(
                topics=subscription.topics, user_data=subscription.user_data or b"",
                owned_partitions=sorted(owned.items()), generation_id=self._generation)
            protocols.append({"name": assignor.name, "metadata": wire.encode(assignor.version)})
        return {"group_id": self.group_id, "session_timeout_ms": self._session_timeout_ms,
                "rebalance_timeout_ms": self._max_poll_interval_ms,
                "member_id": self._member_id, "group_instance_id": self._instance_id,
                "protocol_type": PROTOCOL_TYPE, "protocols": protocols}

    def _on_request_failure(self, error: BaseException | None) -> None:
        if isinstance(error, KafkaError) and error.retriable:
            # A lost connection or a request timeout (the coordinator can hold JoinGroup
            # for a whole rebalance): rediscover and send the join again with our member id.
            self.mark_coordinator_unknown(error)
            self._retry_at = time.monotonic() + self._retry_backoff
            return
        assert error is not None
        raise error

    def _on_join_response(self, body: dict[str, Any], deadline: float) -> None:
        code = body["error_code"]
        if code:
            self._on_group_error(code, "JoinGroup", body)
            return
        with self._lock:
            self._generation = body["generation_id"]
            self._member_id = body["member_id"]
            self._last_generation = (self._generation, self._member_id)
        protocol = self._protocol = body["protocol_name"]
        assignments: list[dict[str, Any]] = []
        if body["leader"] == self._member_id:
            assignments = self._assign(protocol, body["members"], deadline)
        node = self._coordinator
        if node is None:
            self._retry_at = time.monotonic() + self._retry_backoff
            return
        self._pending = ("sync", self._client.send(node, ApiKey.SYNC_GROUP, {
            "group_id": self.group_id, "generation_id": self._generation,
            "member_id": self._member_id, "group_instance_id": self._instance_id,
            "assignments": assignments}))

    def _assignor(self, name: str) -> Assignor:
        for assignor in self._assignors:
            if assignor.name == name:
                return assignor
        raise KafkaError(f"group {self.group_id!r} chose protocol {name!r}, which this "
                         "consumer did not offer")

    def _assign(self, protocol: str, members: list[dict[str, Any]],
                deadline: float) -> list[dict[str, Any]]:
        """As the leader: run the chosen assignor over every member's subscription."""
        assignor = self._assignor(protocol)
        subscriptions, versions = {}, {}
        for member in members:
            subscription, version = subscription_from_wire(member)
            subscriptions[member["member_id"]] = subscription
            versions[member["member_id"]] = version
        topics = {t for s in subscriptions.values() for t in s.topics}
        self._await_metadata(topics, deadline)
        result = assignor.assign(self._client.cluster, subscriptions)
        cluster = self._client.cluster
        self._partition_counts = {t: len(cluster.partitions_for_topic(t) or ())
                                  for t in topics}
        log.info("group %r generation %d: %s assigned %s", self.group_id, self._generation,
                 protocol, {m: len(a.partitions) for m, a in result.items()})
        return [{"member_id": member,
                 "assignment": assignment_to_wire(result.get(member, Assignment([])),
                                                  versions[member])}
                for member in subscriptions]

    def _await_metadata(self, topics: set[str], deadline: float) -> None:
        metadata, cluster = self._client.metadata, self._client.cluster
        metadata.add_topics(topics)
        limit = max(deadline, time.monotonic() + self._session_timeout_ms / 2000)
        while any(cluster.partitions_for_topic(t) is None and t not in cluster.unknown_topics()
                  for t in topics) and time.monotonic() < limit:
            try:
                metadata.await_update(metadata.request_update(), _remaining(limit))
            except KafkaTimeoutError:
                break

    def _on_sync_response(self, body: dict[str, Any]) -> None:
        code = body["error_code"]
        if code:
            self._on_group_error(code, "SyncGroup", body)
            return
        assignment = assignment_from_wire(body["assignment"])
        now = time.monotonic()
        with self._lock:
            self._state = MemberState.STABLE
            self._rejoin_needed = False
            self._last_heartbeat_ok = now
            self._next_heartbeat = now + self._heartbeat_interval
        kept = self._subscriptions.assign_from_subscribed(assignment.partitions)
        self._assignor(self._protocol).on_assignment(assignment, self._generation)
        cluster = self._client.cluster
        if not self._partition_counts:
            self._partition_counts = {t: len(cluster.partitions_for_topic(t) or ())
                                      for t in self._joined_topics
                                      if cluster.partitions_for_topic(t) is not None}
        self._next_auto_commit = now + self._auto_commit_interval
        log.info("group %r generation %d: member %s got %s", self.group_id, self._generation,
                 self._member_id, sorted(kept))
        listener = self._subscriptions.listener
        if listener is not None:
            listener.on_partitions_assigned(kept)

    def _on_group_error(self, code: int, request: str, body: dict[str, Any]) -> None:
        error = error_for_code(code)
        log.info("group %r: %s answered %s", self.group_id, request, error.__name__)
        if error is MemberIdRequiredError:
            with self._lock:
                self._member_id = body["member_id"]
        elif error in (UnknownMemberIdError, IllegalGenerationError):
            self._reset_generation(forget_member=error is UnknownMemberIdError)
        elif error is RebalanceInProgressError:
            pass
        elif code in _COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(error.__name__)
            self._retry_at = time.monotonic() + self._retry_backoff
        elif error is CoordinatorLoadInProgressError or error.retriable:
            self._retry_at = time.monotonic() + self._retry_backoff
        else:
            raise error(f"{request} for group {self.group_id!r}")
        with self._lock:
            self._state = MemberState.REBALANCING
            self._rejoin_needed = True

    def _reset_generation(self, *, forget_member: bool) -> None:
        with self._lock:
            self._generation = NO_GENERATION
            if forget_member:
                self._member_id = ""
            self._state = MemberState.UNJOINED
            self._rejoin_needed = True

    # -- heartbeats (I/O thread) -----------------------------------------------------------------

    def _heartbeat_hook(self) -> float | None:
        now = time.monotonic()
        with self._lock:
            if self._state is not MemberState.STABLE or self._coordinator is None:
                return None
            if now - self._last_poll > self._max_poll_interval_ms / 1000:
                log.warning("group %r: poll() was not called for max_poll_interval_ms (%d ms); "
                            "leaving the group so its partitions move to live members",
                            self.group_id, self._max_poll_interval_ms)
                self._send_leave_locked()
                self._wakeup()
                return None
            if now - self._last_heartbeat_ok > self._session_timeout_ms / 1000:
                self._coordinator = None
                return None
            poll_deadline = self._last_poll + self._max_poll_interval_ms / 1000
            if self._heartbeat_in_flight or now < self._next_heartbeat:
                return min(self._next_heartbeat, poll_deadline)
            self._heartbeat_in_flight = True
            self._next_heartbeat = now + self._heartbeat_interval
            node, generation = self._coordinator, self._generation
            body = {"group_id": self.group_id, "generation_id": generation,
                    "member_id": self._member_id, "group_instance_id": self._instance_id}
        future = self._client.send(node, ApiKey.HEARTBEAT, body)
        future.add_callback(self._on_heartbeat, generation)
        future.add_errback(self._on_heartbeat_failure)
        return min(self._next_heartbeat, poll_deadline)

    def _on_heartbeat(self, generation: int, body: dict[str, Any]) -> None:
        code = body["error_code"]
        with self._lock:
            self._heartbeat_in_flight = False
            if generation != self._generation:
                return
            if code == 0:
                self._last_heartbeat_ok = time.monotonic()
                return
        error = error_for_code(code)
        log.info("group %r: heartbeat answered %s", self.group_id, error.__name__)
        if code in _FENCING_ERRORS:
            self._reset_generation(forget_member=code != IllegalGenerationError.errno)
        elif code in _COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(error.__name__)
        with self._lock:
            self._rejoin_needed = True
        self._wakeup()

    def _on_heartbeat_failure(self, error: BaseException) -> None:
        with self._lock:
            self._heartbeat_in_flight = False
        self.mark_coordinator_unknown(error)
        self._wakeup()

    # -- leaving ---------------------------------------------------------------------------------

    def _send_leave_locked(self) -> Future[dict[str, Any]] | None:
        node, member = self._coordinator, self._member_id
        self._generation = NO_GENERATION
        self._state = MemberState.UNJOINED
        self._rejoin_needed = True
        if node is None or not member or self._instance_id is not None:
            return None  # static members keep their place across restarts
        self._member_id = ""
        return self._client.send(node, ApiKey.LEAVE_GROUP, {
            "group_id": self.group_id, "member_id": member,
            "members": [{"member_id": member, "group_instance_id": None}]})

    def leave_group(self, deadline: float, *, commit: bool = True) -> None:
        """Commit (auto commit), revoke, and leave the group so it rebalances at once."""
        if commit and self._auto_commit and (self._generation != NO_GENERATION
                                             or not self._subscriptions.is_auto_assigned):
            try:
                self.commit_sync(None, deadline)
            except KafkaError as exc:
                log.warning("group %r: final auto commit failed: %s", self.group_id, exc)
        listener = self._subscriptions.listener
        if listener is not None and self._state is MemberState.STABLE:
            listener.on_partitions_revoked(self._subscriptions.assigned_partitions())
        with self._lock:
            future = self._send_leave_locked()
        self._joined_topics = frozenset()
        self._pending = None
        if future is not None:
            future.wait(_remaining(deadline))
        self.run_commit_callbacks()

    def close(self, deadline: float, *, commit: bool = True) -> None:
        self.leave_group(deadline, commit=commit)
        self._client.remove_poll_hook(self._heartbeat_hook)

    # -- commits ---------------------------------------------------------------------------------

    def maybe_auto_commit(self) -> None:
        if not self._auto_commit or time.monotonic() < self._next_auto_commit:
            return
        self._next_auto_commit = time.monotonic() + self._auto_commit_interval
        offsets = self._subscriptions.all_consumed()
        if offsets:
            self.commit_async(offsets, None)

    def _commit_identity(self) -> tuple[int, str]:
        """(generation, member id) to commit under; see the module docstring."""
        if not self._subscriptions.is_auto_assigned:
            return NO_GENERATION, ""
        with self._lock:
            if self._generation != NO_GENERATION:
                return self._generation, self._member_id
            if self._last_generation[0] != NO_GENERATION:
                return self._last_generation
        raise CommitFailedError(
            f"group {self.group_id!r}: this consumer has not joined the group yet, so it owns "
            "no partitions to commit for; call poll() first")

    def _send_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata],
                     node: int) -> Future[None]:
        generation, member = self._commit_identity()
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for tp, meta in offsets.items():
            by_topic[tp.topic].append({
                "partition_index": tp.partition, "committed_offset": meta.offset,
                "committed_leader_epoch": meta.leader_epoch,
                "committed_metadata": meta.metadata})
        body = {"group_id": self.group_id, "generation_id_or_member_epoch": generation,
                "member_id": member, "group_instance_id": self._instance_id,
                "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]}
        result: Future[None] = Future()

        def on_response(response: dict[str, Any]) -> None:
            error = self._commit_error(response, generation)
            if error is None:
                result.success(None)
            else:
                result.failure(error)

        def on_failure(error: BaseException) -> None:
            self.mark_coordinator_unknown(error)
            result.failure(error)

        future = self._client.send(node, ApiKey.OFFSET_COMMIT, body)
        future.add_callback(on_response)
        future.add_errback(on_failure)
        return result

    def _commit_error(self, response: dict[str, Any], generation: int) -> KafkaError | None:
        """The exception for a commit response (I/O thread), None when it succeeded."""
        failed = [(TopicPartition(t["name"], p["partition_index"]), p["error_code"])
                  for t in response["topics"] for p in t["partitions"] if p["error_code"]]
        if not failed:
            return None
        code = failed[0][1]
        error = error_for_code(code)
        if code in _FENCING_ERRORS:
            with self._lock:
                if self._generation == generation:
                    self._generation = NO_GENERATION
                    self._state = MemberState.UNJOINED
                    if code != IllegalGenerationError.errno:
                        self._member_id = ""
                self._rejoin_needed = True
            self._wakeup()
            return CommitFailedError(
                f"group {self.group_id!r}: the coordinator refused the commit for generation "
                f"{generation} ({error.__name__}): the group has moved on to a newer "
                "generation without this member, so its partitions may now belong to another "
                "member; poll() rejoins the group")
        if code == RebalanceInProgressError.errno:
            with self._lock:
                self._rejoin_needed = True
            self._wakeup()
            return CommitFailedError(
                f"group {self.group_id!r} is rebalancing; the commit for generation "
                f"{generation} was refused, and the partitions may move to another member")
        if code in _COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(error.__name__)
        return error(f"committing offsets of {[tp for tp, _ in failed]} for group "
                     f"{self.group_id!r}")

    def commit_sync(self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
                    deadline: float) -> None:
        """Commit ``offsets`` (default: consumed positions), retrying retriable errors."""
        self.run_commit_callbacks()
        if offsets is None:
            offsets = self._subscriptions.all_consumed()
        if not offsets:
            return
        while True:
            node = self.ensure_coordinator(deadline)
            if node is None:
                raise KafkaTimeoutError(f"group {self.group_id!r}: no coordinator found")
            future = self._send_commit(offsets, node)
            if not future.wait(_remaining(deadline)):
                raise KafkaTimeoutError(f"group {self.group_id!r}: commit not answered in time")
            error = future.exception
            if error is None:
                return
            if not isinstance(error, KafkaError) or not error.retriable:
                raise error
            _backoff(self._client, deadline)

    def commit_async(self, offsets: Mapping[TopicPartition, OffsetAndMetadata] | None,
                     callback: CommitCallback | None) -> None:
        """Send a commit; ``callback(offsets, error_or_None)`` runs in a later poll/commit."""
        if offsets is None:
            offsets = self._subscriptions.all_consumed()
        if not offsets:
            return
        node = self._coordinator
        if node is None:
            node = self.ensure_coordinator(time.monotonic() + 5 * self._retry_backoff)
        if node is None:
            self._commit_results.append((callback, offsets, CoordinatorNotAvailableError(
                f"group {self.group_id!r}: no coordinator for an async commit")))
            return
        try:
            future = self._send_commit(offsets, node)
        except KafkaError as exc:
            self._commit_results.append((callback, offsets, exc))
            return
        future.add_both(lambda outcome: self._commit_results.append(
            (callback, offsets, outcome if isinstance(outcome, BaseException) else None)))

    def run_commit_callbacks(self) -> None:
        """Deliver finished async commits on the application's thread."""
        while self._commit_results:
            callback, offsets, error = self._commit_results.popleft()
            if error is not None:
                log.warning("group %r: async commit failed: %s", self.group_id, error)
            if callback is not None:
                callback(offsets, error)

    def fetch_committed(self, partitions: Iterable[TopicPartition],
                        deadline: float) -> dict[TopicPartition, OffsetAndMetadata]:
        node = self.ensure_coordinator(deadline)
        return fetch_committed_offsets(self._client, self.group_id, list(partitions),
                                       deadline, coordinator=node)

