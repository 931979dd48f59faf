"""The share-group assignor (Kafka's *simple* assignor of KIP-932): a pure, deterministic
function of what each member may be assigned and what it holds now.

Each topic is assigned on its own, over the members subscribed to it (members may
subscribe to different topics), and only partitions whose share state is initialized are
assignable (the caller passes only those):

- **no more members than partitions**: each partition goes to exactly one member and the
  members' counts differ by at most one;
- **more members than partitions**: each member gets exactly one partition and each
  partition is shared by ``members // partitions`` or one more members (so by at most
  ``ceil(members / partitions)``).

It is sticky: a member keeps the partitions it holds as long as that stays within the
balance above; the members holding most keep their extra partition, and what a member must
give up (its highest partitions first) goes to the members holding fewest, so a member
joining takes partitions from the most loaded and a member leaving hands its partitions to
the least loaded. Ties are broken by member id and partition number, so the same input
always gives the same output.

Why spread rather than give every member everything: records go to one member at a time
either way (the share partition hands each record to one consumer under a lock), but a
member opens a share session with the leader of every partition it is assigned. Spreading
keeps one member from reading every partition while others idle, and each partition has as
few sessions as the group's size allows.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping, Sequence

Assignment = dict[uuid.UUID, tuple[int, ...]]
"""topic id -> partitions"""


def assign(assignable: Mapping[str, Mapping[uuid.UUID, Sequence[int]]],
           current: Mapping[str, Mapping[uuid.UUID, Sequence[int]]]) -> dict[str, Assignment]:
    """Every member's new assignment.

    ``assignable``: member id -> topic id -> the partitions it may be assigned (of the
    topics it subscribes to, those that exist and are initialized: the same for every
    member subscribed to a topic, as they are the group's); every member of the group is a
    key. ``current``: member id -> what it holds now (absent: nothing); partitions no longer
    assignable are dropped.
    """
    members = sorted(assignable)
    result: dict[str, Assignment] = {m: {} for m in members}
    topics = sorted({t for m in members for t, ps in assignable[m].items() if ps})
    for topic in topics:
        subscribers = [m for m in members if assignable[m].get(topic)]
        partitions = sorted(set().union(*(assignable[m][topic] for m in subscribers)))
        holding = {m: [p for p in sorted(set(current.get(m, {}).get(topic, ())))
                       if p in partitions] for m in subscribers}
        spread = _split(partitions, holding) if len(subscribers) <= len(partitions) \
            else _share(partitions, holding)
        for member, chosen in spread.items():
            if chosen:
                result[member][topic] = tuple(sorted(chosen))
    return result


def _split(partitions: list[int], holding: dict[str, list[int]]) -> dict[str, list[int]]:
    """No more members than partitions: each partition to one member, counts within one."""
    members = sorted(holding)
    quota, extra = divmod(len(partitions), len(members))
    kept: dict[str, list[int]] = {}
    taken: set[int] = set()
    for member in members:  # a partition two members hold stays with the first in id order
        kept[member] = [p for p in holding[member] if p not in taken]
        taken.update(kept[member])
    # the members holding most keep the extra partitions (fewest moves)
    by_load = sorted(members, key=lambda m: (-len(kept[m]), m))
    quotas = {m: quota + (1 if index < extra else 0) for index, m in enumerate(by_load)}
    chosen = {m: kept[m][:quotas[m]] for m in members}
    taken = {p for ps in chosen.values() for p in ps}
    for partition in (p for p in partitions if p not in taken):
        receiver = min((m for m in members if len(chosen[m]) < quotas[m]),
                       key=lambda m: (len(chosen[m]), m))
        chosen[receiver].append(partition)
    return chosen


def _share(partitions: list[int], holding: dict[str, list[int]]) -> dict[str, list[int]]:
    """More members than partitions: one partition each, members per partition within one."""
    members = sorted(holding)
    floor, extra = divmod(len(members), len(partitions))
    sharers = {p: 0 for p in partitions}
    chosen: dict[str, list[int]] = {}

    def room(partition: int) -> bool:
        above_floor = sum(1 for count in sharers.values() if count > floor)
        return sharers[partition] < floor or (sharers[partition] == floor
                                              and above_floor < extra)

    for member in members:  # each keeps the least shared of its partitions that has room
        open_ = [p for p in holding[member] if room(p)]
        if open_:
            partition = min(open_, key=lambda p: (sharers[p], p))
            chosen[member] = [partition]
            sharers[partition] += 1
    for member in (m for m in members if m not in chosen):
        partition = min((p for p in partitions if room(p)), key=lambda p: (sharers[p], p))
        chosen[member] = [partition]
        sharers[partition] += 1
    return chosen
