"""The AdminClient: topics, partitions, configs, consumer groups, ACLs, SCRAM users, client
quotas, records,
elections and transactions, over the Kafka protocol.

Every method blocks until the cluster answers (up to ``default_api_timeout_ms``, by default
``request_timeout_ms``) and raises the broker's error as a typed exception
(``TopicAlreadyExistsError``, ``GroupIdNotFoundError``, ...) whose message names the topic
or group. Topic changes go to the controller, group questions to the group's coordinator,
record and offset questions to each partition's leader; a request that reaches a broker
that no longer owns its key is routed again until the deadline.

The package is split as Kafka's Java admin client is: a thin facade
(:mod:`kafkalite.admin.client`), one module per family of APIs, each API a pure
``build_request`` / ``handle_response`` pair with a lookup strategy
(:mod:`kafkalite.admin.handler`, :mod:`kafkalite.admin.lookup`), and one driver for routing,
retries and deadlines (:mod:`kafkalite.admin.driver`, run by
:mod:`kafkalite.admin.runner`).
"""

from __future__ import annotations

import importlib
import warnings
from typing import Any

from kafkalite.admin.acls import ACL, ACLFilter, ResourcePattern, ResourcePatternFilter
from kafkalite.admin.client import UNSENT_ADMIN_APIS, AdminClient, KafkaAdminClient
from kafkalite.admin.client_quotas import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
)
from kafkalite.admin.cluster import UpdateFeatureType
from kafkalite.admin.configs import AlterConfigOp, ConfigChanges, ConfigResource
from kafkalite.admin.consumer_groups import ConsumerGroupDescription, ConsumerGroupMember
from kafkalite.admin.groups import (
    GroupDescription,
    GroupListing,
    GroupState,
    GroupType,
    MemberDescription,
    MemberToRemove,
)
from kafkalite.admin.offsets import OffsetSpec, OffsetTimestamp
from kafkalite.admin.topics import NewPartitions, NewTopic, TopicDescription
from kafkalite.admin.transactions import (
    AbortTransactionSpec,
    PartitionProducerState,
    ProducerState,
    TransactionDescription,
    TransactionListing,
    TransactionState,
)
from kafkalite.admin.users import (
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)
from kafkalite.client.broker_version import BrokerVersionData
from kafkalite.protocol.acl_codes import (
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourceType,
)
from kafkalite.protocol.config_codes import ConfigResourceType, ConfigSourceType, ConfigType
from kafkalite.protocol.schemas.elections import ElectionType
from kafkalite.structs import (
    OffsetAndMetadata,
    OffsetAndTimestamp,
    PartitionMetadata,
    TopicPartition,
)

__all__ = [
    "ACL",
    "UNSENT_ADMIN_APIS",
    "ACLFilter",
    "ACLOperation",
    "ACLPermissionType",
    "ACLResourcePatternType",
    "AbortTransactionSpec",
    "AdminClient",
    "AlterConfigOp",
    "BrokerVersionData",
    "ClientQuotaAlteration",
    "ClientQuotaEntity",
    "ClientQuotaFilterComponent",
    "ConfigChanges",
    "ConfigResource",
    "ConfigResourceType",
    "ConfigSourceType",
    "ConfigType",
    "ConsumerGroupDescription",
    "ConsumerGroupMember",
    "ElectionType",
    "GroupDescription",
    "GroupListing",
    "GroupState",
    "GroupType",
    "KafkaAdminClient",
    "MemberDescription",
    "MemberToRemove",
    "NewPartitions",
    "NewTopic",
    "OffsetAndMetadata",
    "OffsetAndTimestamp",
    "OffsetSpec",
    "OffsetTimestamp",
    "PartitionMetadata",
    "PartitionProducerState",
    "ProducerState",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "ScramMechanism",
    "TopicDescription",
    "TopicPartition",
    "TransactionDescription",
    "TransactionListing",
    "TransactionState",
    "UpdateFeatureType",
    "UserScramCredentialDeletion",
    "UserScramCredentialUpsertion",
]

MOVED_NAMES: dict[str, tuple[str, str]] = {
    "ApiKey": ("kafkalite.protocol", "ApiKey"),
    "BrokerResponseError": ("kafkalite.errors", "BrokerResponseError"),
    "ElectionNotNeededError": ("kafkalite.errors", "ElectionNotNeededError"),
    "KafkaClient": ("kafkalite.client.client", "KafkaClient"),
    "KafkaError": ("kafkalite.errors", "KafkaError"),
    "KafkaTimeoutError": ("kafkalite.errors", "KafkaTimeoutError"),
    "NoError": ("kafkalite.errors", "NoError"),
    "NotControllerError": ("kafkalite.errors", "NotControllerError"),
    "NotLeaderOrFollowerError": ("kafkalite.errors", "NotLeaderOrFollowerError"),
    "ProtocolDecodeError": ("kafkalite.errors", "ProtocolDecodeError"),
    "UnknownTopicOrPartitionError": ("kafkalite.errors", "UnknownTopicOrPartitionError"),
    "UnsupportedVersionError": ("kafkalite.errors", "UnsupportedVersionError"),
    "error_for_code": ("kafkalite.protocol.errors", "error_for_code"),
    "LATEST": ("kafkalite.consumer.list_offsets", "LATEST"),
    "PROTOCOL_TYPE": ("kafkalite.consumer.group_wire", "PROTOCOL_TYPE"),
    "TRANSACTION_KEY": ("kafkalite.client.coordinator", "TRANSACTION_KEY"),
    "assignment_from_wire": ("kafkalite.consumer.group_wire", "assignment_from_wire"),
    "client_metrics": ("kafkalite.client.metrics", "client_metrics"),
    "fetch_committed_offsets": ("kafkalite.consumer.commits", "fetch_committed_offsets"),
    "find_coordinator": ("kafkalite.client.coordinator", "find_coordinator"),
    "list_offsets": ("kafkalite.consumer.list_offsets", "list_offsets"),
    "salted_password": ("kafkalite.protocol.scram", "salted_password"),
    "txn": ("kafkalite.admin", "transactions"),
}
"""Names ``kafkalite.admin`` used to import for its own use, which programs could import from
it too: each still works, with a DeprecationWarning naming where it lives."""


def __getattr__(name: str) -> Any:
    moved = MOVED_NAMES.get(name)
    if moved is None:
        raise AttributeError(f"module 'kafkalite.admin' has no attribute {name!r}")
    module, attribute = moved
    warnings.warn(f"kafkalite.admin.{name} is deprecated: import {attribute} from {module}",
                  DeprecationWarning, stacklevel=2)
    return getattr(importlib.import_module(module), attribute)
