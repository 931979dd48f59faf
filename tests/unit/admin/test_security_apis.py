"""CreateAcls, DescribeAcls, DeleteAcls and the SCRAM credential APIs as pure pairs."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite.admin.acls import (
    ACL,
    ACLFilter,
    CreateAcls,
    DeleteAcls,
    DescribeAcls,
    ResourcePattern,
    ResourcePatternFilter,
)
from kafkalite.admin.lookup import AnyBroker
from kafkalite.admin.users import (
    AlterUserScramCredentials,
    DescribeUserScramCredentials,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafkalite.protocol.acl_codes import (
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourceType,
)
from kafkalite.protocol.errors import (
    InvalidRequestError,
    NotControllerError,
    SecurityDisabledError,
)

READ_ORDERS = ACL("User:alice", "*", ACLOperation.READ, ACLPermissionType.ALLOW,
                  ResourcePattern(ResourceType.TOPIC, "orders"))
WRITE_PREFIX = ACL("User:bob", "*", ACLOperation.WRITE, ACLPermissionType.DENY,
                   ResourcePattern(ResourceType.TOPIC, "tmp-", ACLResourcePatternType.PREFIXED))
ANY_TOPIC = ACLFilter(None, None, ACLOperation.ANY, ACLPermissionType.ANY,
                      ResourcePatternFilter(ResourceType.TOPIC, None,
                                            ACLResourcePatternType.ANY))


def test_create_acls_reports_each_acl() -> None:
    handler = CreateAcls([READ_ORDERS, WRITE_PREFIX])
    assert isinstance(handler.lookup, AnyBroker)
    assert handler.build_request(0, [1]).body == {"creations": [
        {"resource_type": ResourceType.TOPIC, "resource_name": "tmp-",
         "resource_pattern_type": ACLResourcePatternType.PREFIXED, "principal": "User:bob",
         "host": "*", "operation": ACLOperation.WRITE,
         "permission_type": ACLPermissionType.DENY}]}
    outcome = handler.handle_response(0, [0, 1], {"results": [
        {"error_code": 0, "error_message": None},
        {"error_code": InvalidRequestError.errno, "error_message": "bad principal"}]})
    assert outcome.completed[0] is None
    assert isinstance(outcome.completed[1], InvalidRequestError)
    assert "bad principal" in str(outcome.completed[1])


def acl_entry(**extra: Any) -> dict[str, Any]:
    return {"principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3,
            **extra}


def test_describe_acls_pair_and_its_refusal() -> None:
    handler = DescribeAcls()
    assert handler.build_request(0, [ANY_TOPIC]).body == {
        "resource_type_filter": ResourceType.TOPIC, "resource_name_filter": None,
        "pattern_type_filter": ACLResourcePatternType.ANY, "principal_filter": None,
        "host_filter": None, "operation": ACLOperation.ANY,
        "permission_type": ACLPermissionType.ANY}
    outcome = handler.handle_response(0, [ANY_TOPIC], {
        "error_code": 0, "error_message": None, "resources": [
            {"resource_type": 2, "resource_name": "orders", "pattern_type": 3,
             "acls": [acl_entry()]}]})
    assert outcome.completed == {ANY_TOPIC: [READ_ORDERS]}
    refused = handler.handle_response(0, [ANY_TOPIC], {
        "error_code": SecurityDisabledError.errno, "error_message": "no authorizer",
        "resources": []})
    assert "describe_acls: no authorizer" in str(refused.failed[ANY_TOPIC])


def test_delete_acls_reports_each_filter_with_its_matches() -> None:
    handler = DeleteAcls([ANY_TOPIC, ANY_TOPIC])
    assert len(handler.build_request(0, [0, 1]).body["filters"]) == 2
    outcome = handler.handle_response(0, [0, 1], {"filter_results": [
        {"error_code": 0, "error_message": None, "matching_acls": [
            acl_entry(error_code=0, error_message=None, resource_type=2,
                      resource_name="orders", pattern_type=3)]},
        {"error_code": NotControllerError.errno, "error_message": None,
         "matching_acls": []}]})
    assert outcome.completed == {0: ([(READ_ORDERS, None)], None)}
    assert list(outcome.look_up_again) == [1]


def test_scram_upsertion_salts_here_and_names_mechanisms_any_way() -> None:
    upsert = UserScramCredentialUpsertion("alice", "scram-sha-256", "pw", iterations=8192,
                                          salt=b"salt")
    assert upsert.mechanism is ScramMechanism.SCRAM_SHA_256
    assert len(upsert.salted_password) == 32 and upsert.iterations == 8192
    assert UserScramCredentialDeletion("bob", 2).mechanism is ScramMechanism.SCRAM_SHA_512
    with pytest.raises(ValueError, match="must not be UNKNOWN"):
        UserScramCredentialDeletion("bob", 0)


def test_alter_scram_credentials_pair() -> None:
    upsert = UserScramCredentialUpsertion("alice", 1, "pw", salt=b"s")
    handler = AlterUserScramCredentials([upsert, UserScramCredentialDeletion("bob", 2)])
    body = handler.build_request(0, ["alice", "bob"]).body
    assert body["deletions"] == [{"name": "bob", "mechanism": ScramMechanism.SCRAM_SHA_512}]
    assert body["upsertions"] == [{"name": "alice", "mechanism": ScramMechanism.SCRAM_SHA_256,
                                   "iterations": 4096, "salt": b"s",
                                   "salted_password": upsert.salted_password}]
    outcome = handler.handle_response(0, ["alice", "bob"], {"results": [
        {"user": "alice", "error_code": 0, "error_message": None},
        {"user": "bob", "error_code": 91, "error_message": None}]})
    assert outcome.completed["alice"] is None
    assert outcome.completed["bob"]  # the error's own message when the broker gives none


def test_describe_scram_credentials_pair() -> None:
    handler = DescribeUserScramCredentials()
    assert handler.build_request(0, [None]).body == {"users": None}
    assert handler.build_request(0, [("alice",)]).body == {"users": [{"name": "alice"}]}
    outcome = handler.handle_response(0, [("alice", "nobody")], {
        "error_code": 0, "error_message": None, "results": [
            {"user": "alice", "error_code": 0, "error_message": None,
             "credential_infos": [{"mechanism": 1, "iterations": 4096}]},
            {"user": "nobody", "error_code": 91, "error_message": "no credentials",
             "credential_infos": []}]})
    assert outcome.completed == {("alice", "nobody"): {
        "alice": {"error": None, "credential_infos": [
            {"mechanism": ScramMechanism.SCRAM_SHA_256, "iterations": 4096}]},
        "nobody": {"error": "no credentials", "credential_infos": []}}}
