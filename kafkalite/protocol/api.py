"""The API registry: api keys, their request/response schemas, and the versions we serve."""

from __future__ import annotations

from dataclasses import dataclass
from enum import IntEnum

from kafkalite.protocol.schema import Message, Versions
from kafkalite.protocol.schemas import (
    acls,
    admin,
    api_versions,
    client_quotas,
    cluster,
    configs,
    consumer_groups,
    elections,
    fetch,
    groups,
    inter_broker,
    metadata,
    offsets,
    produce,
    producer_id,
    reassignments,
    records_deletion,
    sasl,
    scram_credentials,
    share,
    topic_partitions,
    transactions,
)


class ApiKey(IntEnum):
    PRODUCE = 0
    FETCH = 1
    LIST_OFFSETS = 2
    METADATA = 3
    LEADER_AND_ISR = 4
    STOP_REPLICA = 5
    UPDATE_METADATA = 6
    CONTROLLED_SHUTDOWN = 7
    OFFSET_COMMIT = 8
    OFFSET_FETCH = 9
    FIND_COORDINATOR = 10
    JOIN_GROUP = 11
    HEARTBEAT = 12
    LEAVE_GROUP = 13
    SYNC_GROUP = 14
    DESCRIBE_GROUPS = 15
    LIST_GROUPS = 16
    SASL_HANDSHAKE = 17
    API_VERSIONS = 18
    CREATE_TOPICS = 19
    DELETE_TOPICS = 20
    DELETE_RECORDS = 21
    INIT_PRODUCER_ID = 22
    OFFSET_FOR_LEADER_EPOCH = 23
    ADD_PARTITIONS_TO_TXN = 24
    ADD_OFFSETS_TO_TXN = 25
    END_TXN = 26
    WRITE_TXN_MARKERS = 27
    TXN_OFFSET_COMMIT = 28
    DESCRIBE_ACLS = 29
    CREATE_ACLS = 30
    DELETE_ACLS = 31
    DESCRIBE_CONFIGS = 32
    ALTER_CONFIGS = 33
    DESCRIBE_LOG_DIRS = 35
    SASL_AUTHENTICATE = 36
    CREATE_PARTITIONS = 37
    DELETE_GROUPS = 42
    ELECT_LEADERS = 43
    INCREMENTAL_ALTER_CONFIGS = 44
    ALTER_PARTITION_REASSIGNMENTS = 45
    LIST_PARTITION_REASSIGNMENTS = 46
    OFFSET_DELETE = 47
    DESCRIBE_CLIENT_QUOTAS = 48
    ALTER_CLIENT_QUOTAS = 49
    DESCRIBE_USER_SCRAM_CREDENTIALS = 50
    ALTER_USER_SCRAM_CREDENTIALS = 51
    DESCRIBE_CLUSTER = 60
    DESCRIBE_PRODUCERS = 61
    DESCRIBE_TRANSACTIONS = 65
    LIST_TRANSACTIONS = 66
    CONSUMER_GROUP_HEARTBEAT = 68
    CONSUMER_GROUP_DESCRIBE = 69
    DESCRIBE_TOPIC_PARTITIONS = 75
    SHARE_GROUP_HEARTBEAT = 76
    SHARE_GROUP_DESCRIBE = 77
    SHARE_FETCH = 78
    SHARE_ACKNOWLEDGE = 79
    INITIALIZE_SHARE_GROUP_STATE = 83
    READ_SHARE_GROUP_STATE = 84
    WRITE_SHARE_GROUP_STATE = 85
    DELETE_SHARE_GROUP_STATE = 86
    READ_SHARE_GROUP_STATE_SUMMARY = 87
    DESCRIBE_SHARE_GROUP_OFFSETS = 90
    ALTER_SHARE_GROUP_OFFSETS = 91


@dataclass(frozen=True)
class Api:
    key: ApiKey
    request: Message
    response: Message


