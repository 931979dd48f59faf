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


Assignor = Callable[
    [Mapping[str, frozenset[str]], Mapping[str, SubscribedTopic], Mapping[str, Assignment]],
    dict[str, Assignment],
]
"""(member id -> subscribed topic names, topic name -> topic, member id -> current target)
-> member id -> new target"""

UNIFORM = "uniform"
RANGE = "range"

_TopicPartition = tuple[str, int]


def uniform(subscriptions: Mapping[str, frozenset[str]], topics: Mapping[str, SubscribedTopic],
            current: Mapping[str, Assignment]) -> dict[str, Assignment]:
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
            kept[member] = sorted(tp for tp in ((ids[t], p) for t, ps in had.items() if t in ids
                                                for p in ps) if tp in eligible[member])
            chosen[member] = kept[member][:min_quota]
            taken.update(chosen[member])
        for member in active:  # the remainder's extra partitions stay where they were
            spare = [tp for tp in kept[member][min_quota:] if tp not in taken]
            if extra and spare:
                chosen[member].append(spare[0])
                taken.add(spare[0])
                extra -= 1
        for tp in assignable:
            if tp not in taken:
                owner = min((m for m in active if tp in eligible[m]),
                            key=lambda m: (len(chosen[m]), m))
                chosen[owner].append(tp)
    return {m: _by_topic_id(chosen[m], topics) for m in members}


def range_(subscriptions: Mapping[str, frozenset[str]], topics: Mapping[str, SubscribedTopic],
           current: Mapping[str, Assignment]) -> dict[str, Assignment]:
    chosen: dict[str, list[_TopicPartition]] = {m: [] for m in subscriptions}
    for name in sorted(topics):
        members = sorted(m for m, subscribed in subscriptions.items() if name in subscribed)
        if not members:
            continue
        share, extra = divmod(topics[name].partitions, len(members))
        start = 0
        for index, member in enumerate(members):
            count = share + (1 if index < extra else 0)
            chosen[member] += [(name, p) for p in range(start, start + count)]
            start += count
    return {m: _by_topic_id(chosen[m], topics) for m in sorted(subscriptions)}


ASSIGNORS: dict[str, Assignor] = {UNIFORM: uniform, RANGE: range_}


def _by_topic_id(partitions: list[_TopicPartition],
                 topics: Mapping[str, SubscribedTopic]) -> Assignment:
    grouped: dict[uuid.UUID, set[int]] = {}
    for name, partition in partitions:
        grouped.setdefault(topics[name].topic_id, set()).add(partition)
    return {topic_id: frozenset(ps) for topic_id, ps in grouped.items()}
