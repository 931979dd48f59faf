"""Consumer groups as KIP-848 describes them: ConsumerGroupDescribe at each group's
coordinator, with the group type, the group and assignment epochs, and each member's epoch,
current and target assignment. A group of the classic protocol is described through
DescribeGroups (:mod:`kafkalite.admin.groups`) into the same shape, its epochs unknown
(-1): the broker answers ConsumerGroupDescribe for it with GROUP_ID_NOT_FOUND.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkalite.admin.groups import GroupDescription, GroupType, group_lookup, operation_names
from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import GroupIdNotFoundError
from kafkalite.structs import TopicPartition

UNKNOWN_EPOCH = -1


@dataclass(frozen=True)
class ConsumerGroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    member_epoch: int
    """-1 in a classic group (its members have a generation, not an epoch)."""
    assignment: list[TopicPartition]
    target_assignment: list[TopicPartition]
    """What the coordinator wants the member to own; the member gets there by revoking
    first (empty in a classic group, whose members learn their assignment at once)."""
    rack_id: str | None = None
    subscribed_topics: tuple[str, ...] = ()


@dataclass(frozen=True)
class ConsumerGroupDescription:
    group_id: str
    group_type: str
    """``consumer`` (KIP-848) or ``classic``."""
    state: str
    group_epoch: int
    assignment_epoch: int
    assignor: str
    members: list[ConsumerGroupMember]
    authorized_operations: list[str] | None = None

    @classmethod
    def of_classic(cls, group: GroupDescription) -> ConsumerGroupDescription:
        return cls(group.group_id, GroupType.CLASSIC.value, group.state, UNKNOWN_EPOCH,
                   UNKNOWN_EPOCH, group.protocol, [
                       ConsumerGroupMember(m.member_id, m.group_instance_id, m.client_id,
                                           m.client_host, UNKNOWN_EPOCH, m.assignment, [])
                       for m in group.members], group.authorized_operations)


def _partitions(assignment: Mapping[str, Any]) -> list[TopicPartition]:
    return sorted(TopicPartition(t["topic_name"], p)
                  for t in assignment["topic_partitions"] for p in t["partitions"])


class DescribeConsumerGroups(AdminApiHandler[str, ConsumerGroupDescription | None]):
    """ConsumerGroupDescribe; a group the broker does not know as a consumer group
    completes with None (the caller describes it as a classic group)."""

    api_key = ApiKey.CONSUMER_GROUP_DESCRIBE

    def __init__(self, coordinator: int | None = None,
                 include_authorized_operations: bool = False) -> None:
        super().__init__(group_lookup(coordinator))
        self.include_authorized_operations = include_authorized_operations

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {
            "group_ids": list(keys),
            "include_authorized_operations": self.include_authorized_operations},
            needs="describe_consumer_groups")

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, ConsumerGroupDescription | None]:
        outcome: ApiResult[str, ConsumerGroupDescription | None] = ApiResult()
        for group in body["groups"]:
            group_id = group["group_id"]
            if group["error_code"] == GroupIdNotFoundError.errno:
                outcome.complete(group_id, None)
                continue
            if outcome.error(group_id, group["error_code"], f"describing group {group_id!r}",
                             group["error_message"]):
                continue
            members = [ConsumerGroupMember(
                m["member_id"], m["instance_id"], m["client_id"], m["client_host"],
                m["member_epoch"], _partitions(m["assignment"]),
                _partitions(m["target_assignment"]), m["rack_id"],
                tuple(m["subscribed_topic_names"])) for m in group["members"]]
            operations = operation_names(group["authorized_operations"]) \
                if self.include_authorized_operations else None
            outcome.complete(group_id, ConsumerGroupDescription(
                group_id, GroupType.CONSUMER.value, group["group_state"],
                group["group_epoch"], group["assignment_epoch"], group["assignor_name"],
                members, operations))
        return outcome
