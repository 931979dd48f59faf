"""The consumer's group client: the I/O driver that ties a consumer to its group.

The logic lives in small sans-IO pieces: :mod:`kafkalite.consumer.membership` (the state
machine and its transition table), :mod:`kafkalite.consumer.heartbeat` (heartbeat, session
and poll-interval timers) and :mod:`kafkalite.consumer.commits` (OffsetCommit / OffsetFetch
and the auto-commit timer); :mod:`kafkalite.client.coordinator` finds the coordinator. This
module sends the requests and feeds the answers to them.

Joining runs on the application's thread inside ``poll()`` over request futures (JoinGroup,
then SyncGroup), so ``poll(timeout_ms=0)`` never blocks on a rebalance: each call advances it
as far as the responses allow. The group leader runs the assignor the broker chose over every
member's decoded subscription. Heartbeats run on the client's I/O thread as a poll hook,
which also leaves the group when the application stops calling ``poll()`` for longer than
``max_poll_interval_ms``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.client.coordinator import CoordinatorCache, backoff, remaining
from kafkalite.client.future import Future
from kafkalite.consumer.assignors import Assignor
from kafkalite.consumer.commits import (
    COORDINATOR_ERRORS,
    FENCING_ERRORS,
    AutoCommitTimer,
    CommitCallback,
    CommitFailedError,
    CommitResults,
    Offsets,
    Verdict,
    fetch_committed_offsets,
    judge_commit,
    offset_commit_request,
)
from kafkalite.consumer.group_wire import (
    PROTOCOL_TYPE,
    assignment_from_wire,
    chosen_assignor,
    join_protocols,
    member_subscriptions,
    sync_assignments,
)
from kafkalite.consumer.heartbeat import Action, HeartbeatTimers
from kafkalite.consumer.listener import notify
from kafkalite.consumer.membership import NO_GENERATION, Membership, MemberState
from kafkalite.consumer.subscription_state import SubscriptionState, SubscriptionType
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    CoordinatorNotAvailableError,
    IllegalGenerationError,
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_for_code,
)
from kafkalite.structs import OffsetAndMetadata, TopicPartition

__all__ = ["CommitCallback", "CommitFailedError", "ConsumerCoordinator", "MemberState"]

log = logging.getLogger(__name__)


class ConsumerCoordinator:
    """Group membership and commits for one consumer; see the module docstring."""

    def __init__(self, client: KafkaClient, subscriptions: SubscriptionState,
                 config: Mapping[str, Any], wakeup: Callable[[], None],
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._client = client
        self._subscriptions = subscriptions
        self._clock = clock
        self.group_id: str = config["group_id"]
        self._instance_id: str | None = config["group_instance_id"]
        self._assignors: list[Assignor] = config["partition_assignment_strategy"]
        self._session_timeout_ms: int = config["session_timeout_ms"]
        self._max_poll_interval_ms: int = config["max_poll_interval_ms"]
        self._retry_backoff = config["retry_backoff_ms"] / 1000
        self._wakeup = wakeup
        self._coordinator = CoordinatorCache(client, self.group_id)
        self._membership = Membership(config["retry_backoff_ms"], clock)
        self._timers = HeartbeatTimers(config["heartbeat_interval_ms"],
                                       self._session_timeout_ms, self._max_poll_interval_ms,
                                       clock)
        self._auto_commit = AutoCommitTimer(config["enable_auto_commit"],
                                            config["auto_commit_interval_ms"], clock)
        self._commit_results = CommitResults(self.group_id)
        self._pending: tuple[str, Future[Any]] | None = None
        """("join", JoinGroup answer with the follower's SyncGroup) or ("sync", SyncGroup
        answer): the request ``ensure_active_group`` waits for, kept across its calls."""
        self._joined_topics: frozenset[str] = frozenset()
        self._partition_counts: dict[str, int] = {}
        self._owned: list[TopicPartition] = []
        self._protocol = ""
        client.add_poll_hook(self._heartbeat_hook)

    # -- read-only state -----------------------------------------------------------------------

    @property
    def generation_id(self) -> int:
        return self._membership.generation

    @property
    def member_id(self) -> str:
        return self._membership.member_id

    @property
    def state(self) -> MemberState:
        return self._membership.state

    # -- the application's poll ----------------------------------------------------------------

    def poll(self, deadline: float) -> bool:
        """Called by ``Consumer.poll``: run commit callbacks, keep the membership current,
        auto commit when due. False when a rebalance is still under way at the deadline."""
        self._timers.polled()
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
        if self._membership.rejoin_needed:
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

    # -- coordinator ---------------------------------------------------------------------------

    def ensure_coordinator(self, deadline: float) -> int | None:
        """The coordinator's node id, looked up if unknown; None if not found by the deadline."""
        return self._coordinator.ensure(deadline)

    def mark_coordinator_unknown(self, reason: object) -> None:
        self._coordinator.mark_unknown(reason)

    # -- joining ---------------------------------------------------------------------------------

    def ensure_active_group(self, deadline: float) -> bool:
        """Drive JoinGroup / SyncGroup until stable or the deadline."""
        membership = self._membership
        while self.need_rejoin() or self._pending is not None:
            if self._pending is None:
                delay = membership.retry_delay()
                if delay > 0:
                    if membership.retry_at > deadline:
                        return False
                    time.sleep(delay)
                node = self.ensure_coordinator(deadline)
                if node is None:
                    return False
                if membership.needs_revoke:
                    self._on_join_prepare()
                request = self._join_request()
                membership.join_sent()
                self._pending = ("join", self._send_join(node, request))
            pending: tuple[str, Future[Any]] = self._pending
            kind, future = pending
            if not future.wait(remaining(deadline, self._clock)):
                return False
            self._pending = None
            if future.failed():
                self._on_request_failure(future.exception)
            elif kind == "join":
                body, sync = future.value
                self._on_join_response(body, sync, deadline)
            else:
                self._on_sync_response(future.value)
        return True

    def _cooperative(self) -> bool:
        """Does the group run an assignor of the COOPERATIVE protocol (KIP-429)?"""
        return any(a.name == self._protocol and a.cooperative for a in self._assignors)

    def _on_join_prepare(self) -> None:
        """Before a new rebalance: commit, then revoke what this member holds (eager
        protocol); under the cooperative protocol a member still in its generation keeps
        its partitions and reports them as owned."""
        revoked = self._subscriptions.assigned_partitions()
        if self.generation_id != NO_GENERATION and self._auto_commit.enabled and revoked:
            try:
                self.commit_sync(None, self._clock() + self._session_timeout_ms / 1000)
            except KafkaError as exc:
                log.warning("group %r: auto commit before the rebalance failed: %s",
                            self.group_id, exc)
        if self._cooperative() and self.generation_id != NO_GENERATION:
            self._owned = sorted(revoked)
            return
        listener = self._subscriptions.listener
        if listener is not None and self._joined_topics:
            # Fenced, or left after max_poll_interval_ms: the group may already have given
            # these partitions to others, so committing for them is no longer possible.
            lost = self.generation_id == NO_GENERATION and revoked
            notify(listener, "on_partitions_lost" if lost else "on_partitions_revoked", revoked)
        self._owned = sorted(revoked)
        self._subscriptions.assign_from_subscribed(())

    def _join_request(self) -> dict[str, Any]:
        self._joined_topics = self._subscriptions.topics
        self._client.metadata.add_topics(self._joined_topics)
        generation, member_id = self._membership.identity()
        return {"group_id": self.group_id, "session_timeout_ms": self._session_timeout_ms,
                "rebalance_timeout_ms": self._max_poll_interval_ms,
                "member_id": member_id, "group_instance_id": self._instance_id,
                "protocol_type": PROTOCOL_TYPE,
                "protocols": join_protocols(self._assignors, self._joined_topics,
                                            self._owned, generation)}

    def _send_join(self, node: int, request: dict[str, Any],
                   ) -> Future[tuple[dict[str, Any], Future[dict[str, Any]] | None]]:
        """JoinGroup; the answer comes with a follower's SyncGroup already sent.

        A follower's SyncGroup carries no assignment, so it goes out on the I/O thread the
        moment JoinGroup is answered rather than at the application's next ``poll()``. Brokers
        that complete the sync round as soon as the leader's SyncGroup arrives (librdkafka's
        mock cluster does) refuse a follower that syncs later and start a new rebalance; with
        members polled in turn the leader would often win that race, over and over.
        """
        answered: Future[tuple[dict[str, Any], Future[dict[str, Any]] | None]] = Future()

        def on_join(body: dict[str, Any]) -> None:
            sync = None
            if not body["error_code"] and body["leader"] != body["member_id"]:
                sync = self._client.send(node, ApiKey.SYNC_GROUP, self._sync_request(
                    body["generation_id"], body["member_id"], []))
            answered.success((body, sync))

        future = self._client.send(node, ApiKey.JOIN_GROUP, request)
        future.add_callback(on_join)
        future.add_errback(answered.failure)
        return answered

    def _sync_request(self, generation: int, member_id: str,
                      assignments: list[dict[str, Any]]) -> dict[str, Any]:
        return {"group_id": self.group_id, "generation_id": generation,
                "member_id": member_id, "group_instance_id": self._instance_id,
                "assignments": assignments}

    def _on_request_failure(self, error: BaseException | None) -> None:
        if isinstance(error, KafkaError) and error.retriable:
            # A lost connection or a request timeout (the coordinator can hold JoinGroup
            # for a whole rebalance): rediscover and send the join again with our member id.
            self.mark_coordinator_unknown(error)
            self._membership.rejoin(backoff=True)
            return
        assert error is not None
        raise error

    def _on_join_response(self, body: dict[str, Any], sync: Future[dict[str, Any]] | None,
                          deadline: float) -> None:
        code = body["error_code"]
        if code:
            self._on_group_error(code, "JoinGroup", body)
            return
        generation, member_id = body["generation_id"], body["member_id"]
        self._membership.joined(generation, member_id)
        protocol = self._protocol = body["protocol_name"]
        if sync is None:  # the leader: assign, then sync
            assignments = self._assign(protocol, body["members"], deadline)
            node = self._coordinator.node
            if node is None:
                self._membership.rejoin(backoff=True)
                return
            sync = self._client.send(node, ApiKey.SYNC_GROUP,
                                     self._sync_request(generation, member_id, assignments))
        self._pending = ("sync", sync)

    def _assign(self, protocol: str, members: list[dict[str, Any]],
                deadline: float) -> list[dict[str, Any]]:
        """As the leader: run the chosen assignor over every member's subscription."""
        assignor = chosen_assignor(self._assignors, protocol, self.group_id)
        subscriptions, versions = member_subscriptions(members)
        topics = {t for s in subscriptions.values() for t in s.topics}
        self._await_metadata(topics, deadline)
        result = assignor.assign(self._client.cluster, subscriptions)
        cluster = self._client.cluster
        self._partition_counts = {t: len(cluster.partitions_for_topic(t) or ())
                                  for t in topics}
        log.info("group %r generation %d: %s assigned %s", self.group_id, self.generation_id,
                 protocol, {m: len(a.partitions) for m, a in result.items()})
        return sync_assignments(result, subscriptions, versions)

    def _await_metadata(self, topics: set[str], deadline: float) -> None:
        """Fresh metadata for every subscribed topic before the leader assigns, as the Java
        client and librdkafka do: partition counts may have changed since the last refresh.
        The round trip also lets followers' SyncGroups reach the coordinator before the
        leader's, which brokers that close the sync round on the leader's request need."""
        metadata, cluster = self._client.metadata, self._client.cluster
        metadata.add_topics(topics)
        limit = max(deadline, self._clock() + self._session_timeout_ms / 2000)
        refreshed = False
        while not refreshed or any(cluster.partitions_for_topic(t) is None
                                   and t not in cluster.unknown_topics() for t in topics):
            if self._clock() >= limit:
                break
            try:
                metadata.await_update(metadata.request_update(), remaining(limit, self._clock))
            except KafkaTimeoutError:
                break
            refreshed = True

    def _on_sync_response(self, body: dict[str, Any]) -> None:
        code = body["error_code"]
        if code:
            self._on_group_error(code, "SyncGroup", body)
            return
        assignment = assignment_from_wire(body["assignment"])
        self._timers.joined()
        self._membership.synced()
        held = set(self._subscriptions.assigned_partitions())
        listener = self._subscriptions.listener
        revoked = held - set(assignment.partitions)
        if revoked:  # cooperative: give up only what moves, then rejoin to hand it over
            if listener is not None:
                notify(listener, "on_partitions_revoked", revoked)
            self._membership.rejoin()
        kept = self._subscriptions.assign_from_subscribed(assignment.partitions)
        chosen_assignor(self._assignors, self._protocol, self.group_id).on_assignment(
            assignment, self.generation_id)
        cluster = self._client.cluster
        if not self._partition_counts:
            self._partition_counts = {t: len(cluster.partitions_for_topic(t) or ())
                                      for t in self._joined_topics
                                      if cluster.partitions_for_topic(t) is not None}
        self._auto_commit.reset()
        log.info("group %r generation %d: member %s got %s", self.group_id, self.generation_id,
                 self.member_id, sorted(kept))
        if listener is not None:
            notify(listener, "on_partitions_assigned", kept - held)

    def _on_group_error(self, code: int, request: str, body: dict[str, Any]) -> None:
        error = error_for_code(code)
        log.info("group %r: %s answered %s", self.group_id, request, error.__name__)
        membership = self._membership
        if error is MemberIdRequiredError:
            membership.rejoin(member_id=body["member_id"])
        elif error in (UnknownMemberIdError, IllegalGenerationError):
            membership.fenced(forget_member=error is UnknownMemberIdError)
        elif error is RebalanceInProgressError:
            membership.rejoin()
        elif code in COORDINATOR_ERRORS:
            self.mark_coordinator_unknown(error.__name__)
            membership.rejoin(backoff=True)
        elif error.retriable:
            membership.rejoin(backoff=True)
        else:
            raise error(f"{request} for group {self.group_id!r}")

    # -- heartbeats (I/O thread) -----------------------------------------------------------------

    def _heartbeat_hook(self) -> float | None:
        node = self._coordinator.node
        if not self._membership.holds_assignment or node is None:
            return None
        due = self._timers.due()
        if due.action is Action.LEAVE:
            log.warning("group %r: poll() was not called for max_poll_interval_ms (%d ms); "
                        "leaving the group so its partitions move to live members",
                        self.group_id, self._max_poll_interval_ms)
            self._send_leave()
            self._wakeup()
            return None
        if due.action is Action.COORDINATOR_LOST:
            self.mark_coordinator_unknown("no successful heartbeat within session_timeout_ms")
            return None
        if due.action is Action.SEND:
            generation, member_id = self._membership.identity()
            future = self._client.send(node, ApiKey.HEARTBEAT, {
                "group_id": self.group_id, "generation_id": generation,
                "member_id": member_id, "group_instance_id": self._instance_id})
            future.add_callback(self._on_heartbeat, generation)
            future.add_errback(self._on_heartbeat_failure)
        return due.wake_at

    def _on_heartbeat(self, generation: int, body: dict[str, Any]) -> None:
        code = body["error_code"]
        self._timers.answered(ok=code == 0)
        if code == 0 or generation != self.generation_id:
            return
        error = error_for_code(code)
        log.info("group %r: heartbeat answered %s", self.group_id, error.__name__)
        if code in FENCING_ERRORS:
            self._membership.fenced(forget_member=code != IllegalGenerationError.errno,
                                    generation=generation)
        else:
            if code in COORDINATOR_ERRORS:
                self.mark_coordinator_unknown(error.__name__)
            self._membership.rejoin()
        self._wakeup()

    def _on_heartbeat_failure(self, error: BaseException) -> None:
        self._timers.answered(ok=False)
        self.mark_coordinator_unknown(error)
        self._wakeup()

    # -- leaving ---------------------------------------------------------------------------------

    def _send_leave(self) -> Future[dict[str, Any]] | None:
        """Leave the group: LeaveGroup for a dynamic member whose coordinator is known; a
        static member (group_instance_id) keeps its place across restarts."""
        node = self._coordinator.node
        if node is None or not self.member_id or self._instance_id is not None:
            self._membership.left(forget_member=False)
            return None
        member = self._membership.left(forget_member=True)
        return self._client.send(node, ApiKey.LEAVE_GROUP, {
            "group_id": self.group_id, "member_id": member,
            "members": [{"member_id": member, "group_instance_id": None}]})

    def leave_group(self, deadline: float, *, commit: bool = True) -> None:
        """Commit (auto commit), revoke, and leave the group so it rebalances at once."""
        if commit and self._auto_commit.enabled and (
                self.generation_id != NO_GENERATION or not self._subscriptions.is_auto_assigned):
            try:
                self.commit_sync(None, deadline)
            except KafkaError as exc:
                log.warning("group %r: final auto commit failed: %s", self.group_id, exc)
        listener = self._subscriptions.listener
        if listener is not None and self._membership.holds_assignment:
            notify(listener, "on_partitions_revoked",
                   self._subscriptions.assigned_partitions())
        future = self._send_leave()
        self._joined_topics = frozenset()
        self._pending = None
        if future is not None:
            future.wait(remaining(deadline, self._clock))
        self.run_commit_callbacks()

    def close(self, deadline: float, *, commit: bool = True) -> None:
        self.leave_group(deadline, commit=commit)
        self._client.remove_poll_hook(self._heartbeat_hook)

    # -- commits ---------------------------------------------------------------------------------

    def maybe_auto_commit(self) -> None:
        if not self._auto_commit.due():
            return
        offsets = self._subscriptions.all_consumed()
        if offsets:
            self.commit_async(offsets, None)

    def _commit_identity(self) -> tuple[int, str]:
        """(generation, member id) to commit under; see :mod:`kafkalite.consumer.commits`."""
        if not self._subscriptions.is_auto_assigned:
            return NO_GENERATION, ""
        identity = self._membership.commit_identity()
        if identity is None:
            raise CommitFailedError(
                f"group {self.group_id!r}: this consumer has not joined the group yet, so it "
                "owns no partitions to commit for; call poll() first")
        return identity

    def _send_commit(self, offsets: Offsets, node: int) -> Future[None]:
        generation, member = self._commit_identity()
        body = offset_commit_request(self.group_id, generation, member, self._instance_id,
                                     offsets)
        result: Future[None] = Future()

        def on_response(response: dict[str, Any]) -> None:
            outcome = judge_commit(response, self.group_id, generation)
            if outcome.verdict is Verdict.FENCED:
                self._membership.fenced(
                    forget_member=outcome.code != IllegalGenerationError.errno,
                    generation=generation)
                self._wakeup()
            elif outcome.verdict is Verdict.REBALANCING:
                self._membership.rejoin()
                self._wakeup()
            elif outcome.verdict is Verdict.COORDINATOR_MOVED:
                self.mark_coordinator_unknown(type(outcome.error).__name__)
            if outcome.error is None:
                result.success(None)
            else:
                result.failure(outcome.error)

        def on_failure(error: BaseException) -> None:
            self.mark_coordinator_unknown(error)
            result.failure(error)

        future = self._client.send(node, ApiKey.OFFSET_COMMIT, body)
        future.add_callback(on_response)
        future.add_errback(on_failure)
        return result

    def commit_sync(self, offsets: Offsets | None, deadline: float) -> None:
        """Commit ``offsets`` (default: consumed positions), retrying retriable errors."""
        self.run_commit_callbacks()
        if offsets is None:
            offsets = self._subscriptions.all_consumed()
        if not offsets:
            return
        while True:
            node = self.ensure_coordinator(deadline)
            if node is None:
                raise self._client.timeout_error(f"group {self.group_id!r}: no coordinator found")
            future = self._send_commit(offsets, node)
            if not future.wait(remaining(deadline, self._clock)):
                raise self._client.timeout_error(
                    f"group {self.group_id!r}: commit not answered in time")
            error = future.exception
            if error is None:
                return
            if not isinstance(error, KafkaError) or not error.retriable:
                raise error
            backoff(self._client, deadline)

    def commit_async(self, offsets: Offsets | None, callback: CommitCallback | None) -> None:
        """Send a commit; ``callback(offsets, error_or_None)`` runs in a later poll/commit."""
        if offsets is None:
            offsets = self._subscriptions.all_consumed()
        if not offsets:
            return
        node = self._coordinator.node
        if node is None:
            node = self.ensure_coordinator(self._clock() + 5 * self._retry_backoff)
        if node is None:
            self._commit_results.add(callback, offsets, CoordinatorNotAvailableError(
                f"group {self.group_id!r}: no coordinator for an async commit"))
            return
        try:
            future = self._send_commit(offsets, node)
        except KafkaError as exc:
            self._commit_results.add(callback, offsets, exc)
            return
        future.add_both(lambda outcome: self._commit_results.add(
            callback, offsets, outcome if isinstance(outcome, BaseException) else None))

    def run_commit_callbacks(self) -> None:
        """Deliver finished async commits on the application's thread."""
        self._commit_results.run()

    def fetch_committed(self, partitions: Iterable[TopicPartition],
                        deadline: float) -> dict[TopicPartition, OffsetAndMetadata]:
        node = self.ensure_coordinator(deadline)
        return fetch_committed_offsets(self._client, self.group_id, list(partitions),
                                       deadline, coordinator=node)