APIS: dict[ApiKey, Api] = {
    api.key: api
    for api in (
        Api(ApiKey.PRODUCE, produce.PRODUCE_REQUEST, produce.PRODUCE_RESPONSE),
        Api(ApiKey.FETCH, fetch.FETCH_REQUEST, fetch.FETCH_RESPONSE),
        Api(ApiKey.LIST_OFFSETS, offsets.LIST_OFFSETS_REQUEST, offsets.LIST_OFFSETS_RESPONSE),
        Api(ApiKey.METADATA, metadata.METADATA_REQUEST, metadata.METADATA_RESPONSE),
        Api(
            ApiKey.LEADER_AND_ISR,
            inter_broker.LEADER_AND_ISR_REQUEST,
            inter_broker.LEADER_AND_ISR_RESPONSE,
        ),
        Api(
            ApiKey.STOP_REPLICA,
            inter_broker.STOP_REPLICA_REQUEST,
            inter_broker.STOP_REPLICA_RESPONSE,
        ),
        Api(
            ApiKey.UPDATE_METADATA,
            inter_broker.UPDATE_METADATA_REQUEST,
            inter_broker.UPDATE_METADATA_RESPONSE,
        ),
        Api(
            ApiKey.CONTROLLED_SHUTDOWN,
            inter_broker.CONTROLLED_SHUTDOWN_REQUEST,
            inter_broker.CONTROLLED_SHUTDOWN_RESPONSE,
        ),
        Api(ApiKey.OFFSET_COMMIT, offsets.OFFSET_COMMIT_REQUEST, offsets.OFFSET_COMMIT_RESPONSE),
        Api(ApiKey.OFFSET_FETCH, offsets.OFFSET_FETCH_REQUEST, offsets.OFFSET_FETCH_RESPONSE),
        Api(
            ApiKey.FIND_COORDINATOR,
            groups.FIND_COORDINATOR_REQUEST,
            groups.FIND_COORDINATOR_RESPONSE,
        ),
        Api(ApiKey.JOIN_GROUP, groups.JOIN_GROUP_REQUEST, groups.JOIN_GROUP_RESPONSE),
        Api(ApiKey.HEARTBEAT, groups.HEARTBEAT_REQUEST, groups.HEARTBEAT_RESPONSE),
        Api(ApiKey.LEAVE_GROUP, groups.LEAVE_GROUP_REQUEST, groups.LEAVE_GROUP_RESPONSE),
        Api(ApiKey.SYNC_GROUP, groups.SYNC_GROUP_REQUEST, groups.SYNC_GROUP_RESPONSE),
        Api(
            ApiKey.DESCRIBE_GROUPS,
            groups.DESCRIBE_GROUPS_REQUEST,
            groups.DESCRIBE_GROUPS_RESPONSE,
        ),
        Api(ApiKey.LIST_GROUPS, groups.LIST_GROUPS_REQUEST, groups.LIST_GROUPS_RESPONSE),
        Api(ApiKey.SASL_HANDSHAKE, sasl.SASL_HANDSHAKE_REQUEST, sasl.SASL_HANDSHAKE_RESPONSE),
        Api(
            ApiKey.API_VERSIONS,
            api_versions.API_VERSIONS_REQUEST,
            api_versions.API_VERSIONS_RESPONSE,
        ),
        Api(ApiKey.CREATE_TOPICS, admin.CREATE_TOPICS_REQUEST, admin.CREATE_TOPICS_RESPONSE),
        Api(ApiKey.DELETE_TOPICS, admin.DELETE_TOPICS_REQUEST, admin.DELETE_TOPICS_RESPONSE),
        Api(
            ApiKey.DELETE_RECORDS,
            records_deletion.DELETE_RECORDS_REQUEST,
            records_deletion.DELETE_RECORDS_RESPONSE,
        ),
        Api(
            ApiKey.INIT_PRODUCER_ID,
            producer_id.INIT_PRODUCER_ID_REQUEST,
            producer_id.INIT_PRODUCER_ID_RESPONSE,
        ),
        Api(
            ApiKey.OFFSET_FOR_LEADER_EPOCH,
            offsets.OFFSET_FOR_LEADER_EPOCH_REQUEST,
            offsets.OFFSET_FOR_LEADER_EPOCH_RESPONSE,
        ),
        Api(ApiKey.DESCRIBE_ACLS, acls.DESCRIBE_ACLS_REQUEST, acls.DESCRIBE_ACLS_RESPONSE),
        Api(ApiKey.CREATE_ACLS, acls.CREATE_ACLS_REQUEST, acls.CREATE_ACLS_RESPONSE),
        Api(ApiKey.DELETE_ACLS, acls.DELETE_ACLS_REQUEST, acls.DELETE_ACLS_RESPONSE),
        Api(
            ApiKey.DESCRIBE_CONFIGS,
            admin.DESCRIBE_CONFIGS_REQUEST,
            admin.DESCRIBE_CONFIGS_RESPONSE,
        ),
        Api(ApiKey.ALTER_CONFIGS, configs.ALTER_CONFIGS_REQUEST, configs.ALTER_CONFIGS_RESPONSE),
        Api(
            ApiKey.DESCRIBE_LOG_DIRS,
            cluster.DESCRIBE_LOG_DIRS_REQUEST,
            cluster.DESCRIBE_LOG_DIRS_RESPONSE,
        ),
        Api(
            ApiKey.SASL_AUTHENTICATE,
            sasl.SASL_AUTHENTICATE_REQUEST,
            sasl.SASL_AUTHENTICATE_RESPONSE,
        ),
        Api(
            ApiKey.CREATE_PARTITIONS,
            admin.CREATE_PARTITIONS_REQUEST,
            admin.CREATE_PARTITIONS_RESPONSE,
        ),
        Api(ApiKey.DELETE_GROUPS, groups.DELETE_GROUPS_REQUEST, groups.DELETE_GROUPS_RESPONSE),
        Api(
            ApiKey.ELECT_LEADERS,
            elections.ELECT_LEADERS_REQUEST,
            elections.ELECT_LEADERS_RESPONSE,
        ),
        Api(
            ApiKey.INCREMENTAL_ALTER_CONFIGS,
            configs.INCREMENTAL_ALTER_CONFIGS_REQUEST,
            configs.INCREMENTAL_ALTER_CONFIGS_RESPONSE,
        ),
        Api(
            ApiKey.ALTER_PARTITION_REASSIGNMENTS,
            reassignments.ALTER_PARTITION_REASSIGNMENTS_REQUEST,
            reassignments.ALTER_PARTITION_REASSIGNMENTS_RESPONSE,
        ),
        Api(
            ApiKey.LIST_PARTITION_REASSIGNMENTS,
            reassignments.LIST_PARTITION_REASSIGNMENTS_REQUEST,
            reassignments.LIST_PARTITION_REASSIGNMENTS_RESPONSE,
        ),
        Api(ApiKey.OFFSET_DELETE, groups.OFFSET_DELETE_REQUEST, groups.OFFSET_DELETE_RESPONSE),
        Api(
            ApiKey.DESCRIBE_CLIENT_QUOTAS,
            client_quotas.DESCRIBE_CLIENT_QUOTAS_REQUEST,
            client_quotas.DESCRIBE_CLIENT_QUOTAS_RESPONSE,
        ),
        Api(
            ApiKey.ALTER_CLIENT_QUOTAS,
            client_quotas.ALTER_CLIENT_QUOTAS_REQUEST,
            client_quotas.ALTER_CLIENT_QUOTAS_RESPONSE,
        ),
        Api(
            ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS,
            scram_credentials.DESCRIBE_USER_SCRAM_CREDENTIALS_REQUEST,
            scram_credentials.DESCRIBE_USER_SCRAM_CREDENTIALS_RESPONSE,
        ),
        Api(
            ApiKey.ALTER_USER_SCRAM_CREDENTIALS,
            scram_credentials.ALTER_USER_SCRAM_CREDENTIALS_REQUEST,
            scram_credentials.ALTER_USER_SCRAM_CREDENTIALS_RESPONSE,
        ),
        Api(
            ApiKey.DESCRIBE_CLUSTER,
            cluster.DESCRIBE_CLUSTER_REQUEST,
            cluster.DESCRIBE_CLUSTER_RESPONSE,
        ),
        *(
            Api(key, getattr(transactions, f"{key.name}_REQUEST"),
                getattr(transactions, f"{key.name}_RESPONSE"))
            for key in (ApiKey.ADD_PARTITIONS_TO_TXN, ApiKey.ADD_OFFSETS_TO_TXN,
                        ApiKey.END_TXN, ApiKey.WRITE_TXN_MARKERS, ApiKey.TXN_OFFSET_COMMIT,
                        ApiKey.DESCRIBE_PRODUCERS, ApiKey.DESCRIBE_TRANSACTIONS,
                        ApiKey.LIST_TRANSACTIONS)
        ),
        Api(
            ApiKey.DESCRIBE_TOPIC_PARTITIONS,
            topic_partitions.DESCRIBE_TOPIC_PARTITIONS_REQUEST,
            topic_partitions.DESCRIBE_TOPIC_PARTITIONS_RESPONSE,
        ),
        *(
            Api(key, getattr(consumer_groups, f"{key.name}_REQUEST"),
                getattr(consumer_groups, f"{key.name}_RESPONSE"))
            for key in (ApiKey.CONSUMER_GROUP_HEARTBEAT, ApiKey.CONSUMER_GROUP_DESCRIBE)
        ),
        *(
            Api(key, getattr(share, f"{key.name}_REQUEST"), getattr(share, f"{key.name}_RESPONSE"))
            for key in (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE,
                        ApiKey.SHARE_FETCH, ApiKey.SHARE_ACKNOWLEDGE,
                        ApiKey.INITIALIZE_SHARE_GROUP_STATE, ApiKey.READ_SHARE_GROUP_STATE,
                        ApiKey.WRITE_SHARE_GROUP_STATE, ApiKey.DELETE_SHARE_GROUP_STATE,
                        ApiKey.READ_SHARE_GROUP_STATE_SUMMARY,
                        ApiKey.DESCRIBE_SHARE_GROUP_OFFSETS, ApiKey.ALTER_SHARE_GROUP_OFFSETS)
        ),
    )
}


