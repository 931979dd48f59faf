"""Consumer groups: ListGroups (every broker), DescribeGroups, DeleteGroups and LeaveGroup
(each group's coordinator).

The results read both ways: ``listing.group_id`` and kafka-python 3's
``listing['group_id']`` (see :mod:`kafkalite.admin.dict_shape`).
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar

from kafkalite.admin.dict_shape import DictShape
from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import Coordinator, EachBroker, GivenBroker, LookupStrategy
from kafkalite.consumer.group_wire import PROTOCOL_TYPE, assignment_from_wire
from kafkalite.errors import KafkaError, NoError, ProtocolDecodeError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.acl_codes import ACLOperation
from kafkalite.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafkalite.protocol.errors import error_for_code
from kafkalite.protocol.states import GroupState
from kafkalite.structs import TopicPartition


class GroupType(enum.StrEnum):
    """A group's protocol family (ListGroups v5+'s group_type)."""

    UNKNOWN = "Unknown"
    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"


def wire_name(value: str, names: type[enum.StrEnum]) -> str:
    """A state or type filter as the broker spells it: a member, its name in any case
    (``"preparing-rebalance"``), or the wire value itself."""
    if isinstance(value, names):
        return value.value
    key = str(value).upper().replace("-", "_")
    return names[key].value if key in names.__members__ else str(value)


@dataclass(frozen=True)
class GroupListing(DictShape):
    """One group of a ListGroups answer; also ``listing['group_id']`` and the other keys
    of kafka-python 3's dict. ``group_state`` / ``group_type`` are None from a broker
    whose ListGroups predates them (v4 / v5)."""

    group_id: str
    protocol_type: str
    group_state: str | None = None
    group_type: str | None = None

    DICT_KEYS: ClassVar[tuple[str, ...]] = ("group_id", "protocol_type", "group_state",
                                            "group_type")


@dataclass(frozen=True)
class MemberDescription(DictShape):
    """One member of a described group; ``assignment`` is its decoded assignment (consumer
    groups). kafka-python 3's keys add the decoded ``member_metadata`` (the member's
    subscription) and ``member_assignment``, raw bytes where they do not decode."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartition]
    member_metadata: ConsumerProtocolSubscription | bytes | None = None
    member_assignment: ConsumerProtocolAssignment | bytes | None = None
    raw_metadata: bytes = field(default=b"", repr=False)
    """The member's metadata as the broker sent it (aiokafka's admin returns the bytes)."""
    raw_assignment: bytes = field(default=b"", repr=False)
    """The member's assignment as the broker sent it."""

    DICT_KEYS: ClassVar[tuple[str, ...]] = ("member_id", "group_instance_id", "client_id",
                                            "client_host", "member_metadata",
                                            "member_assignment")


@dataclass(frozen=True)
class GroupDescription(DictShape):
    """A group as its coordinator describes it; kafka-python 3's keys too (``group_state``
    is :attr:`state`, ``protocol_data`` is :attr:`protocol`, ``error`` is None)."""

    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription]
    authorized_operations: list[str] | None = None
    """The caller's operations on the group, by name, when asked for (KIP-430)."""
    error: str | None = None

    DICT_KEYS: ClassVar[tuple[str, ...]] = ("group_id", "group_state", "protocol_type",
                                            "protocol_data", "members",
                                            "authorized_operations", "error")
    DICT_ATTRIBUTES: ClassVar[Mapping[str, str]] = {"group_state": "state",
                                                    "protocol_data": "protocol"}


@dataclass(frozen=True)
class MemberToRemove:
    """A member for ``remove_group_members``: a dynamic one by ``member_id``, a static one
    by ``group_instance_id`` (kafka-python's class; ``reason`` is not sent: LeaveGroup v5)."""

    member_id: str | None = None
    group_instance_id: str | None = None
    reason: str | None = None


def operation_names(bits: int) -> list[str]:
    """The ACL operations set in an authorized-operations bit field, by name (none when the
    broker did not report them)."""
    if bits < 0:
        return []
    return [op.name for op in ACLOperation if op > ACLOperation.ALL and bits & (1 << op)]


def group_lookup(given: int | None) -> LookupStrategy[str]:
    """The group's coordinator, or the broker the caller named as it."""
    return Coordinator() if given is None else GivenBroker(given)


class ListGroups(AdminApiHandler[int, list[GroupListing]]):
    """The groups each broker coordinates (the keys are broker ids)."""

    api_key = ApiKey.LIST_GROUPS

    def __init__(self, states_filter: Iterable[GroupState | str] | None = None,
                 types_filter: Iterable[GroupType | str] | None = None) -> None:
        super().__init__(EachBroker())
        self.states = [wire_name(s, GroupState) for s in states_filter or ()]
        self.types = [wire_name(t, GroupType) for t in types_filter or ()]

    def build_request(self, node: int, keys: Sequence[int]) -> Request:
        needed = 5 if self.types else 4 if self.states else 0
        return Request(self.api_key, {"states_filter": self.states, "types_filter": self.types},
                       min_version=needed,
                       needs="list_groups(types_filter=...)" if self.types else
                       "list_groups(states_filter=...)")

    def handle_response(self, node: int, keys: Sequence[int], body: Mapping[str, Any],
                        ) -> ApiResult[int, list[GroupListing]]:
        outcome: ApiResult[int, list[GroupListing]] = ApiResult()
        if not outcome.error(node, body["error_code"], f"listing groups on broker {node}"):
            outcome.complete(node, [GroupListing(g["group_id"], g["protocol_type"],
                                                 g.get("group_state"), g.get("group_type"))
                                    for g in body["groups"]])
        return outcome


