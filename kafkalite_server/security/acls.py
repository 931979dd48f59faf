"""Kafka's ACL model, sans-IO: resources, patterns, operations, bindings and filters.

An ACL binding says that a principal (``User:alice``, ``User:*`` for everyone) from a host
(``*`` for any) is allowed or denied an operation on the resources a pattern matches: a
LITERAL pattern matches one name (``*`` matches every name), a PREFIXED one every name that
starts with it. The numbers are Kafka's (CreateAcls, DescribeAcls, DeleteAcls carry them).
"""

from __future__ import annotations

from dataclasses import dataclass

# Kafka's codes are defined once, in the protocol layer; the authorizer uses short names.
from kafkalite.protocol.acl_codes import ACLOperation as AclOperation
from kafkalite.protocol.acl_codes import ACLPermissionType as AclPermission
from kafkalite.protocol.acl_codes import ACLResourcePatternType as PatternType
from kafkalite.protocol.acl_codes import ResourceType

WILDCARD = "*"
WILDCARD_PRINCIPAL = "User:*"


CLUSTER_NAME = "kafka-cluster"
"""The one Cluster resource's name."""

RESOURCE_TYPES = (ResourceType.TOPIC, ResourceType.GROUP, ResourceType.CLUSTER,
                  ResourceType.TRANSACTIONAL_ID, ResourceType.USER)
"""The resource types bindings may name: the four kafkalite authorizes, and USER (the ACL
APIs' v3), whose CreateTokens/DescribeTokens bindings are kept as Kafka keeps them although
no API here checks them (delegation tokens are not served)."""


@dataclass(frozen=True, slots=True)
class Resource:
    type: ResourceType
    name: str


@dataclass(frozen=True, slots=True)
class AclBinding:
    resource_type: ResourceType
    name: str
    pattern: PatternType
    principal: str
    host: str
    operation: AclOperation
    permission: AclPermission

    def problem(self) -> str | None:
        """Why this binding cannot be stored, or None."""
        if self.resource_type not in RESOURCE_TYPES:
            return f"resource type {self.resource_type.name} cannot have ACLs here"
        if self.pattern not in (PatternType.LITERAL, PatternType.PREFIXED):
            return f"pattern type {self.pattern.name} is not LITERAL or PREFIXED"
        if self.operation in (AclOperation.ANY, AclOperation.UNKNOWN):
            return f"operation {self.operation.name} is only for filters"
        if self.permission not in (AclPermission.ALLOW, AclPermission.DENY):
            return f"permission type {self.permission.name} is not ALLOW or DENY"
        if not self.name:
            return "the resource name is empty"
        if self.pattern is PatternType.PREFIXED and self.name == WILDCARD:
            return "a PREFIXED pattern cannot be '*'"
        if self.resource_type is ResourceType.CLUSTER and self.name != CLUSTER_NAME:
            return f"the Cluster resource is named {CLUSTER_NAME!r}"
        if ":" not in self.principal:
            return f"principal {self.principal!r} is not 'Type:name'"
        if not self.host:
            return "the host is empty (use '*')"
        return None

    def matches_resource(self, resource: Resource) -> bool:
        if self.resource_type is not resource.type:
            return False
        if self.pattern is PatternType.LITERAL:
            return self.name in (resource.name, WILDCARD)
        return resource.name.startswith(self.name)

    def to_json(self) -> dict[str, object]:
        return {"resource_type": self.resource_type.name, "name": self.name,
                "pattern": self.pattern.name, "principal": self.principal, "host": self.host,
                "operation": self.operation.name, "permission": self.permission.name}

    @classmethod
    def from_json(cls, entry: dict[str, str]) -> AclBinding:
        return cls(ResourceType[entry["resource_type"]], entry["name"],
                   PatternType[entry["pattern"]], entry["principal"], entry["host"],
                   AclOperation[entry["operation"]], AclPermission[entry["permission"]])


