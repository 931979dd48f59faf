"""ListGroups, DescribeGroups, DeleteGroups and LeaveGroup as pure pairs, and the results
that read both as objects and as kafka-python 3's dicts."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite.admin.groups import (
    DeleteGroups,
    DescribeGroups,
    GroupDescription,
    GroupListing,
    GroupState,
    GroupType,
    ListGroups,
    MemberDescription,
    MemberToRemove,
    RemoveMembers,
    operation_names,
)
from kafkalite.admin.lookup import Coordinator, EachBroker, GivenBroker
from kafkalite.errors import NoError
from kafkalite.protocol.consumer_protocol import (
    ConsumerProtocolAssignment,
    ConsumerProtocolSubscription,
)
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    GroupIdNotFoundError,
    NonEmptyGroupError,
    NotCoordinatorError,
    UnknownMemberIdError,
)
from kafkalite.structs import TopicPartition


def test_a_listing_reads_as_kafka_python_3s_dict_and_as_an_object() -> None:
    listing = GroupListing("billing", "consumer", "Stable", "classic")
    assert (listing["group_id"], listing["protocol_type"], listing["group_state"],
            listing["group_type"]) == ("billing", "consumer", "Stable", "classic")
    assert listing.group_id == "billing"
    assert dict(listing) == {"group_id": "billing", "protocol_type": "consumer",
                             "group_state": "Stable", "group_type": "classic"}
    assert "group_state" in listing and "state" not in listing
    assert listing.get("nope", 7) == 7
    with pytest.raises(KeyError):
        listing["state"]
    assert GroupListing("old", "consumer") == GroupListing("old", "consumer", None, None)


def test_list_groups_filters_are_sent_as_the_broker_spells_them() -> None:
    handler = ListGroups(["stable", GroupState.EMPTY, "preparing-rebalance", "Odd"],
                         [GroupType.CLASSIC, "consumer"])
    assert isinstance(handler.lookup, EachBroker)
    request = handler.build_request(3, [3])
    assert request.body == {"states_filter": ["Stable", "Empty", "PreparingRebalance", "Odd"],
                            "types_filter": ["classic", "consumer"]}
    assert (request.min_version, request.needs) == (5, "list_groups(types_filter=...)")
    assert ListGroups(["Stable"]).build_request(0, [0]).min_version == 4
    assert ListGroups().build_request(0, [0]).min_version == 0


def test_list_groups_answer_per_broker() -> None:
    handler = ListGroups()
    outcome = handler.handle_response(1, [1], {"error_code": 0, "groups": [
        {"group_id": "a", "protocol_type": "consumer", "group_state": "Empty",
         "group_type": "classic"},
        {"group_id": "b", "protocol_type": "connect"}]})
    assert outcome.completed == {1: [GroupListing("a", "consumer", "Empty", "classic"),
                                     GroupListing("b", "connect")]}
    loading = handler.handle_response(2, [2], {"error_code": CoordinatorLoadInProgressError.errno,
                                               "groups": []})
    assert list(loading.retry) == [2]
    assert "listing groups on broker 2" in str(loading.retry[2])


def member(member_id: str, assignment: bytes, metadata: bytes = b"") -> dict[str, Any]:
    return {"member_id": member_id, "group_instance_id": None, "client_id": "c",
            "client_host": "/127.0.0.1", "member_metadata": metadata,
            "member_assignment": assignment}


def described(group_id: str, code: int = 0, members: list[dict[str, Any]] | None = None,
              operations: int = -2147483648) -> dict[str, Any]:
    return {"error_code": code, "group_id": group_id, "group_state": "Stable",
            "protocol_type": "consumer", "protocol_data": "range", "members": members or [],
            "authorized_operations": operations}


def test_describe_groups_answer_with_partial_errors() -> None:
    assignment = ConsumerProtocolAssignment([("orders", [1, 0])]).encode(0)
    subscription = ConsumerProtocolSubscription(["orders"]).encode(0)
    handler = DescribeGroups(include_authorized_operations=True)
    assert isinstance(handler.lookup, Coordinator)
    assert handler.build_request(1, ["a", "b"]).body == {
        "groups": ["a", "b"], "include_authorized_operations": True}
    outcome = handler.handle_response(1, ["ok", "moved", "gone"], {"groups": [
        described("ok", members=[member("m1", assignment, subscription)],
                  operations=(1 << 3) | (1 << 8)),
        described("moved", NotCoordinatorError.errno),
        described("gone", GroupIdNotFoundError.errno)]})
    group = outcome.completed["ok"]
    assert group.members[0].assignment == [TopicPartition("orders", 0),
                                           TopicPartition("orders", 1)]
    assert group.authorized_operations == ["READ", "DESCRIBE"]
    assert list(outcome.look_up_again) == ["moved"]
    assert isinstance(outcome.failed["gone"], GroupIdNotFoundError)
    assert "describing group 'gone'" in str(outcome.failed["gone"])


def test_a_description_reads_as_kafka_python_3s_dict() -> None:
    assignment = ConsumerProtocolAssignment([("orders", [0])]).encode(0)
    outcome = DescribeGroups().handle_response(0, ["g"], {"groups": [
        described("g", members=[member("m1", assignment, b"\x00")])]})
    group = outcome.completed["g"]
    assert isinstance(group, GroupDescription)
    assert (group["group_id"], group["group_state"], group["protocol_type"],
            group["protocol_data"], group["error"]) == ("g", "Stable", "consumer", "range", None)
    assert group["authorized_operations"] is None  # not asked for
    [first] = group["members"]
    assert isinstance(first, MemberDescription)
    assert first["member_id"] == "m1" and first["client_host"] == "/127.0.0.1"
    assert first["member_assignment"] == ConsumerProtocolAssignment([("orders", [0])], None)
    assert first["member_metadata"] == b"\x00"  # does not decode: the bytes themselves
    assert group.to_dict()["members"][0]["member_id"] == "m1"


def test_a_group_that_is_not_a_consumer_group_has_no_decoded_assignment() -> None:
    answer = described("connect", members=[member("w1", b"\x00\x01junk")])
    answer["protocol_type"] = "connect"
    [worker] = DescribeGroups().handle_response(0, ["connect"], {"groups": [answer]}) \
        .completed["connect"].members
    assert worker.assignment == []
    assert worker.member_assignment == b"\x00\x01junk"


def test_describe_groups_with_a_named_coordinator_does_not_look_it_up() -> None:
    assert isinstance(DescribeGroups(coordinator=4).lookup, GivenBroker)


def test_delete_groups_reports_refusals_by_name_and_routes_a_moved_coordinator() -> None:
    handler = DeleteGroups()
    assert handler.build_request(0, ["a", "b"]).body == {"groups_names": ["a", "b"]}
    outcome = handler.handle_response(0, ["a", "b", "c", "d"], {"results": [
        {"group_id": "a", "error_code": 0},
        {"group_id": "b", "error_code": NonEmptyGroupError.errno},
        {"group_id": "c", "error_code": GroupIdNotFoundError.errno},
        {"group_id": "d", "error_code": NotCoordinatorError.errno}]})
    assert outcome.completed == {"a": "OK", "b": "NonEmptyGroupError",
                                 "c": "GroupIdNotFoundError"}
    assert list(outcome.look_up_again) == ["d"]


def test_remove_members_needs_leave_group_v3() -> None:
    handler = RemoveMembers([MemberToRemove("m1"), MemberToRemove(group_instance_id="i1")])
    request = handler.build_request(0, ["g"])
    assert request.body == {"group_id": "g", "members": [
        {"member_id": "m1", "group_instance_id": None},
        {"member_id": "", "group_instance_id": "i1"}]}
    assert (request.min_version, request.needs) == (3, "removing members of group 'g'")
    outcome = handler.handle_response(0, ["g"], {"error_code": 0, "members": [
        {"member_id": "m1", "group_instance_id": None, "error_code": 0},
        {"member_id": "", "group_instance_id": "i1",
         "error_code": UnknownMemberIdError.errno}]})
    assert outcome.completed == {"g": {"m1": NoError, "i1": UnknownMemberIdError}}
    with pytest.raises(ValueError, match="needs a member_id or a group_instance_id"):
        RemoveMembers([MemberToRemove()])


def test_operation_names_skip_unknown_any_and_all() -> None:
    assert operation_names(-2147483648) == []
    assert operation_names((1 << 0) | (1 << 1) | (1 << 2) | (1 << 4)) == ["WRITE"]
