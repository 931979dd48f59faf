"""Partition assignors: how a consumer group's leader shares partitions among the members.

Assignment runs in the client (the broker only relays it), so every member of a group must
agree on the algorithm: it is chosen by name in JoinGroup. The built-in assignors use the
names and the exact algorithms of the Java client, so a group can mix kafkalite with Java,
kafka-python and librdkafka members.

:class:`Subscription` and :class:`Assignment` are the API-level view of the
ConsumerProtocolSubscription / ConsumerProtocolAssignment bytes; the consumer converts.
"""

from __future__ import annotations

import bisect
import struct
from abc import ABC, abstractmethod
from collections import defaultdict
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from kafkalite.errors import ConfigError, ProtocolDecodeError
from kafkalite.serde import pack_msgpack, unpack_msgpack
from kafkalite.structs import TopicPartition


@dataclass(frozen=True)
class Subscription:
    """What one member asked for in JoinGroup, as the group leader sees it.

    ``owned_partitions`` and ``generation_id`` are what the member held before (protocol
    v1+/v2+); ``group_instance_id`` is set for static members (it orders them first, as Java
    does, so their assignment survives restarts).
    """

    topics: list[str]
    user_data: bytes | None = None
    owned_partitions: Sequence[TopicPartition] = ()
    generation_id: int = -1
    rack_id: str | None = None
    group_instance_id: str | None = None


@dataclass(frozen=True)
class Assignment:
    """The partitions one member gets, plus optional assignor-specific bytes."""

    partitions: list[TopicPartition]
    user_data: bytes | None = None


class PartitionLookup(Protocol):
    """What an assignor needs from the cluster; :class:`ClusterMetadata` provides it."""

    def partitions_for_topic(self, topic: str) -> Collection[int] | None: ...


