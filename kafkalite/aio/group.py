"""Group membership for the asyncio consumer (the classic JoinGroup/SyncGroup protocol).

A thin driver over the SDK's pure pieces: the member's states are
:class:`~kafkalite.consumer.membership.Membership`'s one transition table, the JoinGroup
protocols and SyncGroup assignments are encoded and decoded by
:mod:`kafkalite.consumer.group_wire`, and the leader runs the SDK's assignors. Rebalances
are eager (every partition is revoked before a join), as aiokafka's are; the rebalance
listener's callbacks may be coroutines and are awaited.
"""

from __future__ import annotations

import asyncio
import inspect
import logging
from collections.abc import Callable
from typing import Any

from kafkalite.aio.client import AIOClient
from kafkalite.consumer.assignors import Assignment, Assignor
from kafkalite.consumer.commits import COORDINATOR_ERRORS, FENCING_ERRORS
from kafkalite.consumer.group_wire import (
    PROTOCOL_TYPE,
    assignment_from_wire,
    chosen_assignor,
    join_protocols,
    member_subscriptions,
    sync_assignments,
)
from kafkalite.consumer.membership import Membership, MemberState
from kafkalite.consumer.subscription_state import SubscriptionState
from kafkalite.errors import KafkaError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    MemberIdRequiredError,
    RebalanceInProgressError,
    UnknownMemberIdError,
    error_for_code,
)
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)


async def call_listener(listener: Any, hook: str, partitions: set[TopicPartition]) -> None:
    """Call a rebalance listener's hook, awaiting it if it is a coroutine; an exception in
    it is logged, as aiokafka does, so that a broken listener does not break the group."""
    if listener is None:
        return
    try:
        result = getattr(listener, hook)(partitions)
        if inspect.isawaitable(result):
            await result
    except Exception:
        log.exception("rebalance listener %r failed in %s", listener, hook)


