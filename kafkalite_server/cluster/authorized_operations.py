"""Authorized operations (KIP-430) as Metadata, DescribeCluster and DescribeGroups report them.

A bit field with bit ``1 << code`` set for each operation the resource type supports that
the caller may perform on the resource, as Kafka computes it: one authorizer check per
supported operation, where the authorizer's implied operations count (an ALLOW for READ,
WRITE, DELETE or ALTER gives DESCRIBE; ALTER_CONFIGS gives DESCRIBE_CONFIGS). Without an
authorizer every check passes, so every supported operation is reported.
"""

from __future__ import annotations

from collections.abc import Callable

from kafkalite_server.security.acls import CLUSTER_NAME, AclOperation, ResourceType

Authorize = Callable[[AclOperation, ResourceType, str], bool]
"""``RequestContext.authorize``: may the caller do the operation on (type, name)?"""


def bit_field(*operations: AclOperation) -> int:
    return sum(1 << operation for operation in set(operations))


_O = AclOperation
SUPPORTED_OPERATIONS: dict[ResourceType, tuple[AclOperation, ...]] = {
    ResourceType.TOPIC: (_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                         _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS),
    # DESCRIBE_CONFIGS and ALTER_CONFIGS since Kafka 4.0, when groups got their own configs
    ResourceType.GROUP: (_O.READ, _O.DESCRIBE, _O.DELETE, _O.DESCRIBE_CONFIGS,
                         _O.ALTER_CONFIGS),
    ResourceType.CLUSTER: (_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS,
                           _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE),
}
"""What each resource type supports (Kafka's AclEntry.supportedOperations)."""


def authorized_operations(authorize: Authorize, resource_type: ResourceType,
                          name: str = CLUSTER_NAME) -> int:
    """The bit field of the supported operations ``authorize`` allows on the resource."""
    return bit_field(*(operation for operation in SUPPORTED_OPERATIONS[resource_type]
                       if authorize(operation, resource_type, name)))