@dataclass(frozen=True, slots=True)
class AclFilter:
    """What DescribeAcls and DeleteAcls select: ANY / None match everything."""

    resource_type: ResourceType
    name: str | None
    pattern: PatternType
    principal: str | None
    host: str | None
    operation: AclOperation
    permission: AclPermission

    def problem(self) -> str | None:
        for value, kind in ((self.resource_type, "resource type"),
                            (self.pattern, "pattern type"), (self.operation, "operation"),
                            (self.permission, "permission type")):
            if value.name == "UNKNOWN":
                return f"the {kind} filter is UNKNOWN"
        return None

    def matches(self, binding: AclBinding) -> bool:
        if self.resource_type is not ResourceType.ANY and \
                self.resource_type is not binding.resource_type:
            return False
        if not self._matches_pattern(binding):
            return False
        if self.principal is not None and self.principal != binding.principal:
            return False
        if self.host is not None and self.host != binding.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation is not binding.operation:
            return False
        return self.permission is AclPermission.ANY or self.permission is binding.permission

    def _matches_pattern(self, binding: AclBinding) -> bool:
        if self.pattern is PatternType.MATCH:
            if self.name is None:
                return True
            if binding.pattern is PatternType.LITERAL:
                return binding.name in (self.name, WILDCARD)
            return self.name.startswith(binding.name)
        if self.pattern is not PatternType.ANY and self.pattern is not binding.pattern:
            return False
        return self.name is None or self.name == binding.name


_IMPLIED_BY: dict[AclOperation, tuple[AclOperation, ...]] = {
    AclOperation.DESCRIBE: (AclOperation.READ, AclOperation.WRITE, AclOperation.DELETE,
                            AclOperation.ALTER),
    AclOperation.DESCRIBE_CONFIGS: (AclOperation.ALTER_CONFIGS,),
}
"""Kafka's implied operations: an ALLOW for any of these also allows the key's operation."""


@dataclass(frozen=True)
class AuthorizerSettings:
    super_users: frozenset[str]
    allow_everyone_if_no_acl_found: bool


def authorize(settings: AuthorizerSettings, bindings: list[AclBinding], principal: str,
              host: str, operation: AclOperation, resource: Resource) -> bool:
    """Kafka's AclAuthorizer decision: super users pass; with no ACL on the resource the
    answer is ``allow.everyone.if.no.acl.found``; a matching DENY wins over any ALLOW."""
    if principal in settings.super_users:
        return True
    relevant = [b for b in bindings if b.matches_resource(resource)]
    if not relevant:
        return settings.allow_everyone_if_no_acl_found
    mine = [b for b in relevant
            if b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (host, WILDCARD)]
    if any(b.permission is AclPermission.DENY
           and b.operation in (operation, AclOperation.ALL) for b in mine):
        return False
    allowed = (operation, AclOperation.ALL, *_IMPLIED_BY.get(operation, ()))
    return any(b.permission is AclPermission.ALLOW and b.operation in allowed for b in mine)


_ANY_NAME_PROBE = "kafkalite-probe-for-any-resource"
"""A resource name no one would grant: asking the authorizer about it tells whether the
principal passes without a matching ACL (a super user, or ``allow.everyone.if.no.acl.found``
with no wildcard ACL in the way)."""


def authorize_any(settings: AuthorizerSettings, bindings: list[AclBinding], principal: str,
                  host: str, operation: AclOperation, resource_type: ResourceType) -> bool:
    """Kafka's ``authorizeByResourceType``: may the principal do ``operation`` on at least
    one resource of the type? (InitProducerId without a transactional id: Write on any
    topic.) An ALLOW counts unless a DENY covers everything it allows: a literal DENY on the
    same name or on ``*``, or a PREFIXED DENY whose prefix starts that name."""
    if authorize(settings, bindings, principal, host, operation,
                 Resource(resource_type, _ANY_NAME_PROBE)):
        return True
    mine = [b for b in bindings if b.resource_type is resource_type
            and b.principal in (principal, WILDCARD_PRINCIPAL) and b.host in (host, WILDCARD)
            and b.operation in (operation, AclOperation.ALL)]
    denies = [b for b in mine if b.permission is AclPermission.DENY]
    if any(b.pattern is PatternType.LITERAL and b.name == WILDCARD for b in denies):
        return False

    def covered(allow: AclBinding) -> bool:
        return any((deny.pattern is PatternType.LITERAL and deny.name == allow.name
                    and allow.pattern is PatternType.LITERAL)
                   or (deny.pattern is PatternType.PREFIXED and allow.name.startswith(deny.name))
                   for deny in denies)

    return any(b.permission is AclPermission.ALLOW and not covered(b) for b in mine)