class DescribeGroups(AdminApiHandler[str, GroupDescription]):
    api_key = ApiKey.DESCRIBE_GROUPS

    def __init__(self, coordinator: int | None = None,
                 include_authorized_operations: bool = False) -> None:
        super().__init__(group_lookup(coordinator))
        self.include_authorized_operations = include_authorized_operations

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {
            "groups": list(keys),
            "include_authorized_operations": self.include_authorized_operations})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, GroupDescription]:
        outcome: ApiResult[str, GroupDescription] = ApiResult()
        for group in body["groups"]:
            group_id = group["group_id"]
            if outcome.error(group_id, group["error_code"], f"describing group {group_id!r}"):
                continue
            protocol_type = group["protocol_type"]
            members = [MemberDescription(
                m["member_id"], m.get("group_instance_id"), m["client_id"], m["client_host"],
                member_assignment(protocol_type, m["member_assignment"]),
                _decoded(ConsumerProtocolSubscription, m.get("member_metadata") or b""),
                _decoded(ConsumerProtocolAssignment, m["member_assignment"]),
                bytes(m.get("member_metadata") or b""), bytes(m["member_assignment"] or b""))
                for m in group["members"]]
            operations = operation_names(group["authorized_operations"]) \
                if self.include_authorized_operations else None
            outcome.complete(group_id, GroupDescription(
                group_id, group["group_state"], protocol_type, group["protocol_data"],
                members, operations))
        return outcome


def member_assignment(protocol_type: str, data: bytes) -> list[TopicPartition]:
    """A consumer group member's assignment, decoded; empty for other groups."""
    if protocol_type != PROTOCOL_TYPE or not data:
        return []
    try:
        return sorted(assignment_from_wire(data).partitions)
    except (ProtocolDecodeError, KafkaError):
        return []


def _decoded(kind: type[ConsumerProtocolSubscription] | type[ConsumerProtocolAssignment],
             data: bytes) -> Any:
    """``data`` decoded as ``kind`` (kafka-python decodes whatever the protocol type), the
    bytes themselves where they do not decode, None for none."""
    if not data:
        return None
    try:
        return kind.decode(data)
    except (ProtocolDecodeError, KafkaError):
        return bytes(data)


class DeleteGroups(AdminApiHandler[str, str]):
    """Each group's outcome: "OK" or the error's class name (kafka-python 3's shape)."""

    api_key = ApiKey.DELETE_GROUPS

    def __init__(self, coordinator: int | None = None) -> None:
        super().__init__(group_lookup(coordinator))

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {"groups_names": list(keys)})

    def handle_response(self, node: int, keys: Sequence[str],
                        body: Mapping[str, Any]) -> ApiResult[str, str]:
        outcome: ApiResult[str, str] = ApiResult()
        for result in body["results"]:
            group_id, code = result["group_id"], result["error_code"]
            if not outcome.routed(group_id, code, f"deleting group {group_id!r}"):
                outcome.complete(group_id, "OK" if not code else error_for_code(code).__name__)
        return outcome


class RemoveMembers(AdminApiHandler[str, dict[str, type[KafkaError]]]):
    """LeaveGroup v3+ naming the members: ``{member id or instance id: error class}``."""

    api_key = ApiKey.LEAVE_GROUP

    def __init__(self, members: Sequence[MemberToRemove],
                 coordinator: int | None = None) -> None:
        super().__init__(group_lookup(coordinator))
        if any(not (m.member_id or m.group_instance_id) for m in members):
            raise ValueError("each MemberToRemove needs a member_id or a group_instance_id")
        self.members = members

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        (group_id,) = keys
        return Request(self.api_key, {"group_id": group_id, "members": [
            {"member_id": m.member_id or "", "group_instance_id": m.group_instance_id}
            for m in self.members]}, min_version=3,
            needs=f"removing members of group {group_id!r}")

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, dict[str, type[KafkaError]]]:
        (group_id,) = keys
        outcome: ApiResult[str, dict[str, type[KafkaError]]] = ApiResult()
        if not outcome.error(group_id, body["error_code"],
                             f"removing members of group {group_id!r}"):
            outcome.complete(group_id, {
                m["member_id"] or m["group_instance_id"]:
                NoError if not m["error_code"] else error_for_code(m["error_code"])
                for m in body["members"]})
        return outcome
