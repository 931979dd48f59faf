"""A classic consumer group: members, generation, chosen protocol, committed offsets.

This is the bookkeeping only. The decisions (when to rebalance, what to answer) are the
coordinator's; keeping them apart keeps each one small enough to read against Kafka's
``ClassicGroup`` and ``GroupCoordinator``.
"""

from __future__ import annotations

from collections import Counter

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.consumer_protocol import ConsumerProtocolSubscription
from kafkalite_server.group.member import GroupMember
from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition
from kafkalite_server.group.results import JoinedMember
from kafkalite_server.group.state import VALID_PREVIOUS_STATES, GroupState
from kafkalite_server.group.timers import TimerHandle

#: The protocol type of consumers, whose subscriptions the coordinator can read (OffsetDelete).
CONSUMER_PROTOCOL_TYPE = "consumer"


class IllegalStateTransition(RuntimeError):
    """A coordinator bug: the group was asked to move along an edge Kafka does not have."""


class ClassicGroup:
    def __init__(self, group_id: str, partition: int, now_ms: int) -> None:
        self.group_id = group_id
        self.partition = partition
        self.state = GroupState.EMPTY
        self.state_timestamp_ms = now_ms
        self.generation_id = 0
        self.protocol_type: str | None = None
        self.protocol_name: str | None = None
        self.leader_id: str | None = None
        self.members: dict[str, GroupMember] = {}
        #: KIP-345 static members: group.instance.id -> the member id currently holding it.
        self.static_members: dict[str, str] = {}
        #: Members told MEMBER_ID_REQUIRED that have not joined with their id yet.
        self.pending_members: dict[str, TimerHandle] = {}
        self.offsets: dict[TopicPartition, OffsetAndMetadata] = {}
        #: The first rebalance of an empty group waits group.initial.rebalance.delay.ms even
        #: when everyone has joined, so a fleet starting together lands in one generation.
        self.in_initial_delay = False
        #: Set when a member joins during a brand-new group's initial delay, to extend it.
        self.new_member_added = False
        self.join_timer: TimerHandle | None = None

    def __repr__(self) -> str:
        return (
            f"ClassicGroup({self.group_id!r}, {self.state.value}, generation={self.generation_id}, "
            f"members={list(self.members)})"
        )

    def is_state(self, *states: GroupState) -> bool:
        return self.state in states

    def transition_to(self, target: GroupState, now_ms: int) -> None:
        if self.state not in VALID_PREVIOUS_STATES[target]:
            raise IllegalStateTransition(
                f"group {self.group_id}: {self.state.value} -> {target.value} is not allowed"
            )
        self.state = target
        self.state_timestamp_ms = now_ms

    def is_leader(self, member_id: str) -> bool:
        return self.leader_id == member_id

    def add(self, member: GroupMember) -> None:
        """Add a member; the first member of an empty group fixes its protocol type and leads."""
        if not self.members:
            self.protocol_type = member.protocol_type
        self.members[member.member_id] = member
        if member.group_instance_id is not None:
            self.static_members[member.group_instance_id] = member.member_id
        if self.leader_id is None:
            self.leader_id = member.member_id

    def remove(self, member_id: str) -> GroupMember:
        """Drop a member; if it led, the oldest remaining member takes over."""
        member = self.members.pop(member_id)
        member.cancel_expiry()
        if member.group_instance_id is not None:
            self.static_members.pop(member.group_instance_id, None)
        if self.is_leader(member_id):
            self.leader_id = next(iter(self.members), None)
        return member

    def static_member_id(self, group_instance_id: str | None) -> str | None:
        """The member id registered under ``group_instance_id``, if any."""
        if group_instance_id is None:
            return None
        return self.static_members.get(group_instance_id)

    def replace_static_member(self, group_instance_id: str, new_member_id: str) -> GroupMember:
        """Move a static member to a fresh member id (its restarted incarnation), keeping its
        place, assignment and leadership. The caller answers the old id's parked requests."""
        old_member_id = self.static_members[group_instance_id]
        member = self.members.pop(old_member_id)
        member.member_id = new_member_id
        self.members[new_member_id] = member
        self.static_members[group_instance_id] = new_member_id
        if self.leader_id == old_member_id:
            self.leader_id = new_member_id
        return member

    def cancel_join_timer(self) -> None:
        self.in_initial_delay = False
        if self.join_timer is not None:
            self.join_timer.cancel()
            self.join_timer = None

    @property
    def rebalance_timeout_ms(self) -> int:
        """How long a rebalance waits for rejoins: the largest of the members' timeouts."""
        return max((m.rebalance_timeout_ms for m in self.members.values()), default=0)

    def has_all_members_joined(self) -> bool:
        return not self.pending_members and all(m.awaiting_join for m in self.members.values())

    def members_not_rejoined(self) -> list[GroupMember]:
        return [m for m in self.members.values() if not m.awaiting_join]

    def subscribed_topics(self) -> set[str] | None:
        """The topics the members' consumer-protocol subscriptions name; None when they cannot
        be known (another protocol type, no protocol chosen yet, or unreadable metadata)."""
        if self.protocol_type != CONSUMER_PROTOCOL_TYPE or self.protocol_name is None:
            return None
        topics: set[str] = set()
        for member in self.members.values():
            try:
                metadata = member.metadata_for(self.protocol_name)
                topics.update(ConsumerProtocolSubscription.decode(metadata).topics)
            except (KeyError, ProtocolDecodeError):
                return None
        return topics

    def candidate_protocols(self) -> set[str]:
        """The protocols every current member supports."""
        counts = Counter(name for m in self.members.values() for name in set(m.protocol_names()))
        return {name for name, count in counts.items() if count == len(self.members)}

    def supports_protocols(self, protocol_type: str, protocols: list[tuple[str, bytes]]) -> bool:
        """Whether a member with this type and these protocols may join (Kafka's rule)."""
        if not protocol_type or not protocols:
            return False
        if not self.members:
            return True
        names = {name for name, _ in protocols}
        return protocol_type == self.protocol_type and bool(names & self.candidate_protocols())

    def select_protocol(self) -> str:
        """Each member votes for its first common protocol; most votes wins, ties go to the
        leader's order of preference, so the choice is deterministic."""
        candidates = self.candidate_protocols()
        if not candidates:
            raise ValueError(f"group {self.group_id} has no protocol every member supports")
        votes = Counter(m.vote(candidates) for m in self.members.values())
        best = max(votes.values())
        leader = self.members.get(self.leader_id or "")
        order = leader.protocol_names() if leader else sorted(candidates)
        return next(name for name in order if votes.get(name) == best)

    def elect_joined_leader(self) -> None:
        """If the leader did not rejoin, hand leadership to a member that did."""
        leader = self.members.get(self.leader_id or "")
        if leader is not None and leader.awaiting_join:
            return
        joined = next((m.member_id for m in self.members.values() if m.awaiting_join), None)
        if joined is not None:
            self.leader_id = joined

    def init_next_generation(self, now_ms: int) -> None:
        """Close a join phase: bump the generation, pick the protocol, await the assignment."""
        self.generation_id += 1
        self.cancel_join_timer()
        if self.members:
            self.protocol_name = self.select_protocol()
            self.transition_to(GroupState.COMPLETING_REBALANCE, now_ms)
        else:
            self.protocol_name = None
            self.transition_to(GroupState.EMPTY, now_ms)

    def joined_members(self) -> list[JoinedMember]:
        """The member list (with the chosen protocol's metadata) the leader assigns from."""
        protocol = self.protocol_name
        if protocol is None:
            raise ValueError(f"group {self.group_id} has not chosen a protocol yet")
        return [
            JoinedMember(m.member_id, m.group_instance_id, m.metadata_for(protocol))
            for m in self.members.values()
        ]