class GroupMember:
    """This consumer's membership of ``group_id``: joins, syncs, heartbeats, leaves."""

    def __init__(self, client: AIOClient, subscriptions: SubscriptionState, group_id: str, *,
                 assignors: list[Assignor], session_timeout_ms: int,
                 rebalance_timeout_ms: int, heartbeat_interval_ms: int,
                 retry_backoff_ms: int, instance_id: str | None,
                 before_revoke: Callable[[], Any]) -> None:
        self._client = client
        self._subscriptions = subscriptions
        self.group_id = group_id
        self._assignors = assignors
        self._session_timeout_ms = session_timeout_ms
        self._rebalance_timeout_ms = rebalance_timeout_ms
        self._heartbeat_interval = heartbeat_interval_ms / 1000
        self._instance_id = instance_id
        self._before_revoke = before_revoke
        self.membership = Membership(retry_backoff_ms)
        self.listener: Any = None
        self.coordinator: int | None = None
        self._heartbeat: asyncio.Task[None] | None = None
        self.changed = asyncio.Event()
        """Set when the member must rejoin (the heartbeat heard of a rebalance)."""

    async def coordinator_node(self) -> int:
        if self.coordinator is None:
            self.coordinator = await self._client.find_coordinator(self.group_id)
        return self.coordinator

    def coordinator_lost(self) -> None:
        self.coordinator = None

    @property
    def needs_join(self) -> bool:
        return self._subscriptions.is_auto_assigned and self.membership.rejoin_needed

    async def ensure_active(self) -> None:
        """Join (or rejoin) the group until this member holds an assignment."""
        while self.needs_join:
            membership = self.membership
            if membership.needs_revoke:
                await self._revoke()
            delay = membership.retry_delay()
            if delay:
                await asyncio.sleep(delay)
            try:
                await self._join_once()
            except Exception as exc:
                retriable = isinstance(exc, KafkaError) and exc.retriable
                if retriable or membership.state is MemberState.AWAITING_SYNC:
                    membership.rejoin(backoff=True)  # the next try is a new JoinGroup
                if not retriable:
                    raise
                log.debug("group %r: join failed (%r); retrying", self.group_id, exc)
                self.coordinator_lost()
        if self._heartbeat is None or self._heartbeat.done():
            self._heartbeat = asyncio.get_running_loop().create_task(self._heartbeat_loop())

    async def _revoke(self) -> None:
        revoked = self._subscriptions.assigned_partitions()
        if revoked:
            await self._before_revoke()
        await call_listener(self.listener, "on_partitions_revoked", revoked)
        self._subscriptions.assign_from_subscribed(())

    async def _join_once(self) -> None:
        membership = self.membership
        node = await self.coordinator_node()
        topics = set(self._subscriptions.topics)
        self._client.topics.update(topics)
        generation, member_id = membership.identity()
        membership.join_sent()
        body = await self._client.send(node, ApiKey.JOIN_GROUP, {
            "group_id": self.group_id, "session_timeout_ms": self._session_timeout_ms,
            "rebalance_timeout_ms": self._rebalance_timeout_ms, "member_id": member_id,
            "group_instance_id": self._instance_id, "protocol_type": PROTOCOL_TYPE,
            "protocols": join_protocols(self._assignors, topics, (), generation),
            "reason": None})
        code = body["error_code"]
        if code == MemberIdRequiredError.errno:
            membership.rejoin(member_id=body["member_id"])
            return
        if code:
            self._group_error(code, "JoinGroup")
            return
        generation, member_id = body["generation_id"], body["member_id"]
        membership.joined(generation, member_id)
        assignments: list[dict[str, Any]] = []
        if body["leader"] == member_id:
            assignments = await self._assign(body["protocol_name"], body["members"])
        sync = await self._client.send(node, ApiKey.SYNC_GROUP, {
            "group_id": self.group_id, "generation_id": generation, "member_id": member_id,
            "group_instance_id": self._instance_id, "protocol_type": PROTOCOL_TYPE,
            "protocol_name": body["protocol_name"], "assignments": assignments})
        if sync["error_code"]:
            self._group_error(sync["error_code"], "SyncGroup")
            return
        assignment = assignment_from_wire(sync["assignment"]) if sync["assignment"] \
            else Assignment([])
        assignor = chosen_assignor(self._assignors, body["protocol_name"], self.group_id)
        assignor.on_assignment(assignment, generation)
        membership.synced()
        self.changed.clear()
        kept = self._subscriptions.assign_from_subscribed(assignment.partitions)
        log.info("group %r generation %d: assigned %s", self.group_id, generation,
                 sorted(kept))
        await call_listener(self.listener, "on_partitions_assigned", set(kept))

    async def _assign(self, protocol: str, members: list[dict[str, Any]]
                      ) -> list[dict[str, Any]]:
        """As the leader: run the chosen assignor over every member's subscription."""
        assignor = chosen_assignor(self._assignors, protocol, self.group_id)
        subscriptions, versions = member_subscriptions(members)
        self._client.topics.update(t for s in subscriptions.values() for t in s.topics)
        await self._client.refresh_metadata()
        result = assignor.assign(self._client.cluster, subscriptions)
        return sync_assignments(result, subscriptions, versions)

    def _group_error(self, code: int, action: str) -> None:
        membership = self.membership
        if code in FENCING_ERRORS:
            membership.fenced(forget_member=code == UnknownMemberIdError.errno)
        elif code == RebalanceInProgressError.errno:
            membership.rejoin()
        elif code in COORDINATOR_ERRORS or error_for_code(code).retriable:
            self.coordinator_lost()
            membership.rejoin(backoff=True)
        else:
            membership.rejoin(backoff=True)
            raise error_for_code(code)(f"{action} for group {self.group_id!r}")

    async def _heartbeat_loop(self) -> None:
        membership = self.membership
        while membership.holds_assignment:
            await asyncio.sleep(self._heartbeat_interval)
            generation, member_id = membership.identity()
            if not membership.holds_assignment:
                return
            try:
                body = await self._client.send(await self.coordinator_node(), ApiKey.HEARTBEAT, {
                    "group_id": self.group_id, "generation_id": generation,
                    "member_id": member_id, "group_instance_id": self._instance_id})
            except KafkaError as exc:
                log.debug("group %r: heartbeat failed: %r", self.group_id, exc)
                self.coordinator_lost()
                continue
            code = body["error_code"]
            if code == 0 or membership.identity()[0] != generation:
                continue
            if code in FENCING_ERRORS:
                membership.fenced(forget_member=code == UnknownMemberIdError.errno)
            elif code == RebalanceInProgressError.errno:
                membership.rejoin()
            elif code in COORDINATOR_ERRORS:
                self.coordinator_lost()
                continue
            else:
                log.warning("group %r: heartbeat answered %s", self.group_id,
                            error_for_code(code).__name__)
                continue
            self.changed.set()
            return

    def request_rejoin(self) -> None:
        """The subscription changed (a pattern matched new topics): rejoin."""
        if self.membership.holds_assignment:
            self.membership.rejoin()
        self.changed.set()

    async def leave(self) -> None:
        """Revoke (with the listener) and leave, so the group rebalances at once."""
        if self._heartbeat is not None:
            self._heartbeat.cancel()
            await asyncio.gather(self._heartbeat, return_exceptions=True)
        if not self.membership.holds_assignment:
            return
        await self._revoke()
        member_id = self.membership.left(forget_member=True)
        try:
            await self._client.send(await self.coordinator_node(), ApiKey.LEAVE_GROUP, {
                "group_id": self.group_id, "member_id": member_id,
                "members": [{"member_id": member_id,
                             "group_instance_id": self._instance_id, "reason": None}]})
        except KafkaError as exc:
            log.debug("group %r: LeaveGroup failed: %r", self.group_id, exc)