class Assignor(ABC):
    """Base class for assignors; mirrors Java's ``ConsumerPartitionAssignor``.

    Subclasses set ``name`` (the protocol name sent in JoinGroup, the same on every member)
    and implement :meth:`assign`. To attach data to the member's subscription, return any
    msgpack-serializable object from :meth:`user_data`; the leader reads it back with
    :meth:`decode_user_data`. Override :meth:`encode_user_data` / :meth:`decode_user_data`
    together to use another encoding (as :class:`StickyAssignor` does, for Java's).
    """

    name: ClassVar[str]
    version: ClassVar[int] = 3
    """The ConsumerProtocol version this assignor's subscription is written in."""
    cooperative: ClassVar[bool] = False
    """True for an assignor of the COOPERATIVE protocol (KIP-429): members keep their
    partitions through a rebalance and give up only those the assignment moves."""

    @abstractmethod
    def assign(
        self, cluster: PartitionLookup, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        """Map every member id in ``subscriptions`` to its assignment (possibly empty)."""

    def metadata(self, topics: Iterable[str]) -> Subscription:
        """The subscription this member sends: sorted topics and encoded user data."""
        sorted_topics = sorted(set(topics))
        data = self.user_data(sorted_topics)
        return Subscription(sorted_topics, None if data is None else self.encode_user_data(data))

    def user_data(self, topics: list[str]) -> Any:
        """Data to attach to this member's subscription; None for none."""
        return None

    def encode_user_data(self, data: Any) -> bytes:
        return pack_msgpack(data)

    def decode_user_data(self, data: bytes | None) -> Any:
        """Inverse of :meth:`encode_user_data`; empty bytes (librdkafka's "none") give None."""
        return unpack_msgpack(data) if data else None

    def on_assignment(  # noqa: B027 optional hook
        self, assignment: Assignment, generation: int
    ) -> None:
        """Called on every member with its own assignment after each rebalance."""


def _member_order(subscriptions: Mapping[str, Subscription]) -> list[str]:
    """Java's MemberInfo order: static members by instance id first, then the rest by id."""

    def key(member_id: str) -> tuple[int, str, str]:
        instance_id = subscriptions[member_id].group_instance_id
        return (1, member_id, "") if instance_id is None else (0, instance_id, member_id)

    return sorted(subscriptions, key=key)


def _partitions_per_topic(
    cluster: PartitionLookup, subscriptions: Mapping[str, Subscription]
) -> dict[str, list[int]]:
    """Sorted partition ids of every subscribed topic the cluster knows (others are skipped)."""
    result = {}
    for topic in sorted({t for sub in subscriptions.values() for t in sub.topics}):
        partitions = cluster.partitions_for_topic(topic)
        if partitions:
            result[topic] = sorted(partitions)
    return result


def _assignments(
    subscriptions: Mapping[str, Subscription], partitions: Mapping[str, Iterable[TopicPartition]]
) -> dict[str, Assignment]:
    return {m: Assignment(sorted(partitions.get(m, ()))) for m in subscriptions}


class RangeAssignor(Assignor):
    """Per topic, contiguous ranges; the first ``n % m`` members get one extra partition.

    10 partitions over 3 members give 4, 3, 3; over several topics the first members get the
    extras of every topic, which is this assignor's known imbalance.
    """

    name = "range"

    def assign(
        self, cluster: PartitionLookup, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        order = _member_order(subscriptions)
        assigned: dict[str, list[TopicPartition]] = defaultdict(list)
        for topic, partitions in _partitions_per_topic(cluster, subscriptions).items():
            members = [m for m in order if topic in subscriptions[m].topics]
            per_member, extra = divmod(len(partitions), len(members))
            start = 0
            for i, member in enumerate(members):
                length = per_member + (1 if i < extra else 0)
                assigned[member].extend(
                    TopicPartition(topic, p) for p in partitions[start : start + length]
                )
                start += length
        return _assignments(subscriptions, assigned)


class RoundRobinAssignor(Assignor):
    """All partitions, sorted by topic then id, dealt to the members in a circle.

    A member not subscribed to a partition's topic is skipped, so with differing
    subscriptions the result can be unbalanced (Java's behaviour, kept for compatibility).
    """

    name = "roundrobin"

    def assign(
        self, cluster: PartitionLookup, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        order = _member_order(subscriptions)
        topics_of = {m: set(sub.topics) for m, sub in subscriptions.items()}
        assigned: dict[str, list[TopicPartition]] = defaultdict(list)
        position = 0
        for topic, partitions in _partitions_per_topic(cluster, subscriptions).items():
            for partition in partitions:
                # Terminates: the topic came from some member's subscription.
                while topic not in topics_of[order[position % len(order)]]:
                    position += 1
                assigned[order[position % len(order)]].append(TopicPartition(topic, partition))
                position += 1
        return _assignments(subscriptions, assigned)


# -- sticky ---------------------------------------------------------------------------------

_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")


def encode_sticky_user_data(partitions: Iterable[TopicPartition], generation: int) -> bytes:
    """Java's StickyAssignor user data, v1: [topic, [partition]] then the generation."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    parts = [_INT32.pack(len(by_topic))]
    for topic, ids in by_topic.items():
        name = topic.encode("utf-8")
        parts += [_INT16.pack(len(name)), name, _INT32.pack(len(ids))]
        parts += [_INT32.pack(p) for p in ids]
    parts.append(_INT32.pack(generation))
    return b"".join(parts)


def decode_sticky_user_data(data: bytes) -> tuple[list[TopicPartition], int]:
    """Decode sticky user data: Java's v1 (or v0, without generation: -1).

    Also reads kafka-python 3's variant, which puts an int16 version (1) in front. Raises
    ProtocolDecodeError for anything else; trailing bytes are ignored, as Java's reader does.
    """
    try:
        return _decode_sticky_user_data(memoryview(data))
    except ProtocolDecodeError:
        if data[:2] != b"\x00\x01":
            raise
    return _decode_sticky_user_data(memoryview(data)[2:])


def _decode_sticky_user_data(view: memoryview) -> tuple[list[TopicPartition], int]:
    pos = 0

    def take(size: int) -> memoryview:
        nonlocal pos
        if size < 0 or pos + size > len(view):
            raise ProtocolDecodeError(
                f"sticky assignor user data truncated: need {size} bytes at {pos} of {len(view)}"
            )
        pos += size
        return view[pos - size : pos]

    partitions = []
    for _ in range(_INT32.unpack(take(4))[0]):
        try:
            topic = str(take(_INT16.unpack(take(2))[0]), "utf-8")
        except UnicodeDecodeError as exc:
            raise ProtocolDecodeError(f"sticky assignor user data: bad topic name: {exc}") from None
        count = max(_INT32.unpack(take(4))[0], 0)
        partitions += [
            TopicPartition(topic, p) for p in struct.unpack(f">{count}i", take(4 * count))
        ]
    generation = _INT32.unpack(take(4))[0] if len(view) - pos >= 4 else -1
    return partitions, generation


class StickyAssignor(Assignor):
    """Balanced like round robin, but keeps each partition where it was when it can.

    Previous ownership comes from Java's sticky user data when a member sends it (Java and
    kafka-python members do), else from the subscription's owned partitions. When two members
    claim a partition the higher generation wins; on a tie neither keeps it.

    The result is balanced in Java's sense: no partition could move to another member
    subscribed to its topic that has at least two fewer partitions, so with identical
    subscriptions counts differ by at most one. Reaching it moves the fewest partitions:
    members above their share give up the excess, nothing else moves.
    """

    name = "sticky"

    def __init__(self) -> None:
        self._owned: list[TopicPartition] | None = None
        self._generation = -1

    def user_data(self, topics: list[str]) -> Any:
        return None if self._owned is None else (self._owned, self._generation)

    def encode_user_data(self, data: tuple[list[TopicPartition], int]) -> bytes:
        return encode_sticky_user_data(*data)

    def decode_user_data(self, data: bytes | None) -> tuple[list[TopicPartition], int] | None:
        """None for absent or undecodable data: a bad blob costs stickiness, not the group."""
        if not data:
            return None
        try:
            return decode_sticky_user_data(data)
        except ProtocolDecodeError:
            return None

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        self._owned = list(assignment.partitions)
        self._generation = generation

    def assign(
        self, cluster: PartitionLookup, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        order = _member_order(subscriptions)
        rank = {m: i for i, m in enumerate(order)}
        eligible = {
            TopicPartition(topic, p): [m for m in order if topic in subscriptions[m].topics]
            for topic, partitions in _partitions_per_topic(cluster, subscriptions).items()
            for p in partitions
        }
        owner = self._previous_owners(subscriptions, order, eligible)
        assigned: dict[str, list[TopicPartition]] = {m: [] for m in order}
        for tp, member in owner.items():
            assigned[member].append(tp)

        def least_loaded(candidates: Iterable[str]) -> str:
            return min(candidates, key=lambda m: (len(assigned[m]), rank[m]))

        # Most constrained partitions first, so they find room among their few members.
        unowned = sorted(
            (tp for tp in eligible if tp not in owner), key=lambda tp: (len(eligible[tp]), tp)
        )
        for tp in unowned:
            assigned[least_loaded(eligible[tp])].append(tp)
        for partitions in assigned.values():
            partitions.sort()
        self._rebalance(assigned, eligible, rank)
        return _assignments(subscriptions, assigned)

    def _previous_owners(
        self,
        subscriptions: Mapping[str, Subscription],
        order: list[str],
        eligible: Mapping[TopicPartition, list[str]],
    ) -> dict[TopicPartition, str]:
        """Who may keep what: valid claims only, the highest generation winning conflicts."""
        claims: dict[TopicPartition, tuple[int, str | None]] = {}
        for member in order:
            subscription = subscriptions[member]
            decoded = self.decode_user_data(subscription.user_data)
            owned, generation = decoded or (
                subscription.owned_partitions,
                subscription.generation_id,
            )
            for tp in set(owned):
                if member not in eligible.get(tp, ()):
                    continue  # the partition is gone or the member unsubscribed from its topic
                previous = claims.get(tp)
                if previous is None or generation > previous[0]:
                    claims[tp] = (generation, member)
                elif generation == previous[0]:
                    claims[tp] = (generation, None)
        return {tp: member for tp, (_, member) in claims.items() if member is not None}

    @staticmethod
    def _rebalance(
        assigned: dict[str, list[TopicPartition]],
        eligible: Mapping[TopicPartition, list[str]],
        rank: Mapping[str, int],
    ) -> None:
        """Move single partitions from the most loaded members to ones with two fewer.

        Each move lowers the sum of squared counts, so the loop ends; it stops where no such
        move exists, which is the balance criterion. The lists stay sorted, so the partition
        that moves is always the donor's highest movable one (deterministic results).
        """

        def next_move() -> tuple[TopicPartition, str, str] | None:
            for donor in sorted(assigned, key=lambda m: (-len(assigned[m]), rank[m])):
                limit = len(assigned[donor]) - 1
                for tp in reversed(assigned[donor]):
                    receivers = [m for m in eligible[tp] if len(assigned[m]) < limit]
                    if receivers:
                        return tp, donor, min(receivers, key=lambda m: (len(assigned[m]), rank[m]))
            return None

        while (move := next_move()) is not None:
            tp, donor, receiver = move
            assigned[donor].remove(tp)
            bisect.insort(assigned[receiver], tp)


class CooperativeStickyAssignor(StickyAssignor):
    """The sticky assignment under the COOPERATIVE protocol (KIP-429).

    Members rejoin holding their partitions, which they report in their subscription
    (owned partitions and generation, ConsumerProtocol v1+). A partition the sticky
    assignment moves from one member to another is left out of this round: its owner, not
    assigned it any more, revokes it and rejoins, and the next round hands it to its new
    owner. No partition is owned by two members at once, and nothing else stops.
    """

    name = "cooperative-sticky"
    cooperative = True

    def user_data(self, topics: list[str]) -> Any:
        return None  # ownership travels in the subscription's owned partitions

    def decode_user_data(self, data: bytes | None) -> tuple[list[TopicPartition], int] | None:
        return None  # Java's cooperative-sticky user data is a generation alone: not used

    def assign(
        self, cluster: PartitionLookup, subscriptions: Mapping[str, Subscription]
    ) -> dict[str, Assignment]:
        result = super().assign(cluster, subscriptions)
        owners = {tp: member for member, subscription in subscriptions.items()
                  for tp in subscription.owned_partitions}
        return {member: Assignment([tp for tp in assignment.partitions
                                    if owners.get(tp, member) == member],
                                   assignment.user_data)
                for member, assignment in result.items()}


ASSIGNORS: Mapping[str, type[Assignor]] = {
    cls.name: cls
    for cls in (RangeAssignor, RoundRobinAssignor, StickyAssignor, CooperativeStickyAssignor)
}


def _resolve_one(value: object) -> Assignor:
    if isinstance(value, str):
        try:
            return ASSIGNORS[value]()
        except KeyError:
            names = ", ".join(sorted(ASSIGNORS))
            raise ConfigError(
                "partition_assignment_strategy",
                f"unknown assignor {value!r}; use one of {names} or an Assignor subclass",
            ) from None
    if isinstance(value, type) and issubclass(value, Assignor):
        value = value()
    if not isinstance(value, Assignor):
        raise ConfigError(
            "partition_assignment_strategy",
            f"expected an Assignor, an Assignor subclass or a name, got {value!r}",
        )
    if not isinstance(getattr(value, "name", None), str) or not value.name:
        raise ConfigError(
            "partition_assignment_strategy", f"{type(value).__name__} has no protocol name"
        )
    return value


def resolve_assignors(value: object) -> list[Assignor]:
    """Turn ``partition_assignment_strategy`` (one item or a list, in preference order) into
    assignors. Names must be unique: they identify the protocols offered in JoinGroup."""
    items = list(value) if isinstance(value, list | tuple) else [value]
    if not items:
        raise ConfigError("partition_assignment_strategy", "at least one assignor is required")
    assignors = [_resolve_one(item) for item in items]
    names = [a.name for a in assignors]
    if len(set(names)) != len(names):
        raise ConfigError("partition_assignment_strategy", f"duplicate assignor names in {names}")
    return assignors
