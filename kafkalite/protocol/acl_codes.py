"""Kafka's ACL codes, as CreateAcls, DescribeAcls and DeleteAcls carry them on the wire.

One definition for both sides: the AdminClient exposes these enums under kafka-python's
names (``kafka.admin.ACLOperation`` and friends), and the broker's authorizer matches
bindings with the same values.
"""

from __future__ import annotations

from enum import IntEnum


class ResourceType(IntEnum):
    """What an ACL protects."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6
    USER = 7


class ACLOperation(IntEnum):
    """What an ACL allows or denies on its resource."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12
    CREATE_TOKENS = 13
    DESCRIBE_TOKENS = 14


class ACLPermissionType(IntEnum):
    """Whether a binding allows or denies (ANY only in filters)."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


class ACLResourcePatternType(IntEnum):
    """How a binding's resource name matches: one name (LITERAL) or a prefix (PREFIXED);
    ANY and MATCH only in filters."""

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4
