"""Partition leader election rules (Kafka's PartitionLeaderElectionAlgorithms), pure.

Each returns the new (leader, ISR), or None when no replica may lead. ``unclean`` is
``unclean.leader.election.enable``: without it a partition whose ISR has no live member
stays offline; with it the first live replica leads, and committed data may be lost.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence
from dataclasses import dataclass

NO_LEADER = -1


@dataclass(frozen=True, slots=True)
class Election:
    leader: int
    isr: tuple[int, ...]
    unclean: bool = False


def offline_partition_leader(replicas: Sequence[int], isr: Sequence[int],
                             live: Collection[int], *, unclean: bool) -> Election | None:
    """The first live replica, in assignment order, that is in the ISR; the ISR keeps its
    live members. Never shrinks the ISR to nothing: with no live member it stays as it
    was and the partition has no leader (None)."""
    live_isr = tuple(b for b in isr if b in live)
    for broker in replicas:
        if broker in live_isr:
            return Election(broker, live_isr)
    if unclean:
        for broker in replicas:
            if broker in live:
                return Election(broker, (broker,), unclean=True)
    return None


def preferred_replica_leader(replicas: Sequence[int], isr: Sequence[int],
                             live: Collection[int]) -> Election | None:
    """The first replica of the assignment, if it is alive and in the ISR."""
    if not replicas:
        return None
    preferred = replicas[0]
    if preferred in live and preferred in isr:
        return Election(preferred, tuple(isr))
    return None


def controlled_shutdown_leader(replicas: Sequence[int], isr: Sequence[int],
                               live: Collection[int], shutting_down: int) -> Election | None:
    """A live ISR member other than the broker stopping, which also leaves the ISR."""
    remaining = tuple(b for b in isr if b != shutting_down and b in live)
    for broker in replicas:
        if broker in remaining:
            return Election(broker, remaining)
    return None


def without_replica(isr: Sequence[int], broker: int) -> tuple[int, ...]:
    """The ISR without ``broker``, unless that would empty it (Kafka keeps the last
    member so that it can come back as leader)."""
    rest = tuple(b for b in isr if b != broker)
    return rest if rest else tuple(isr)


def imbalanced(leaders: dict[tuple[str, int], int], preferred: dict[tuple[str, int], int],
               percentage: int) -> list[tuple[str, int]]:
    """Partitions to move back to their preferred leader: for each broker whose share of
    partitions it should lead but does not exceeds ``percentage``, those partitions."""
    by_broker: dict[int, list[tuple[str, int]]] = {}
    for key, broker in preferred.items():
        by_broker.setdefault(broker, []).append(key)
    chosen = []
    for broker, keys in by_broker.items():
        off = [key for key in keys if leaders.get(key) != broker]
        if keys and len(off) * 100 > percentage * len(keys):
            chosen.extend(off)
    return sorted(chosen)
