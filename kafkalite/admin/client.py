"""The AdminClient facade: each method turns its arguments into an API handler and hands
it to the runner, then shapes the answer.

Routing, retries and deadlines live in one place (:mod:`kafkalite.admin.driver`); what each
request and answer mean live with their family (:mod:`~kafkalite.admin.topics`,
:mod:`~kafkalite.admin.configs`, :mod:`~kafkalite.admin.groups`, ...). The few methods
that need several requests (``alter_configs`` reads the configs it must carry over,
``reset_group_offsets`` looks up offsets before committing them) compose calls here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Hashable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import Any, TypeVar

from kafkalite.admin.acls import ACL, ACLFilter, CreateAcls, DeleteAcls, DescribeAcls
from kafkalite.admin.client_quotas import (
    AlterClientQuotas,
    ClientQuotaAlteration,
    ClientQuotaFilterComponent,
    DescribeClientQuotas,
)
from kafkalite.admin.client_quotas import Outcomes as QuotaOutcomes
from kafkalite.admin.client_quotas import Quotas as ClientQuotas
from kafkalite.admin.cluster import DescribeCluster, DescribeLogDirs
from kafkalite.admin.configs import (
    AlterConfigs,
    ConfigResource,
    DescribeConfigs,
    by_resource_type,
    is_default,
    modified_configs,
    reset_changes,
    resource_keys,
    unknown_keys,
    with_other_modified,
)
from kafkalite.admin.consumer_groups import ConsumerGroupDescription, DescribeConsumerGroups
from kafkalite.admin.elections import ElectLeaders, first_real_failure
from kafkalite.admin.groups import (
    DeleteGroups,
    DescribeGroups,
    GroupDescription,
    GroupListing,
    GroupState,
    GroupType,
    ListGroups,
    MemberToRemove,
    RemoveMembers,
)
from kafkalite.admin.handler import AdminApiHandler
from kafkalite.admin.lookup import CLUSTER
from kafkalite.admin.offsets import (
    CommitGroupOffsets,
    DeleteGroupOffsets,
    DeleteRecords,
    FetchGroupOffsets,
    ListOffsets,
    OffsetSpec,
    ResetTarget,
    clamp,
    raise_refusals,
    split_reset_targets,
)
from kafkalite.admin.reassignments import (
    AlterPartitionReassignments,
    ListPartitionReassignments,
)
from kafkalite.admin.runner import AdminRunner
from kafkalite.admin.topic_partitions import DescribeTopicPartitions
from kafkalite.admin.topics import (
    CreatePartitions,
    CreateTopics,
    DeleteTopics,
    NewTopics,
    PartitionCounts,
    TopicDescription,
    as_new_partitions,
    as_new_topics,
)
from kafkalite.admin.transactions import (
    AbortTransaction,
    AbortTransactionSpec,
    DescribeProducers,
    DescribeTransactions,
    ListTransactions,
    PartitionProducerState,
    TransactionDescription,
    TransactionListing,
    TransactionState,
    hanging,
)
from kafkalite.admin.users import (
    Alteration,
    AlterUserScramCredentials,
    DescribeUserScramCredentials,
)
from kafkalite.client.broker_version import BrokerVersionData
from kafkalite.client.client import KafkaClient
from kafkalite.client.metrics import client_metrics
from kafkalite.errors import ConfigError, KafkaError, NoError, ProtocolDecodeError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import BrokerResponseError, UnsupportedVersionError, error_for_code
from kafkalite.protocol.schemas.elections import ElectionType
from kafkalite.protocol.schemas.topic_partitions import DEFAULT_PARTITION_LIMIT
from kafkalite.structs import OffsetAndMetadata, OffsetAndTimestamp, TopicPartition

log = logging.getLogger(__name__)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

UNSENT_ADMIN_APIS: Mapping[str, str] = {
    "alter_replica_log_dirs": "AlterReplicaLogDirs (34)",
    "describe_features": "DescribeFeatures via ApiVersions (18) v3",
    "update_features": "UpdateFeatures (57)",
    "describe_metadata_quorum": "DescribeQuorum (55)",
    "list_config_resources": "ListConfigResources (74)",
}
"""kafka-python admin methods whose Kafka request kafkalite's client does not send yet: each
raises UnsupportedVersionError naming the API, never a silent no-op."""


class AdminClient:
    """Administers a Kafka cluster; takes the client settings (``bootstrap_servers``,
    ``client_id``, ``request_timeout_ms``, ...) with kafka-python's names, and
    ``default_api_timeout_ms`` (the Java admin client's name), which bounds each call with
    its retries (default: ``request_timeout_ms``)."""

    def __init__(self, bootstrap_servers: str | Sequence[str] = "localhost:9092",
                 **config: Any) -> None:
        api_timeout_ms = config.pop("default_api_timeout_ms", None)
        self._client = KafkaClient(bootstrap_servers=bootstrap_servers, **config)
        self._client.metadata.all_topics = True
        self._timeout = self._client.config["request_timeout_ms"] / 1000
        if api_timeout_ms is not None and (isinstance(api_timeout_ms, bool)
                                           or not isinstance(api_timeout_ms, int)
                                           or api_timeout_ms < 0):
            raise ConfigError("default_api_timeout_ms",
                              f"must be a non-negative integer, not {api_timeout_ms!r}")
        self._runner = AdminRunner(self._client, self._timeout if api_timeout_ms is None
                                   else api_timeout_ms / 1000)
        self._client.start()

    def _run(self, handler: AdminApiHandler[K, V], keys: Iterable[K],
             timeout: float | None = None) -> dict[K, V]:
        return self._runner.run(handler, keys, timeout)

    def _timeout_ms(self, timeout_ms: int | None) -> int:
        """What a request tells the broker to wait: the caller's, else request_timeout_ms."""
        return timeout_ms or int(self._timeout * 1000)

    def _broker_ids(self, broker_ids: Iterable[int] | None) -> list[int]:
        if broker_ids is not None:
            return list(broker_ids)
        self._runner.refresh_metadata()
        return sorted(b.node_id for b in self._client.cluster.brokers())

    # -- ACLs and SCRAM users ------------------------------------------------------------------

    def create_acls(self, acls: Iterable[ACL]) -> dict[str, list[Any]]:
        """CreateAcls: ``{"succeeded": [acl, ...], "failed": [(acl, error), ...]}``."""
        acls = list(acls)
        outcomes = self._run(CreateAcls(acls), range(len(acls)))
        result: dict[str, list[Any]] = {"succeeded": [], "failed": []}
        for index, acl in enumerate(acls):
            error = outcomes[index]
            if error is None:
                result["succeeded"].append(acl)
            else:
                result["failed"].append((acl, error))
        return result

    def describe_acls(self, acl_filter: ACLFilter) -> tuple[list[ACL], Any]:
        """DescribeAcls: (matching ACLs, None); a refusal (no authorizer: SECURITY_DISABLED,
        no permission) raises the broker's error."""
        return self._run(DescribeAcls(), [acl_filter])[acl_filter], None

    def delete_acls(self, acl_filters: Iterable[ACLFilter]
                    ) -> list[tuple[ACLFilter, list[tuple[ACL, Any]], Any]]:
        """DeleteAcls: per filter, (filter, [(deleted ACL, error or None)], error or None)."""
        filters = list(acl_filters)
        outcomes = self._run(DeleteAcls(filters), range(len(filters)))
        return [(acl_filter, *outcomes[index]) for index, acl_filter in enumerate(filters)]

    def describe_user_scram_credentials(self, users: Iterable[str] | None = None
                                        ) -> dict[str, dict[str, Any]]:
        """``{user: {"error": None or message, "credential_infos": [{"mechanism": ...,
        "iterations": n}]}}``."""
        key = None if users is None else tuple(users)
        return self._run(DescribeUserScramCredentials(), [key])[key]

    def alter_user_scram_credentials(self, alterations: Iterable[Alteration],
                                     ) -> dict[str, str | None]:
        """``{user: None or the broker's error message}``."""
        alterations = list(alterations)
        users = list(dict.fromkeys(a.user for a in alterations))
        return self._run(AlterUserScramCredentials(alterations), users)

    # -- client quotas -------------------------------------------------------------------------

    def describe_client_quotas(self, components: Iterable[ClientQuotaFilterComponent] = (),
                               strict: bool = False) -> ClientQuotas:
        """The quotas of the entities matching every component of the filter (no
        components: every entity; ``strict``: only entities with no other entity type):
        ``{ClientQuotaEntity({"user": "alice"}): {"producer_byte_rate": 1048576.0}}``."""
        return self._run(DescribeClientQuotas(list(components), strict),
                         [CLUSTER])[CLUSTER]

    def alter_client_quotas(self, alterations: Iterable[ClientQuotaAlteration],
                            validate_only: bool = False) -> QuotaOutcomes:
        """Sets (or, for a value of None, removes) quotas; each entity's answer: None or its
        error (InvalidRequestError for an unknown key or a value that is not positive).
        ``validate_only`` checks without changing anything."""
        return self._run(AlterClientQuotas(list(alterations), validate_only),
                         [CLUSTER])[CLUSTER]

    # -- topics --------------------------------------------------------------------------------

    def create_topics(self, new_topics: NewTopics, timeout_ms: int | None = None,
                      validate_only: bool = False, raise_errors: bool = True,
                      wait_for_metadata: bool = False) -> dict[str, list[dict[str, Any]]]:
        """Create the topics: NewTopics, topic names, or kafka-python 3's dict
        ``{name: {"num_partitions": 3, "replication_factor": 1, "configs": {...}}}``.
        The first refusal raises (e.g. TopicAlreadyExistsError) unless ``raise_errors`` is
        False; ``wait_for_metadata`` waits until each has leaders. Returns kafka-python 3's
        ``{"topics": [{"name", "error_code", "error_message"}]}``."""
        topics = as_new_topics(new_topics)
        timeout = self._timeout_ms(timeout_ms)
        results = self._run(CreateTopics(topics, timeout, validate_only, raise_errors),
                            [t.name for t in topics])
        self._runner.refresh_metadata()
        if wait_for_metadata and not validate_only:
            self.wait_for_topics([t.name for t in topics], timeout)
        return {"topics": list(results.values())}

    def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None,
                      raise_errors: bool = True) -> dict[str, list[dict[str, Any]]]:
        """Delete the topics; returns kafka-python 3's ``{"topics": [{"name",
        "error_code"}]}``."""
        results = self._run(DeleteTopics(self._timeout_ms(timeout_ms), raise_errors),
                            list(dict.fromkeys(topics)))
        self._runner.refresh_metadata()
        return {"topics": list(results.values())}

    def create_partitions(self, topic_partitions: PartitionCounts,
                          timeout_ms: int | None = None, validate_only: bool = False,
                          raise_errors: bool = True) -> None:
        """Grow topics: ``{name: NewPartitions(total_count)}``, ``{name: total_count}`` or
        ``{name: {"count": n, "assignments": [[broker ids], ...]}}``."""
        counts = as_new_partitions(topic_partitions)
        self._run(CreatePartitions(counts, self._timeout_ms(timeout_ms), validate_only,
                                   raise_errors), list(counts))
        self._runner.refresh_metadata()

    def list_topics(self, include_internal: bool = False) -> set[str]:
        self._runner.refresh_metadata()
        return self._client.cluster.topics(exclude_internal=not include_internal)

    def describe_topics(self, topics: Iterable[str] | None = None,
                        ) -> dict[str, TopicDescription]:
        """Partitions, leaders and replicas; an unknown topic raises naming it."""
        self._runner.refresh_metadata()
        cluster = self._client.cluster
        names = sorted(cluster.topics()) if topics is None else list(topics)
        internal = cluster.topics() - cluster.topics(exclude_internal=True)
        result = {}
        for name in names:
            partitions = cluster.partitions_for_topic(name)
            if partitions is None:
                raise error_for_code(3)(f"topic {name!r}")
            metas = [cluster.partition_metadata(TopicPartition(name, p))
                     for p in sorted(partitions)]
            result[name] = TopicDescription(name, name in internal,
                                            [m for m in metas if m is not None])
        return result

    def describe_topic_partitions(self, topics: Iterable[str],
                                  response_partition_limit: int = DEFAULT_PARTITION_LIMIT,
                                  cursor: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """One page of topics and their partitions from DescribeTopicPartitions (75), as
        kafka-python 3 returns it: ``{"topics": [{"error_code", "name", "topic_id",
        "is_internal", "partitions", "topic_authorized_operations"}], "next_cursor"}``.
        No topics means every topic; pass ``next_cursor`` back as ``cursor`` for the next
        page, until it is None."""
        handler = DescribeTopicPartitions(list(topics), response_partition_limit, cursor)
        return self._run(handler, [CLUSTER])[CLUSTER]

    def wait_for_topics(self, topic_names: Iterable[str], timeout_ms: int = 10000) -> None:
        """Block until every topic has a leader for each partition (after create_topics)."""
        self._runner.wait_for_leaders(list(topic_names), timeout_ms)

    # -- configs -------------------------------------------------------------------------------

    def describe_configs(self, config_resources: Iterable[ConfigResource],
                         include_synonyms: bool = False, config_filter: str = "all",
                         ) -> dict[ConfigResource, dict[str, str | None]]:
        """``{resource: {name: value}}`` for each resource (``config_filter="modified"``
        keeps only values that are not the broker's defaults). A broker resource is asked
        of that broker."""
        wanted = list(config_resources)
        described = self._config_entries(wanted, include_synonyms)
        return {resource: {c["name"]: c["value"] for c in entries
                           if config_filter != "modified" or not is_default(c)}
                for resource, entries in zip(wanted, described, strict=True)}

    def _config_entries(self, resources: list[ConfigResource],
                        include_synonyms: bool = False) -> list[list[dict[str, Any]]]:
        """DescribeConfigs' entries for each resource, in order; an error raises naming it."""
        keys = resource_keys(resources)
        described = self._run(DescribeConfigs(include_synonyms), keys)
        return [described[key] for key in keys]

    def _checked(self, resources: list[ConfigResource]) -> list[list[dict[str, Any]]]:
        """The resources' config entries, after refusing (ValueError) a key a resource has no
        changeable config for."""
        described = self._config_entries(resources)
        for resource, entries in zip(resources, described, strict=True):
            unknown = unknown_keys(resource, entries)
            if unknown:
                raise ValueError(f"{resource.label} has no changeable config "
                                 f"{', '.join(unknown)}")
        return described

    def _incremental(self, incremental: bool | None) -> bool:
        return ApiKey.INCREMENTAL_ALTER_CONFIGS in self.api_versions() if incremental is None \
            else incremental

    def alter_configs(self, config_resources: Iterable[ConfigResource],
                      validate_only: bool = False, raise_on_unknown: bool = True,
                      incremental: bool | None = None) -> dict[str, dict[str, str]]:
        """Change configs: each resource's ``configs`` maps a key to a value (SET) or to
        ``(AlterConfigOp, value)``. IncrementalAlterConfigs (44) when the broker has it,
        else AlterConfigs (33) with the resource's other modified values carried over (it
        resets what it is not given). ``raise_on_unknown`` raises ValueError for a key the
        resource does not have. Returns kafka-python's shape: ``{"topic": {name: "OK" or
        the error}}``; a refused change is reported there, not raised."""
        resources = list(config_resources)
        described = self._checked(resources) if raise_on_unknown else None
        incremental = self._incremental(incremental)
        if not incremental:
            described = described or self._config_entries(resources)
            resources = [with_other_modified(r, modified_configs(r, entries))
                         for r, entries in zip(resources, described, strict=True)]
        return self._change_configs(resources, validate_only, incremental)

    def incremental_alter_configs(self, config_resources: Iterable[ConfigResource],
                                  validate_only: bool = False, raise_on_unknown: bool = True,
                                  ) -> dict[str, dict[str, str]]:
        """:meth:`alter_configs` with IncrementalAlterConfigs (44) only (the Java name)."""
        return self.alter_configs(config_resources, validate_only, raise_on_unknown,
                                  incremental=True)

    def reset_configs(self, config_resources: Iterable[ConfigResource],
                      validate_only: bool = False, raise_on_unknown: bool = True,
                      incremental: bool | None = None) -> dict[str, dict[str, str]]:
        """Put the keys in each resource's ``configs`` (or, if it has none, every modified
        key) back to their defaults; same result shape as :meth:`alter_configs`."""
        resources = list(config_resources)
        described = self._checked(resources) if raise_on_unknown else \
            self._config_entries(resources)
        incremental = self._incremental(incremental)
        resources = [reset_changes(r, modified_configs(r, entries), incremental)
                     for r, entries in zip(resources, described, strict=True)]
        return self._change_configs(resources, validate_only, incremental)

    def _change_configs(self, resources: list[ConfigResource], validate_only: bool,
                        incremental: bool) -> dict[str, dict[str, str]]:
        return by_resource_type(self._run(AlterConfigs(incremental, validate_only),
                                          resource_keys(resources)))

    # -- groups --------------------------------------------------------------------------------

    def list_groups(self, broker_ids: Iterable[int] | None = None,
                    states_filter: Iterable[GroupState | str] | None = None,
                    types_filter: Iterable[GroupType | str] | None = None,
                    ) -> list[GroupListing]:
        """Every group on every broker (each broker lists the groups it coordinates), or on
        ``broker_ids``, by id. ``states_filter`` keeps groups in those states ("Stable",
        "Empty", ...: ListGroups v4, without regard to case) and ``types_filter`` those of
        these group types ("classic", "consumer": ListGroups v5), as kafka-python 3 does.
        Each listing also reads as kafka-python 3's dict: ``listing['group_id']``."""
        wanted = None if broker_ids is None else set(broker_ids)
        nodes = [n for n in self._broker_ids(None) if wanted is None or n in wanted]
        found = self._run(ListGroups(states_filter, types_filter), nodes)
        listings = {g.group_id: g for node in nodes for g in found[node]}
        return sorted(listings.values(), key=lambda g: g.group_id)

    def describe_groups(self, group_ids: Iterable[str], group_coordinator_id: int | None = None,
                        include_authorized_operations: bool = False,
                        ) -> dict[str, GroupDescription]:
        """Each group as its coordinator describes it; a description also reads as
        kafka-python 3's dict (``d['group_state']``, ``d['members'][0]['member_id']``)."""
        return self._run(DescribeGroups(group_coordinator_id, include_authorized_operations),
                         list(dict.fromkeys(group_ids)))

    def describe_consumer_groups(self, group_ids: Iterable[str],
                                 group_coordinator_id: int | None = None,
                                 include_authorized_operations: bool = False,
                                 ) -> dict[str, ConsumerGroupDescription]:
        """Each group with its type: a KIP-848 consumer group by ConsumerGroupDescribe (group
        and assignment epochs, each member's epoch, current and target assignment), a
        classic group by DescribeGroups in the same shape (epochs -1)."""
        wanted = list(dict.fromkeys(group_ids))
        described = self._run(DescribeConsumerGroups(group_coordinator_id,
                                                     include_authorized_operations), wanted)
        classic = [g for g in wanted if described[g] is None]
        found = {g: d for g, d in described.items() if d is not None}
        if classic:
            for group_id, group in self.describe_groups(
                    classic, group_coordinator_id, include_authorized_operations).items():
                found[group_id] = ConsumerGroupDescription.of_classic(group)
        return {g: found[g] for g in wanted}

    def list_consumer_group_offsets(self, group_id: str,
                                    partitions: Iterable[TopicPartition] | None = None,
                                    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (all of them, or for ``partitions``).

        Some brokers (Tansu) answer an OffsetFetch for all partitions without the topics
        array Kafka's format requires; asking again is pointless, so such an answer is
        followed by one request naming every partition in the cluster."""
        wanted = None if partitions is None else list(partitions)
        try:
            return self._run(FetchGroupOffsets(wanted), [group_id])[group_id]
        except KafkaError as exc:
            if wanted is not None or not isinstance(exc.__cause__, ProtocolDecodeError):
                raise
            log.info("group %r: the coordinator's answer for all committed offsets was "
                     "malformed (%s); asking for every partition instead", group_id, exc)
        return self._run(FetchGroupOffsets(self._every_partition()), [group_id])[group_id]

    def _every_partition(self) -> list[TopicPartition]:
        """Every partition of every non-internal topic in the cluster, from fresh metadata."""
        self._runner.refresh_metadata()
        cluster = self._client.cluster
        return [TopicPartition(topic, p) for topic in sorted(cluster.topics(exclude_internal=True))
                for p in cluster.partitions_for_topic(topic) or ()]

    def consumer_group_lag(self, group_id: str) -> dict[TopicPartition, tuple[int, int, int]]:
        """``{tp: (committed, end offset, lag)}`` for every partition the group committed."""
        committed = self.list_consumer_group_offsets(group_id)
        if not committed:
            return {}
        ends = self._list_offsets(dict.fromkeys(committed, int(OffsetSpec.LATEST)))
        lag = {}
        for tp, meta in sorted(committed.items()):
            found = ends.get(tp)
            end = meta.offset if found is None else found.offset
            lag[tp] = (meta.offset, end, max(end - meta.offset, 0))
        return lag

    def delete_groups(self, group_ids: Iterable[str], group_coordinator_id: int | None = None,
                      ) -> dict[str, str]:
        """Delete empty groups with their offsets (DeleteGroups, one request per coordinator):
        ``{group_id: "OK" or the error's name}`` such as ``"NonEmptyGroupError"`` (members
        are still in it) or ``"GroupIdNotFoundError"``: kafka-python 3's shape."""
        return self._run(DeleteGroups(group_coordinator_id), list(dict.fromkeys(group_ids)))

    def delete_group_offsets(self, group_id: str, partitions: Iterable[TopicPartition],
                             group_coordinator_id: int | None = None,
                             ) -> dict[TopicPartition, type[KafkaError]]:
        """Forget a group's committed offsets (OffsetDelete, KIP-496): ``{tp: error class}``
        with ``NoError`` for each one deleted; a partition of a topic an active member
        subscribes to gets ``GroupSubscribedToTopicError``. An unknown group raises
        ``GroupIdNotFoundError``."""
        wanted = sorted(set(partitions))
        if not wanted:
            return {}
        return self._run(DeleteGroupOffsets(wanted, group_coordinator_id), [group_id])[group_id]

    def remove_group_members(self, group_id: str, members: Iterable[MemberToRemove],
                             group_coordinator_id: int | None = None,
                             ) -> dict[str, type[KafkaError]]:
        """Remove members from a group (LeaveGroup v3 with member identities), as Kafka's
        tool does for static members that will not come back: ``{member id or instance
        id: error class}``. The group rebalances without them."""
        wanted = list(members)
        if not wanted:
            return {}
        return self._run(RemoveMembers(wanted, group_coordinator_id), [group_id])[group_id]

    def list_group_offsets(self, group_specs: Mapping[str, Iterable[TopicPartition] | None]
                           | Iterable[str] | str,
                           ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Committed offsets of several groups: ``{group_id: {tp: OffsetAndMetadata}}``;
        ``group_specs`` maps each group to its partitions (None: all), lists group ids, or
        is one group id (kafka-python 3's forms)."""
        if isinstance(group_specs, str):
            specs: Mapping[str, Iterable[TopicPartition] | None] = {group_specs: None}
        elif isinstance(group_specs, Mapping):
            specs = group_specs
        else:
            specs = dict.fromkeys(group_specs)
        return {group: self.list_consumer_group_offsets(group, partitions)
                for group, partitions in specs.items()}

    def alter_group_offsets(self, group_id: str,
                            offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
                            group_coordinator_id: int | None = None,
                            ) -> dict[TopicPartition, type[KafkaError]]:
        """Commit ``offsets`` for a group that has no active members; ``{tp: error class}``
        with ``NoError`` for each partition committed (kafka-python's shape)."""
        if not offsets:
            return {}
        return self._run(CommitGroupOffsets(offsets, group_coordinator_id), [group_id])[group_id]

    def reset_group_offsets(self, group_id: str,
                            offset_specs: Mapping[TopicPartition, ResetTarget],
                            group_coordinator_id: int | None = None,
                            ) -> dict[TopicPartition, dict[str, Any]]:
        """Move a group's offsets per partition to ``OffsetSpec.EARLIEST`` / ``LATEST``, to
        the first offset at an ``OffsetTimestamp`` (ms), or to a plain int offset; each
        target is clamped to the partition's [earliest, latest] (a timestamp past the last
        record gives latest). ``{tp: {"error": error class, "offset": committed offset}}``."""
        lookups, explicit = split_reset_targets(offset_specs)
        tps = list(offset_specs)
        earliest = self.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.EARLIEST))
        latest = self.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
        found = self.list_partition_offsets(lookups) if lookups else {}
        targets = {tp: clamp(found[tp].offset if tp in found else explicit.get(tp, -1),
                             earliest[tp].offset, latest[tp].offset) for tp in tps}
        errors = self.alter_group_offsets(group_id, targets, group_coordinator_id)
        return {tp: {"error": errors.get(tp, NoError), "offset": offset}
                for tp, offset in targets.items()}

    # -- partitions and records ----------------------------------------------------------------

    def _list_offsets(self, timestamps: Mapping[TopicPartition, int], isolation_level: int = 0,
                      timeout: float | None = None,
                      ) -> dict[TopicPartition, OffsetAndTimestamp | None]:
        return self._run(ListOffsets(timestamps, isolation_level), list(timestamps), timeout)

    def list_partition_offsets(self, topic_partition_specs: Mapping[TopicPartition,
                                                                    OffsetSpec | int],
                               isolation_level: int = 0, timeout_ms: int | None = None,
                               ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """The offset for each partition's spec (``OffsetSpec.EARLIEST`` / ``LATEST`` or a
        timestamp in ms); a timestamp past the last record is left out."""
        found = self._list_offsets({tp: int(spec) for tp, spec in topic_partition_specs.items()},
                                   int(isolation_level),
                                   None if timeout_ms is None else timeout_ms / 1000)
        return {tp: result for tp, result in found.items() if result is not None}

    def delete_records(self, records_to_delete: Mapping[TopicPartition, int],
                       timeout_ms: int | None = None, partition_leader_id: int | None = None,
                       ) -> dict[TopicPartition, dict[str, int]]:
        """Delete every record below the given offset (-1: the high watermark) of each
        partition by moving its log start offset (DeleteRecords, to each leader):
        ``{tp: {"partition_index", "low_watermark", "error_code"}}``. A refused partition
        raises its error (``OffsetOutOfRangeError`` past the end) naming it; a leader that
        moved is followed until ``timeout_ms``."""
        offsets = dict(records_to_delete)
        timeout = self._timeout_ms(timeout_ms)
        results = self._run(DeleteRecords(offsets, timeout, partition_leader_id), list(offsets),
                            timeout / 1000)
        raise_refusals(results)
        return results

    # -- leader elections ----------------------------------------------------------------------

    def elect_leaders(self, election_type: ElectionType | int,
                      topic_partitions: Mapping[str, Iterable[int]] | Iterable[str]
                      | Iterable[TopicPartition] | None = None,
                      timeout_ms: int | None = None, raise_errors: bool = True,
                      ) -> dict[TopicPartition, BrokerResponseError | None]:
        """Preferred (``ElectionType.PREFERRED``, 0) or unclean (``UNCLEAN``, 1) leader
        elections on the controller, for ``{topic: [partitions]}``, a list of topics (all
        their partitions), a list of TopicPartition, or None (every partition). Returns each
        partition's outcome: None (elected), ElectionNotNeededError (its leader was already
        the one asked for) or the error; with ``raise_errors`` the first error other than
        ElectionNotNeededError raises."""
        wanted: dict[str, list[int]] | None
        if isinstance(topic_partitions, Mapping):
            wanted = {topic: list(parts) for topic, parts in topic_partitions.items()}
        elif topic_partitions is None:
            wanted = None
        else:
            wanted = {}
            for item in topic_partitions:
                if isinstance(item, TopicPartition):
                    wanted.setdefault(item.topic, []).append(item.partition)
                else:
                    description = self.describe_topics([item])[item]
                    wanted[item] = [p.partition for p in description.partitions]
        outcomes = self._run(ElectLeaders(election_type, wanted, self._timeout_ms(timeout_ms)),
                             [CLUSTER])[CLUSTER]
        failure = first_real_failure(outcomes.values()) if raise_errors else None
        if failure is not None:
            raise failure
        return outcomes

    perform_leader_election = elect_leaders
    """kafka-python 2.0's name for :meth:`elect_leaders`."""

    # -- partition reassignments ---------------------------------------------------------------

    def alter_partition_reassignments(
            self, reassignments: Mapping[TopicPartition, Sequence[int] | None],
            timeout_ms: int | None = None) -> dict[TopicPartition, BrokerResponseError | None]:
        """Moves each partition to its list of brokers (the first is the preferred leader),
        or, for None, cancels its move; returns each partition's answer: None (under way)
        or its error (e.g. InvalidReplicaAssignmentError for an unknown broker). A move
        completes later: :meth:`list_partition_reassignments` shows it until then."""
        return self._run(AlterPartitionReassignments(reassignments,
                                                     self._timeout_ms(timeout_ms)),
                         [CLUSTER])[CLUSTER]

    def list_partition_reassignments(
            self, topic_partitions: Mapping[str, Iterable[int]] | Iterable[TopicPartition]
            | None = None, timeout_ms: int | None = None,
            ) -> dict[TopicPartition, dict[str, list[int]]]:
        """The moves under way (of ``{topic: [partitions]}`` or a list of TopicPartition;
        None: all), each ``{"replicas", "adding_replicas", "removing_replicas"}``."""
        wanted: dict[str, list[int]] | None
        if topic_partitions is None:
            wanted = None
        elif isinstance(topic_partitions, Mapping):
            wanted = {topic: list(parts) for topic, parts in topic_partitions.items()}
        else:
            wanted = {}
            for item in topic_partitions:
                wanted.setdefault(item.topic, []).append(item.partition)
        return self._run(ListPartitionReassignments(wanted, self._timeout_ms(timeout_ms)),
                         [CLUSTER])[CLUSTER]

    # -- the cluster ---------------------------------------------------------------------------

    def describe_cluster(self) -> dict[str, Any]:
        """``{"cluster_id", "controller_id", "brokers": [{"broker_id", "host", "port",
        "rack"}], "authorized_operations": [operation names]}`` from DescribeCluster (60),
        or from Metadata on a broker without it (then without operations): kafka-python's
        shape."""
        if ApiKey.DESCRIBE_CLUSTER in self.api_versions():
            return self._run(DescribeCluster(), [CLUSTER])[CLUSTER]
        self._runner.refresh_metadata()
        cluster = self._client.cluster
        return {"cluster_id": cluster.cluster_id, "controller_id": cluster.controller_id,
                "brokers": [{"broker_id": b.node_id, "host": b.host, "port": b.port,
                             "rack": b.rack} for b in sorted(cluster.brokers())]}

    def describe_log_dirs(self, topic_partitions: Mapping[str, Iterable[int]]
                          | Iterable[str] | None = None,
                          brokers: Iterable[int] | None = None) -> list[dict[str, Any]]:
        """Each broker's log directories with the size of each partition replica there
        (DescribeLogDirs): ``[{"broker": id, "log_dirs": [{"log_dir", "error_code",
        "topics": [{"name", "partitions": [{"partition_index", "partition_size",
        "offset_lag", "is_future_key"}]}], "total_bytes", "usable_bytes"}]}]``.
        ``topic_partitions`` is ``{topic: [partitions]}``, topic names, or None for all."""
        if isinstance(topic_partitions, Mapping):
            wanted = {t: sorted(p) for t, p in topic_partitions.items()}
        else:
            described = self.describe_topics(topic_partitions)
            wanted = {t: [p.partition for p in d.partitions] for t, d in described.items()}
        nodes = self._broker_ids(brokers)
        found = self._run(DescribeLogDirs(wanted), nodes)
        return [{"broker": node, "log_dirs": found[node]} for node in nodes]

    def bootstrap_connected(self) -> bool:
        return bool(self._client.cluster.brokers())

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The (min, max) version of each api key a broker of the cluster supports, from its
        ApiVersions answer."""
        return self._runner.broker_versions(min(self._broker_ids(None)))

    def get_broker_version_data(self, broker_id: int) -> BrokerVersionData:
        """What broker ``broker_id`` serves (its ApiVersions answer), in kafka-python's
        ``BrokerVersionData`` shape."""
        return BrokerVersionData(self._runner.broker_versions(broker_id))

    def metrics(self, raw: bool = False) -> dict[str, Any]:
        """kafka-python's nested shape: ``{"admin-client-metrics": {name: value}}``."""
        if not self._client.config["metrics_enabled"]:
            return {}
        values = client_metrics(self._client)
        return values if raw else {"admin-client-metrics": values}

    # -- transactions (KIP-664) ------------------------------------------------------------------

    def list_transactions(self, broker_ids: Iterable[int] | None = None,
                          producer_id_filters: Iterable[int] | None = None,
                          state_filters: Iterable[TransactionState | str] | None = None,
                          duration_filter_ms: int | None = None,
                          transactional_id_pattern: str | None = None,
                          ) -> dict[int, list[TransactionListing]]:
        """The transactions each broker coordinates (ListTransactions to every broker, or
        to ``broker_ids``): ``{node_id: [TransactionListing]}``. ``duration_filter_ms``
        keeps those running longer (ListTransactions v1); ``transactional_id_pattern``
        needs v2, which a broker without it refuses with UnsupportedVersionError."""
        return self._run(ListTransactions(producer_id_filters, state_filters,
                                          duration_filter_ms, transactional_id_pattern),
                         self._broker_ids(broker_ids))

    def describe_transactions(self, transactional_ids: Iterable[str]
                              ) -> dict[str, TransactionDescription]:
        """Each transactional id as its transaction coordinator describes it
        (DescribeTransactions): ``{transactional_id: TransactionDescription}``; an id the
        coordinator does not know raises TransactionalIdNotFoundError naming it."""
        return self._run(DescribeTransactions(), list(dict.fromkeys(transactional_ids)))

    def describe_producers(self, partitions: Iterable[TopicPartition],
                           broker_id: int | None = None,
                           ) -> dict[TopicPartition, PartitionProducerState]:
        """The active producers of each partition, with the offset where each one's open
        transaction starts (DescribeProducers, to each leader or to ``broker_id``):
        ``{tp: PartitionProducerState([ProducerState, ...])}``."""
        return self._run(DescribeProducers(broker_id), list(dict.fromkeys(partitions)))

    def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """End a producer's open transaction on one partition with an ABORT marker written
        by the partition's leader (WriteTxnMarkers), as ``kafka-transactions.sh abort``
        does for a hanging transaction; the leader checks the producer id and epochs."""
        self._run(AbortTransaction(spec), [spec.topic_partition])

    def find_hanging_transactions(self, broker_ids: Iterable[int] | None = None,
                                  max_transaction_timeout_ms: int = 900000,
                                  ) -> list[dict[str, Any]]:
        """The open transactions older than ``max_transaction_timeout_ms`` plus five
        minutes (kafka-python's and Kafka's tool's rule), from ListTransactions on each
        broker and DescribeTransactions for their start times: a list of dicts with
        ``transactional_id``, ``producer_id``, ``producer_epoch``, ``state``, ``age_ms``,
        ``coordinator_id`` and ``topic_partitions``. Abort one with
        :meth:`abort_transaction`."""
        listed = self.list_transactions(broker_ids=broker_ids)
        ids = sorted({t.transactional_id for found in listed.values() for t in found})
        if not ids:
            return []
        return hanging(self.describe_transactions(ids), int(time.time() * 1000),
                       max_transaction_timeout_ms)

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _unsent(method: str, api: str) -> Any:
    def call(self: AdminClient, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedVersionError(f"AdminClient.{method}(): kafkalite does not send "
                                      f"{api} requests yet")

    call.__name__ = call.__qualname__ = method
    call.__doc__ = f"Not supported yet: needs {api}; raises UnsupportedVersionError."
    return call


for _method, _api in UNSENT_ADMIN_APIS.items():
    setattr(AdminClient, _method, _unsent(_method, _api))
del _method, _api

KafkaAdminClient = AdminClient
"""kafka-python's name for :class:`AdminClient`: the same class."""
