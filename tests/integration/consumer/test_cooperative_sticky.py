"""The classic protocol's cooperative-sticky assignor (KIP-429) with kafkalite consumers:
a member joining takes partitions from the others without anyone revoking what it keeps,
and every record is read once."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable

from kafkalite.consumer import Consumer, ConsumerRebalanceListener
from kafkalite.structs import ConsumerRecord, TopicPartition
from tests.integration.consumer.helpers import poll_until, produce


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, set[int]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.events.append(("revoked", {tp.partition for tp in revoked}))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", {tp.partition for tp in assigned}))


def test_a_joining_member_takes_only_what_moves(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    sent = produce(bootstrap, "coop", 6, 10)
    strategy = {"group_id": "coop", "partition_assignment_strategy": ["cooperative-sticky"]}
    first, second = consumers(**strategy), consumers(**strategy)
    listener = Recorder()
    first.subscribe(["coop"], listener=listener)
    read: list[ConsumerRecord] = []
    poll_until([first], lambda: len(first.assignment()) == 6, sink=read)
    second.subscribe(["coop"])
    poll_until([first, second], lambda: len(read) >= len(sent)
               and len(first.assignment()) == len(second.assignment()) == 3, sink=read)
    assert listener.events[0] == ("assigned", set(range(6)))
    revoked = [moved for kind, moved in listener.events if kind == "revoked"]
    kept = {tp.partition for tp in first.assignment()}
    # one revocation, of exactly what moved to the newcomer; what it kept never revoked
    assert revoked == [set(range(6)) - kept]
    assert {tp.partition for tp in second.assignment()} == set(range(6)) - kept
    counts = Counter((r.partition, r.value) for r in read)
    assert set(counts) == sent and max(counts.values()) == 1
