"""Authorized operations (KIP-430) as Metadata, DescribeCluster and DescribeGroups report them.

A bit field with bit ``1 << code`` set for each AclOperation the caller may perform on the
resource. Without an authorizer, like Kafka without one, every operation a resource type
supports is allowed.
"""

from __future__ import annotations

from kafkalite_server.security.acls import AclOperation


def bit_field(*operations: AclOperation) -> int:
    return sum(1 << operation for operation in set(operations))


_O = AclOperation
TOPIC_OPERATIONS = bit_field(_O.READ, _O.WRITE, _O.CREATE, _O.DESCRIBE, _O.DELETE, _O.ALTER,
                             _O.DESCRIBE_CONFIGS, _O.ALTER_CONFIGS)
CLUSTER_OPERATIONS = bit_field(_O.CREATE, _O.CLUSTER_ACTION, _O.DESCRIBE_CONFIGS,
                               _O.ALTER_CONFIGS, _O.IDEMPOTENT_WRITE, _O.ALTER, _O.DESCRIBE)
GROUP_OPERATIONS = bit_field(_O.READ, _O.DESCRIBE, _O.DELETE)
"""What each resource type supports (Kafka's AclEntry.supportedOperations)."""
