"""ACLs: CreateAcls, DescribeAcls and DeleteAcls, answered by any broker.

The keys are positions in the caller's list (each ACL to create, each filter to delete
by), so one request carries them all and each gets its own outcome.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import AnyBroker
from kafkalite.protocol import ApiKey
from kafkalite.protocol.acl_codes import (
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourceType,
)
from kafkalite.protocol.errors import BrokerResponseError, error_for_code


@dataclass(frozen=True)
class ResourcePatternFilter:
    """Which resources an ACL filter matches."""

    resource_type: ResourceType
    resource_name: str | None
    pattern_type: ACLResourcePatternType = ACLResourcePatternType.LITERAL


@dataclass(frozen=True)
class ResourcePattern(ResourcePatternFilter):
    """One resource (or name prefix) an ACL protects."""


@dataclass(frozen=True)
class ACLFilter:
    """Which ACLs ``describe_acls`` / ``delete_acls`` match (None matches anything)."""

    principal: str | None
    host: str | None
    operation: ACLOperation
    permission_type: ACLPermissionType
    resource_pattern: ResourcePatternFilter


@dataclass(frozen=True)
class ACL(ACLFilter):
    """One access rule: ``principal`` from ``host`` may (or may not) do ``operation``."""


def filter_fields(acl_filter: ACLFilter) -> dict[str, Any]:
    """An ACL filter as DescribeAcls and DeleteAcls spell it."""
    pattern = acl_filter.resource_pattern
    return {"resource_type_filter": pattern.resource_type,
            "resource_name_filter": pattern.resource_name,
            "pattern_type_filter": pattern.pattern_type,
            "principal_filter": acl_filter.principal, "host_filter": acl_filter.host,
            "operation": acl_filter.operation, "permission_type": acl_filter.permission_type}


def acl_from_wire(acl: Mapping[str, Any], resource: Mapping[str, Any]) -> ACL:
    """An ACL of an answer; ``resource`` holds its resource fields (the ACL itself in
    DeleteAcls, its resource entry in DescribeAcls)."""
    return ACL(acl["principal"], acl["host"], ACLOperation(acl["operation"]),
               ACLPermissionType(acl["permission_type"]),
               ResourcePattern(ResourceType(resource["resource_type"]),
                               resource["resource_name"],
                               ACLResourcePatternType(resource["pattern_type"])))


def error_or_none(code: int, message: str | None) -> BrokerResponseError | None:
    return error_for_code(code)(message or "") if code else None


class CreateAcls(AdminApiHandler[int, BrokerResponseError | None]):
    """Each ACL's outcome: None (created) or the broker's error."""

    api_key = ApiKey.CREATE_ACLS

    def __init__(self, acls: Sequence[ACL]) -> None:
        super().__init__(AnyBroker())
        self.acls = acls

    def build_request(self, node: int, keys: Sequence[int]) -> Request:
        return Request(self.api_key, {"creations": [
            {"resource_type": a.resource_pattern.resource_type,
             "resource_name": a.resource_pattern.resource_name,
             "resource_pattern_type": a.resource_pattern.pattern_type,
             "principal": a.principal, "host": a.host, "operation": a.operation,
             "permission_type": a.permission_type} for a in (self.acls[k] for k in keys)]})

    def handle_response(self, node: int, keys: Sequence[int], body: Mapping[str, Any],
                        ) -> ApiResult[int, BrokerResponseError | None]:
        outcome: ApiResult[int, BrokerResponseError | None] = ApiResult()
        for key, result in zip(keys, body["results"], strict=True):
            if not outcome.routed(key, result["error_code"], "creating an ACL"):
                outcome.complete(key, error_or_none(result["error_code"],
                                                    result["error_message"]))
        return outcome


class DescribeAcls(AdminApiHandler[ACLFilter, list[ACL]]):
    """The ACLs matching one filter; a refusal (no authorizer: SECURITY_DISABLED, no
    permission) raises the broker's error."""

    api_key = ApiKey.DESCRIBE_ACLS

    def __init__(self) -> None:
        super().__init__(AnyBroker())

    def build_request(self, node: int, keys: Sequence[ACLFilter]) -> Request:
        (acl_filter,) = keys
        return Request(self.api_key, filter_fields(acl_filter))

    def handle_response(self, node: int, keys: Sequence[ACLFilter], body: Mapping[str, Any],
                        ) -> ApiResult[ACLFilter, list[ACL]]:
        (acl_filter,) = keys
        outcome: ApiResult[ACLFilter, list[ACL]] = ApiResult()
        if not outcome.error(acl_filter, body["error_code"], "describe_acls",
                             body["error_message"]):
            outcome.complete(acl_filter, [acl_from_wire(a, r) for r in body["resources"]
                                          for a in r["acls"]])
        return outcome


DeletedAcls = tuple[list[tuple[ACL, BrokerResponseError | None]], BrokerResponseError | None]
"""One filter's outcome: the ACLs it matched (each with its error or None), and the
filter's own error or None."""


class DeleteAcls(AdminApiHandler[int, DeletedAcls]):
    api_key = ApiKey.DELETE_ACLS

    def __init__(self, filters: Sequence[ACLFilter]) -> None:
        super().__init__(AnyBroker())
        self.filters = filters

    def build_request(self, node: int, keys: Sequence[int]) -> Request:
        return Request(self.api_key, {"filters": [filter_fields(self.filters[k])
                                                  for k in keys]})

    def handle_response(self, node: int, keys: Sequence[int], body: Mapping[str, Any],
                        ) -> ApiResult[int, DeletedAcls]:
        outcome: ApiResult[int, DeletedAcls] = ApiResult()
        for key, result in zip(keys, body["filter_results"], strict=True):
            if outcome.routed(key, result["error_code"], "deleting ACLs"):
                continue
            matched = [(acl_from_wire(m, m), error_or_none(m["error_code"], m["error_message"]))
                       for m in result["matching_acls"]]
            outcome.complete(key, (matched, error_or_none(result["error_code"],
                                                          result["error_message"])))
        return outcome