def _supported(api: Api) -> tuple[int, int]:
    versions = Versions.parse(api.request.valid)
    if Versions.parse(api.response.valid) != versions:
        raise AssertionError(f"{api.key.name}: request and response version ranges differ")
    return versions.lo, versions.hi


SERVED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    key: _supported(api) for key, api in sorted(APIS.items())
}
"""Every version kafkalite can encode and decode, per api key."""

BROKER_ONLY_SINCE: dict[ApiKey, int] = {ApiKey.ADD_PARTITIONS_TO_TXN: 4}
"""The first version of an API that only brokers send each other: AddPartitionsToTxn v4+
is KIP-890's verification (Kafka's schema: versions 3 and below are the clients', 4 and
above the brokers'). Clients never negotiate it, and brokers never advertise it: kafka-python
takes a broker advertising AddPartitionsToTxn v4 for Kafka 3.6 and speaks that release's
versions of every API."""

SUPPORTED_VERSIONS: dict[ApiKey, tuple[int, int]] = {
    key: (lo, min(hi, BROKER_ONLY_SINCE.get(key, hi + 1) - 1))
    for key, (lo, hi) in SERVED_VERSIONS.items()
}
"""The versions kafkalite negotiates (client) and advertises (broker), per api key."""

CLIENT_VERSION_CAPS: dict[ApiKey, int] = {
    ApiKey.JOIN_GROUP: 5, ApiKey.SYNC_GROUP: 3, ApiKey.HEARTBEAT: 3, ApiKey.LEAVE_GROUP: 3,
}
"""Versions the SDK never asks for although both sides speak them. librdkafka's mock
cluster (the broker confluent-kafka users test against) advertises the flexible versions
of the classic group APIs (JoinGroup v6, SyncGroup v4, ...) but reads them in the older
encoding and drops the connection; they add nothing the SDK uses."""


_APIS_BY_NUMBER: dict[int, Api] = {int(key): api for key, api in APIS.items()}


def api_for(api_key: int) -> Api | None:
    """The registered API for a raw key, or None for a key kafkalite does not serve.

    A plain dict lookup: every request and response asks, and building the ``ApiKey``
    member of a raw number costs a microsecond."""
    return _APIS_BY_NUMBER.get(api_key)


def is_supported(api_key: int, api_version: int) -> bool:
    api = api_for(api_key)
    if api is None:
        return False
    lo, hi = SERVED_VERSIONS[api.key]
    return lo <= api_version <= hi
