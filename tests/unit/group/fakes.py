"""Test doubles for the coordinator: a clock that only moves when told, and an in-memory store."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kafkalite_server.group import GroupCoordinator, GroupCoordinatorConfig, JoinRequest
from kafkalite_server.group.offsets import OffsetAndMetadata, OffsetCommitEntry, TopicPartition
from kafkalite_server.group.results import JoinResult, SyncResult
from kafkalite_server.group.store import GroupMetadataRecord, LoadedGroup

GROUP = "group-a"
TP0 = TopicPartition("t", 0)
TP1 = TopicPartition("t", 1)


@dataclass(order=True)
class FakeTimer:
    deadline: int
    seq: int
    callback: Callable[[], None] = field(compare=False)
    cancelled: bool = field(default=False, compare=False)

    def cancel(self) -> None:
        self.cancelled = True


class FakeScheduler:
    """Timers fire, in deadline order, only inside :meth:`advance`."""

    def __init__(self, start_ms: int = 1_700_000_000_000) -> None:
        self.now = start_ms
        self._timers: list[FakeTimer] = []
        self._seq = itertools.count()

    def now_ms(self) -> int:
        return self.now

    def call_later(self, delay_ms: int, callback: Callable[[], None]) -> FakeTimer:
        timer = FakeTimer(self.now + max(delay_ms, 0), next(self._seq), callback)
        heapq.heappush(self._timers, timer)
        return timer

    def advance(self, ms: int = 0) -> None:
        target = self.now + ms
        while self._timers and self._timers[0].deadline <= target:
            timer = heapq.heappop(self._timers)
            if timer.cancelled:
                continue
            self.now = timer.deadline
            timer.callback()
        self.now = target


class MemoryStore:
    """Records what the coordinator persists; ``fail_with`` makes the next writes raise."""

    def __init__(self) -> None:
        self.groups: list[tuple[int, str, GroupMetadataRecord]] = []
        self.offsets: list[tuple[int, str, dict[TopicPartition, OffsetAndMetadata]]] = []
        self.deleted: list[tuple[int, str, list[TopicPartition]]] = []
        self.deleted_offsets: list[tuple[int, str, list[TopicPartition]]] = []
        self.fail_with: Exception | None = None

    def _maybe_fail(self) -> None:
        if self.fail_with is not None:
            raise self.fail_with

    def store_group(self, partition: int, group_id: str, record: GroupMetadataRecord) -> None:
        self._maybe_fail()
        self.groups.append((partition, group_id, record))

    def store_offsets(
        self, partition: int, group_id: str, offsets: dict[TopicPartition, OffsetAndMetadata]
    ) -> None:
        self._maybe_fail()
        self.offsets.append((partition, group_id, dict(offsets)))

    def delete_offsets(
        self, partition: int, group_id: str, offsets: list[TopicPartition]
    ) -> None:
        self._maybe_fail()
        self.deleted_offsets.append((partition, group_id, list(offsets)))

    def delete_group(self, partition: int, group_id: str, offsets: list[TopicPartition]) -> None:
        self._maybe_fail()
        self.deleted.append((partition, group_id, list(offsets)))


def make_coordinator(
    scheduler: FakeScheduler, store: MemoryStore, **config: int
) -> GroupCoordinator:
    settings = {"group_initial_rebalance_delay_ms": 0, **config}
    coordinator = GroupCoordinator(GroupCoordinatorConfig(**settings), scheduler, store)
    own_every_partition(coordinator)
    return coordinator


def own_every_partition(coordinator: GroupCoordinator) -> None:
    for partition in range(coordinator.ownership.partition_count):
        load(coordinator, partition)


def load(coordinator: GroupCoordinator, partition: int,
         loaded: Iterable[LoadedGroup] = ()) -> None:
    """What the coordinator runtime does when this broker becomes the partition's leader."""
    coordinator.ownership.begin_loading(partition, 0)
    coordinator.ownership.complete_loading(partition)
    coordinator.install(partition, loaded)


def unload(coordinator: GroupCoordinator, partition: int) -> None:
    """What the coordinator runtime does when leadership of the partition moves away."""
    coordinator.ownership.unload(partition)
    coordinator.unload_partition(partition)


RANGE = [("range", b"range-meta")]


def join(
    coordinator: GroupCoordinator,
    member_id: str = "",
    *,
    group: str = GROUP,
    client_id: str = "client",
    protocols: list[tuple[str, bytes]] | None = None,
    protocol_type: str = "consumer",
    session_ms: int = 10_000,
    rebalance_ms: int = 30_000,
    require_known: bool = False,
    instance_id: str | None = None,
) -> list[JoinResult]:
    """Send a JoinGroup; the returned list fills when the coordinator answers."""
    answers: list[JoinResult] = []
    request = JoinRequest(
        group_id=group,
        member_id=member_id,
        client_id=client_id,
        client_host="/127.0.0.1",
        session_timeout_ms=session_ms,
        rebalance_timeout_ms=rebalance_ms,
        protocol_type=protocol_type,
        protocols=RANGE if protocols is None else protocols,
        require_known_member_id=require_known,
        group_instance_id=instance_id,
    )
    coordinator.join_group(request, answers.append)
    return answers


def sync(
    coordinator: GroupCoordinator,
    member_id: str,
    generation: int,
    assignments: dict[str, bytes] | None = None,
    *,
    group: str = GROUP,
    instance_id: str | None = None,
) -> list[SyncResult]:
    answers: list[SyncResult] = []
    coordinator.sync_group(
        group,
        generation,
        member_id,
        assignments or {},
        answers.append,
        group_instance_id=instance_id,
    )
    return answers


def commit(
    coordinator: GroupCoordinator,
    member_id: str,
    generation: int,
    offset: int = 10,
    *,
    group: str = GROUP,
    metadata: str | None = "",
) -> int:
    results = coordinator.commit_offsets(
        group, generation, member_id, {TP0: OffsetCommitEntry(offset, 3, metadata)}
    )
    return results[TP0]


def stable_group(
    coordinator: GroupCoordinator, scheduler: FakeScheduler, size: int, **join_args: object
) -> tuple[list[str], int]:
    """Bring ``size`` fresh members to Stable; returns their ids (leader first) and generation."""
    pending = [join(coordinator, client_id=f"c{i}", **join_args) for i in range(size)]  # type: ignore[arg-type]
    scheduler.advance(0)
    results = [answers[0] for answers in pending]
    assert all(r.error == 0 for r in results), results
    leader = results[0].leader_id
    generation = results[0].generation_id
    followers = [r.member_id for r in results if r.member_id != leader]
    sync_answers = [sync(coordinator, m, generation) for m in followers]
    sync(coordinator, leader, generation, {m: m.encode() for m in [leader, *followers]})
    assert all(a and a[0].error == 0 for a in sync_answers)
    return [leader, *followers], generation
