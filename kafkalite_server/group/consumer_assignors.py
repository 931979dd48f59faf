"""The server-side assignors of consumer groups (KIP-848): ``uniform`` and ``range``.

An assignor is a pure function of the members' subscriptions, the subscribed topics'
partition counts and the current target assignment; it returns every member's new target
(topic id -> partitions). The coordinator picks the assignor a member asks for
(``server_assignor``) if the broker offers it (``group.consumer.assignors``), else the
first one configured; any other name is UNSUPPORTED_ASSIGNOR.

- ``uniform`` (Kafka's default) spreads the partitions so member counts differ by at most
  one when every member subscribes to the same topics, and is sticky: a member keeps what
  it had up to its fair share, so a member joining takes only the partitions that must
  move. With differing subscriptions each free partition goes to the subscribed member
  holding the fewest (balanced as far as the subscriptions allow).
- ``range`` gives each member, per topic, a contiguous range of partitions (members in id
  order, the first ``partitions % members`` one extra), so members subscribed to
  co-partitioned topics get the same partition numbers of each.

Both are rack-aware (KIP-881): when members give their rack (``rack_id``) and the brokers
theirs (``broker.rack``), a partition goes, where the balance allows, to a member in a rack
that holds one of its replicas, so that the member can fetch from a replica in its own rack
(KIP-392). Balance comes first: the number of partitions each member gets is the same as
without racks; only which partitions change. ``uniform`` keeps a member's partitions
(stickiness) before it looks at racks, and of a member that must give some up keeps those
in its rack; ``range`` keeps its contiguous ranges when racks do
not tell partitions apart (every replica set spans every member's rack, or no racks are
known).
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Mapping
from dataclasses import dataclass

Assignment = dict[uuid.UUID, frozenset[int]]
"""topic id -> partitions"""


@dataclass(frozen=True)
class SubscribedTopic:
    topic_id: uuid.UUID
    partitions: int
    racks: tuple[frozenset[str], ...] = ()
    """Per partition, the racks of its replicas' brokers (empty: not known)."""

    def in_rack(self, partition: int, rack: str | None) -> bool:
        """Whether a replica of ``partition`` is in ``rack``."""
        return rack is not None and partition < len(self.racks) and rack in self.racks[partition]


Assignor = Callable[
    [Mapping[str, frozenset[str]], Mapping[str, SubscribedTopic], Mapping[str, Assignment],
     Mapping[str, str | None]],
    dict[str, Assignment],
]
"""(member id -> subscribed topic names, topic name -> topic, member id -> current target,
member id -> its rack) -> member id -> new target"""

UNIFORM = "uniform"
RANGE = "range"

_TopicPartition = tuple[str, int]


def uniform(subscriptions: Mapping[str, frozenset[str]], topics: Mapping[str, SubscribedTopic],
            current: Mapping[str, Assignment],
            racks: Mapping[str, str | None] | None = None) -> dict[str, Assignment]:
    members = sorted(subscriptions)
    eligible = {m: {(t, p) for t in subscriptions[m] if t in topics
                    for p in range(topics[t].partitions)} for m in members}
    ids = {topic.topic_id: name for name, topic in topics.items()}
    assignable = sorted(set().union(*eligible.values())) if members else []
    active = [m for m in members if eligible[m]]
    chosen: dict[str, list[_TopicPartition]] = {m: [] for m in members}
    if active:
        min_quota, extra = divmod(len(assignable), len(active))
        taken: set[_TopicPartition] = set()
        kept: dict[str, list[_TopicPartition]] = {}
        for member in active:
            had = current.get(member, {})
            rack = (racks or {}).get(member)
            kept[member] = sorted((tp for tp in ((ids[t], p) for t, ps in had.items()
                                                 if t in ids for p in ps)
                                   if tp in eligible[member]),  # its rack's first
                                  key=lambda tp: (not topics[tp[0]].in_rack(tp[1], rack), tp))
            chosen[member] = kept[member][:min_quota]
            taken.update(chosen[member])
        for member in active:  # the remainder's extra partitions stay where they were
            spare = [tp for tp in kept[member][min_quota:] if tp not in taken]
            if extra and spare:
                chosen[member].append(spare[0])
                taken.add(spare[0])
                extra -= 1
        free = [tp for tp in assignable if tp not in taken]
        if racks:  # first, members below their share take free partitions in their rack
            for tp in list(free):
                local = [m for m in active if tp in eligible[m] and len(chosen[m]) < min_quota
                         and topics[tp[0]].in_rack(tp[1], racks.get(m))]
                if local:
                    chosen[min(local, key=lambda m: (len(chosen[m]), m))].append(tp)
                    free.remove(tp)
        for tp in free:
            owner = min((m for m in active if tp in eligible[m]),
                        key=lambda m: (len(chosen[m]), m))
            chosen[owner].append(tp)
    return {m: _by_topic_id(chosen[m], topics) for m in members}


def range_(subscriptions: Mapping[str, frozenset[str]], topics: Mapping[str, SubscribedTopic],
           current: Mapping[str, Assignment],
           racks: Mapping[str, str | None] | None = None) -> dict[str, Assignment]:
    chosen: dict[str, list[_TopicPartition]] = {m: [] for m in subscriptions}
    for name in sorted(topics):
        members = sorted(m for m, subscribed in subscriptions.items() if name in subscribed)
        if not members:
            continue
        topic = topics[name]
        share, extra = divmod(topic.partitions, len(members))
        counts = {m: share + (1 if index < extra else 0) for index, m in enumerate(members)}
        left = list(range(topic.partitions))
        if racks and not _racks_alike(topic, [racks.get(m) for m in members]):
            for member in members:  # first, each member's own rack's partitions, in order
                local = [p for p in left if topic.in_rack(p, racks.get(member))]
                mine = local[:counts[member]]
                chosen[member] += [(name, p) for p in mine]
                left = [p for p in left if p not in mine]
        for member in members:
            count = counts[member] - sum(1 for t, _p in chosen[member] if t == name)
            chosen[member] += [(name, p) for p in left[:count]]
            left = left[count:]
    return {m: _by_topic_id(chosen[m], topics) for m in sorted(subscriptions)}


def _racks_alike(topic: SubscribedTopic, member_racks: list[str | None]) -> bool:
    """Whether no member's rack tells the topic's partitions apart (each member's rack holds
    a replica of every partition or of none): the contiguous ranges are then as local."""
    return all(len({topic.in_rack(p, rack) for p in range(topic.partitions)}) <= 1
               for rack in member_racks)


ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform, RANGE: range_}


def _by_topic_id(partitions: list[_TopicPartition],
                 topics: Mapping[str, SubscribedTopic]) -> Assignment:
    grouped: dict[uuid.UUID, set[int]] = {}
    for name, partition in partitions:
        grouped.setdefault(topics[name].topic_id, set()).add(partition)
    return {topic_id: frozenset(ps) for topic_id, ps in grouped.items()}
