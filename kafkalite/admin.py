"""The AdminClient: topics, partitions, configs and consumer groups, over the Kafka protocol.

Every method blocks until the cluster answers (up to ``request_timeout_ms``) and raises the
broker's error as a typed exception (``TopicAlreadyExistsError``, ``GroupIdNotFoundError``,
...) whose message names the topic or group. Topic changes go to the controller; group
questions go to the group's coordinator.
"""

from __future__ import annotations

import contextlib
import dataclasses
import enum
import secrets
import time
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from kafkalite import admin_transactions as txn
from kafkalite.admin_transactions import (
    AbortTransactionSpec,
    TransactionDescription,
    TransactionListing,
    TransactionState,
)
from kafkalite.admin_transactions import (
    PartitionProducerState as PartitionProducerState,
)
from kafkalite.admin_transactions import (
    ProducerState as ProducerState,
)
from kafkalite.client.broker_version import BrokerVersionData
from kafkalite.client.client import KafkaClient
from kafkalite.client.coordinator import TRANSACTION_KEY, find_coordinator
from kafkalite.client.metrics import client_metrics
from kafkalite.consumer.commits import fetch_committed_offsets
from kafkalite.consumer.group_wire import PROTOCOL_TYPE, assignment_from_wire
from kafkalite.consumer.list_offsets import LATEST, OffsetAndTimestamp, list_offsets
from kafkalite.errors import KafkaError, KafkaTimeoutError, NoError, ProtocolDecodeError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.acl_codes import (
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourceType,
)
from kafkalite.protocol.config_codes import ConfigResourceType, ConfigSourceType
from kafkalite.protocol.config_codes import ConfigType as ConfigType  # kafka-python exports it here
from kafkalite.protocol.errors import (
    BrokerResponseError,
    ElectionNotNeededError,
    NotControllerError,
    NotLeaderOrFollowerError,
    UnknownTopicOrPartitionError,
    UnsupportedVersionError,
    error_for_code,
)
from kafkalite.protocol.schemas.elections import ElectionType
from kafkalite.protocol.scram import salted_password
from kafkalite.structs import OffsetAndMetadata, PartitionMetadata, TopicPartition


class GroupState(enum.StrEnum):
    """A group's state as DescribeGroups / ListGroups v4+ name it."""

    UNKNOWN = "Unknown"
    PREPARING_REBALANCE = "PreparingRebalance"
    COMPLETING_REBALANCE = "CompletingRebalance"
    STABLE = "Stable"
    DEAD = "Dead"
    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"


class GroupType(enum.StrEnum):
    """A group's protocol family (ListGroups v5+'s group_type)."""

    UNKNOWN = "Unknown"
    CLASSIC = "classic"
    CONSUMER = "consumer"
    SHARE = "share"


class UpdateFeatureType(enum.IntEnum):
    """UpdateFeatures' upgrade types (KIP-584); kafkalite does not send UpdateFeatures yet."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


class AlterConfigOp(enum.IntEnum):
    """An incremental config change's operation (IncrementalAlterConfigs)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class OffsetSpec(enum.IntEnum):
    """Which offset ``list_partition_offsets`` looks up: Kafka's special timestamps."""

    LATEST = -1
    EARLIEST = -2
    MAX_TIMESTAMP = -3


class OffsetTimestamp(int):
    """A timestamp in ms as an offset spec: ``reset_group_offsets`` moves to the first
    offset at or after it, where a plain int is the offset itself (kafka-python's rule)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return f"OffsetTimestamp({int(self)})"


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


class ScramMechanism(enum.IntEnum):
    """SCRAM mechanisms by their wire codes (kafka-python's names)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")


def _scram_mechanism(value: ScramMechanism | str | int) -> ScramMechanism:
    if isinstance(value, str):
        mechanism = ScramMechanism[value.upper().replace("-", "_")]
    else:
        mechanism = ScramMechanism(value)
    if mechanism is ScramMechanism.UNKNOWN:
        raise ValueError("the SCRAM mechanism must not be UNKNOWN")
    return mechanism


class UserScramCredentialDeletion:
    """Remove ``user``'s credential for ``mechanism`` (alter_user_scram_credentials)."""

    def __init__(self, user: str, mechanism: ScramMechanism | str | int) -> None:
        self.user = user
        self.mechanism = _scram_mechanism(mechanism)


class UserScramCredentialUpsertion:
    """Set ``user``'s credential for ``mechanism``: the password is salted and iterated
    here (PBKDF2), only the salted password goes to the broker."""

    DEFAULT_ITERATIONS = 4096

    def __init__(self, user: str, mechanism: ScramMechanism | str | int,
                 password: str | bytes, iterations: int | None = None,
                 salt: bytes | None = None) -> None:
        self.user = user
        self.mechanism = _scram_mechanism(mechanism)
        self.iterations = iterations or self.DEFAULT_ITERATIONS
        self.salt = salt if salt is not None else secrets.token_bytes(24)
        text = password.decode("utf-8") if isinstance(password, bytes) else password
        self.salted_password = salted_password(self.mechanism.mechanism_name, text, self.salt,
                                               self.iterations)


def _resource_type(value: str | int) -> ConfigResourceType:
    if isinstance(value, str):
        try:
            return ConfigResourceType[value.upper()]
        except KeyError:
            pass
    else:
        try:
            return ConfigResourceType(value)
        except ValueError:
            pass
    names = ", ".join(t.name for t in ConfigResourceType if t.value)
    raise ValueError(f"resource_type must be one of {names} (any case), not {value!r}")


@dataclass(frozen=True, init=False)
class NewTopic:
    """A topic to create; -1 partitions / replication factor mean the broker's defaults.

    Takes kafka-python's arguments in its order (``name, num_partitions, replication_factor,
    replica_assignments, topic_configs``); ``config=`` is the same as ``topic_configs=``.
    """

    name: str
    num_partitions: int
    replication_factor: int
    replica_assignments: Mapping[int, Sequence[int]]
    config: Mapping[str, str]

    def __init__(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignments: Mapping[int, Sequence[int]] | None = None,
                 topic_configs: Mapping[str, str] | None = None, *,
                 config: Mapping[str, str] | None = None) -> None:
        if topic_configs is not None and config is not None:
            raise ValueError("give topic_configs or config, not both")
        for attr, value in (("name", name), ("num_partitions", num_partitions),
                            ("replication_factor", replication_factor),
                            ("replica_assignments", dict(replica_assignments or {})),
                            ("config", dict(topic_configs or config or {}))):
            object.__setattr__(self, attr, value)

    @property
    def topic_configs(self) -> Mapping[str, str]:
        """kafka-python's name for :attr:`config`."""
        return self.config


@dataclass(frozen=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions (optionally placing the new ones)."""

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = None


ConfigChanges = (Mapping[str, str | tuple[AlterConfigOp | str | int, str | None] | None]
                 | Sequence[str])
"""What ``ConfigResource.configs`` holds: changes by key, or (for a reset) just keys."""


@dataclass(frozen=True)
class ConfigResource:
    """What ``describe_configs`` looks at: ``ConfigResource("topic", name)``,
    ``ConfigResource('TOPIC', name)`` or ``ConfigResource(ConfigResourceType.BROKER, "0")``
    (kafka-python's spellings). ``configs`` carries the changes for ``alter_configs``
    (``{key: value}`` or ``{key: (AlterConfigOp, value)}``) or the keys for
    ``reset_configs``; it does not take part in equality."""

    resource_type: ConfigResourceType
    name: str
    configs: ConfigChanges | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource_type", _resource_type(self.resource_type))


@dataclass(frozen=True)
class TopicDescription:
    name: str
    internal: bool
    partitions: list[PartitionMetadata]


@dataclass(frozen=True)
class MemberDescription:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    assignment: list[TopicPartition]


@dataclass(frozen=True)
class GroupDescription:
    group_id: str
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberDescription]
    authorized_operations: list[str] | None = None
    """The caller's operations on the group, by name, when asked for (KIP-430)."""


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str


@dataclass(frozen=True)
class MemberToRemove:
    """A member for ``remove_group_members``: a dynamic one by ``member_id``, a static one
    by ``group_instance_id`` (kafka-python's class; ``reason`` is not sent: LeaveGroup v5)."""

    member_id: str | None = None
    group_instance_id: str | None = None
    reason: str | None = None


UNSENT_ADMIN_APIS: Mapping[str, str] = {
    "alter_replica_log_dirs": "AlterReplicaLogDirs (34)",
    "alter_partition_reassignments": "AlterPartitionReassignments (45)",
    "list_partition_reassignments": "ListPartitionReassignments (46)",
    "describe_features": "DescribeFeatures via ApiVersions (18) v3",
    "update_features": "UpdateFeatures (57)",
    "describe_metadata_quorum": "DescribeQuorum (55)",
    "describe_topic_partitions": "DescribeTopicPartitions (75)",
    "list_config_resources": "ListConfigResources (74)",
}
"""kafka-python admin methods whose Kafka request kafkalite's client does not send yet: each
raises UnsupportedVersionError naming the API, never a silent no-op."""


def _unsent(method: str, api: str) -> Any:
    def call(self: AdminClient, *args: Any, **kwargs: Any) -> Any:
        raise UnsupportedVersionError(f"AdminClient.{method}(): kafkalite does not send "
                                      f"{api} requests yet")

    call.__name__ = call.__qualname__ = method
    call.__doc__ = f"Not supported yet: needs {api}; raises UnsupportedVersionError."
    return call


def _is_default(config: Mapping[str, Any]) -> bool:
    """A DescribeConfigs entry whose value is a default (v0: is_default; v1+: its source)."""
    source = config.get("config_source", -1)
    return bool(config.get("is_default")) if source == -1 else \
        source == ConfigSourceType.DEFAULT_CONFIG


def _own_config_source(resource: ConfigResource) -> int:
    """The DescribeConfigs source code of values set on the resource itself: a topic's
    dynamic config (1), one broker's (2), the cluster-wide broker default (3, the broker
    resource named "") or a broker logger's (6)."""
    kind = resource.resource_type
    if kind is ConfigResourceType.BROKER:
        return ConfigSourceType.DYNAMIC_BROKER_CONFIG if resource.name else \
            ConfigSourceType.DYNAMIC_DEFAULT_BROKER_CONFIG
    return {ConfigResourceType.TOPIC: ConfigSourceType.DYNAMIC_TOPIC_CONFIG,
            ConfigResourceType.BROKER_LOGGER: ConfigSourceType.DYNAMIC_BROKER_LOGGER_CONFIG,
            }.get(kind, -1)


def _resource_label(resource: ConfigResource) -> str:
    return f"{resource.resource_type.name.lower()} {resource.name!r}"


def _config_changes(configs: ConfigChanges | None,
                    ) -> Iterator[tuple[str, AlterConfigOp, str | None]]:
    """(key, operation, value) for each change; a bare value means SET."""
    if not configs:
        return
    if not isinstance(configs, Mapping):
        raise TypeError(f"configs must map keys to values or (AlterConfigOp, value), "
                        f"not {type(configs).__name__}")
    for name, change in configs.items():
        op, value = change if isinstance(change, tuple) else (AlterConfigOp.SET, change)
        op = AlterConfigOp[op.upper()] if isinstance(op, str) else AlterConfigOp(op)
        yield name, op, None if op is AlterConfigOp.DELETE else value


def _config_entries(resource: ConfigResource, incremental: bool) -> list[dict[str, Any]]:
    entries = []
    for name, op, value in _config_changes(resource.configs):
        if incremental:
            entries.append({"name": name, "config_operation": int(op), "value": value})
        elif op is AlterConfigOp.SET:
            entries.append({"name": name, "value": value})
        else:
            raise ValueError(f"{_resource_label(resource)}: {name}: AlterConfigs can only "
                             f"SET; {op.name} needs incremental=True")
    return entries


def _raise_for(code: int, context: str, message: str | None = None) -> None:
    if code:
        raise error_for_code(code)(f"{context}: {message}" if message else context)


class AdminClient:
    """Administers a Kafka cluster; takes the client settings (``bootstrap_servers``,
    ``client_id``, ``request_timeout_ms``, ...) with kafka-python's names."""

    def __init__(self, bootstrap_servers: str | Sequence[str] = "localhost:9092",
                 **config: Any) -> None:
        self._client = KafkaClient(bootstrap_servers=bootstrap_servers, **config)
        self._client.metadata.all_topics = True
        self._timeout = self._client.config["request_timeout_ms"] / 1000
        self._client.start()

    def _deadline(self) -> float:
        return time.monotonic() + self._timeout

    def _call(self, node: int, api_key: ApiKey, body: Mapping[str, Any]) -> dict[str, Any]:
        return self._client.send(node, api_key, body).get(self._timeout)

    def _refresh_metadata(self) -> None:
        metadata = self._client.metadata
        metadata.await_update(metadata.request_update(), self._timeout)

    def _any_node(self) -> int:
        if not self._client.cluster.brokers():
            self._refresh_metadata()
        return min(b.node_id for b in self._client.cluster.brokers())

    def _call_controller(self, api_key: ApiKey, body: Mapping[str, Any],
                         results_of: str) -> list[dict[str, Any]]:
        """Send to the controller, following it once if it moved (NOT_CONTROLLER)."""
        for _ in range(3):
            self._refresh_metadata()
            cluster = self._client.cluster
            node = cluster.controller_id if cluster.controller_id >= 0 else self._any_node()
            results: list[dict[str, Any]] = self._call(node, api_key, body)[results_of]
            if all(r["error_code"] != NotControllerError.errno for r in results):
                return results
        raise NotControllerError("the controller kept moving")

    # -- ACLs and SCRAM users ------------------------------------------------------------------

    def create_acls(self, acls: Iterable[ACL]) -> dict[str, list[Any]]:
        """CreateAcls: ``{"succeeded": [acl, ...], "failed": [(acl, error), ...]}``."""
        acls = list(acls)
        body = {"creations": [
            {"resource_type": a.resource_pattern.resource_type,
             "resource_name": a.resource_pattern.resource_name,
             "resource_pattern_type": a.resource_pattern.pattern_type,
             "principal": a.principal, "host": a.host, "operation": a.operation,
             "permission_type": a.permission_type} for a in acls]}
        results = self._call(self._any_node(), ApiKey.CREATE_ACLS, body)["results"]
        outcome: dict[str, list[Any]] = {"succeeded": [], "failed": []}
        for acl, result in zip(acls, results, strict=True):
            if result["error_code"]:
                outcome["failed"].append((acl, error_for_code(result["error_code"])(
                    result["error_message"] or "")))
            else:
                outcome["succeeded"].append(acl)
        return outcome

    def describe_acls(self, acl_filter: ACLFilter) -> tuple[list[ACL], Any]:
        """DescribeAcls: (matching ACLs, None); a refusal (no authorizer: SECURITY_DISABLED,
        no permission) raises the broker's error."""
        response = self._call(self._any_node(), ApiKey.DESCRIBE_ACLS, _acl_filter(acl_filter))
        _raise_for(response["error_code"], "describe_acls", response["error_message"])
        return [ACL(a["principal"], a["host"], ACLOperation(a["operation"]),
                    ACLPermissionType(a["permission_type"]),
                    ResourcePattern(ResourceType(r["resource_type"]), r["resource_name"],
                                    ACLResourcePatternType(r["pattern_type"])))
                for r in response["resources"] for a in r["acls"]], None

    def delete_acls(self, acl_filters: Iterable[ACLFilter]
                    ) -> list[tuple[ACLFilter, list[tuple[ACL, Any]], Any]]:
        """DeleteAcls: per filter, (filter, [(deleted ACL, error or None)], error or None)."""
        filters = list(acl_filters)
        body = {"filters": [_acl_filter(f) for f in filters]}
        results = self._call(self._any_node(), ApiKey.DELETE_ACLS, body)["filter_results"]
        answer = []
        for acl_filter, result in zip(filters, results, strict=True):
            matched = [(ACL(m["principal"], m["host"], ACLOperation(m["operation"]),
                            ACLPermissionType(m["permission_type"]),
                            ResourcePattern(ResourceType(m["resource_type"]),
                                            m["resource_name"],
                                            ACLResourcePatternType(m["pattern_type"]))),
                        _error_or_none(m["error_code"], m["error_message"]))
                       for m in result["matching_acls"]]
            answer.append((acl_filter, matched,
                           _error_or_none(result["error_code"], result["error_message"])))
        return answer

    def describe_user_scram_credentials(self, users: Iterable[str] | None = None
                                        ) -> dict[str, dict[str, Any]]:
        """``{user: {"error": None or message, "credential_infos": [{"mechanism": ...,
        "iterations": n}]}}``."""
        body = {"users": None if users is None else [{"name": u} for u in users]}
        response = self._call(self._any_node(), ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS, body)
        _raise_for(response["error_code"], "describe_user_scram_credentials",
                   response["error_message"])
        return {r["user"]: {"error": r["error_message"] if r["error_code"] else None,
                            "credential_infos": [
                                {"mechanism": ScramMechanism(c["mechanism"]),
                                 "iterations": c["iterations"]}
                                for c in r["credential_infos"]]}
                for r in response["results"]}

    def alter_user_scram_credentials(
            self, alterations: Iterable[UserScramCredentialDeletion
                                        | UserScramCredentialUpsertion]
    ) -> dict[str, str | None]:
        """``{user: None or the broker's error message}``."""
        alterations = list(alterations)
        body = {
            "deletions": [{"name": a.user, "mechanism": a.mechanism} for a in alterations
                          if isinstance(a, UserScramCredentialDeletion)],
            "upsertions": [{"name": a.user, "mechanism": a.mechanism,
                            "iterations": a.iterations, "salt": a.salt,
                            "salted_password": a.salted_password} for a in alterations
                           if isinstance(a, UserScramCredentialUpsertion)],
        }
        response = self._call(self._any_node(), ApiKey.ALTER_USER_SCRAM_CREDENTIALS, body)
        return {r["user"]: (r["error_message"] or error_for_code(r["error_code"]).message)
                if r["error_code"] else None for r in response["results"]}

    def _coordinator(self, group_id: str, given: int | None = None) -> int:
        return given if given is not None else \
            find_coordinator(self._client, group_id, self._deadline())

    def _max_version(self, node: int, api_key: ApiKey) -> int:
        """The highest version of ``api_key`` broker ``node`` supports (-1: none)."""
        return self.get_broker_version_data(node).api_versions.get(int(api_key), (-1, -1))[1]

    # -- topics --------------------------------------------------------------------------------

    def create_topics(self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
                      validate_only: bool = False, raise_errors: bool = True,
                      wait_for_metadata: bool = False) -> None:
        """Create the topics; the first refusal raises (e.g. TopicAlreadyExistsError) unless
        ``raise_errors`` is False. ``wait_for_metadata`` waits until each has leaders."""
        new_topics = list(new_topics)
        topics = [{
            "name": t.name, "num_partitions": t.num_partitions,
            "replication_factor": t.replication_factor,
            "assignments": [{"partition_index": p, "broker_ids": list(ids)}
                            for p, ids in t.replica_assignments.items()],
            "configs": [{"name": k, "value": v} for k, v in t.config.items()],
        } for t in new_topics]
        results = self._call_controller(ApiKey.CREATE_TOPICS, {
            "topics": topics, "timeout_ms": timeout_ms or int(self._timeout * 1000),
            "validate_only": validate_only}, "topics")
        for result in results if raise_errors else ():
            _raise_for(result["error_code"], f"creating topic {result['name']!r}",
                       result.get("error_message"))
        self._refresh_metadata()
        if wait_for_metadata and not validate_only:
            self.wait_for_topics([t.name for t in new_topics],
                                 timeout_ms or int(self._timeout * 1000))

    def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None,
                      raise_errors: bool = True) -> None:
        results = self._call_controller(ApiKey.DELETE_TOPICS, {
            "topic_names": list(topics),
            "timeout_ms": timeout_ms or int(self._timeout * 1000)}, "responses")
        for result in results if raise_errors else ():
            _raise_for(result["error_code"], f"deleting topic {result['name']!r}")
        self._refresh_metadata()

    def create_partitions(self, topic_partitions: Mapping[str, NewPartitions],
                          timeout_ms: int | None = None, validate_only: bool = False,
                          raise_errors: bool = True) -> None:
        topics = [{"name": name, "count": spec.total_count,
                   "assignments": None if spec.new_assignments is None else
                   [{"broker_ids": list(ids)} for ids in spec.new_assignments]}
                  for name, spec in topic_partitions.items()]
        results = self._call_controller(ApiKey.CREATE_PARTITIONS, {
            "topics": topics, "timeout_ms": timeout_ms or int(self._timeout * 1000),
            "validate_only": validate_only}, "results")
        for result in results if raise_errors else ():
            _raise_for(result["error_code"], f"adding partitions to topic {result['name']!r}",
                       result.get("error_message"))
        self._refresh_metadata()

    def list_topics(self, include_internal: bool = False) -> set[str]:
        self._refresh_metadata()
        return self._client.cluster.topics(exclude_internal=not include_internal)

    def describe_topics(self, topics: Iterable[str] | None = None,
                        ) -> dict[str, TopicDescription]:
        """Partitions, leaders and replicas; an unknown topic raises naming it."""
        self._refresh_metadata()
        cluster = self._client.cluster
        names = sorted(cluster.topics()) if topics is None else list(topics)
        result = {}
        for name in names:
            partitions = cluster.partitions_for_topic(name)
            if partitions is None:
                raise error_for_code(3)(f"topic {name!r}")
            metas = [cluster.partition_metadata(TopicPartition(name, p))
                     for p in sorted(partitions)]
            result[name] = TopicDescription(
                name, name in cluster.topics() - cluster.topics(exclude_internal=True),
                [m for m in metas if m is not None])
        return result

    def describe_configs(self, config_resources: Iterable[ConfigResource],
                         include_synonyms: bool = False, config_filter: str = "all",
                         ) -> dict[ConfigResource, dict[str, str | None]]:
        """``{resource: {name: value}}`` for each resource (``config_filter="modified"``
        keeps only values that are not the broker's defaults). A broker resource is asked
        of that broker."""
        wanted = list(config_resources)
        described = self._describe_config_entries(wanted, include_synonyms)
        return {resource: {c["name"]: c["value"] for c in entries
                           if config_filter != "modified" or not _is_default(c)}
                for resource, entries in zip(wanted, described, strict=True)}

    def _describe_config_entries(self, resources: list[ConfigResource],
                                 include_synonyms: bool = False) -> list[list[dict[str, Any]]]:
        """DescribeConfigs' entries for each resource, in order; an error raises naming it."""
        out: dict[int, list[dict[str, Any]]] = {}
        for node, batch in self._by_config_node(resources).items():
            body = {"resources": [{"resource_type": int(r.resource_type),
                                   "resource_name": r.name, "configuration_keys": None}
                                  for _, r in batch],
                    "include_synonyms": include_synonyms, "include_documentation": False}
            results = self._call(node, ApiKey.DESCRIBE_CONFIGS, body)["results"]
            for (index, resource), result in zip(batch, results, strict=True):
                _raise_for(result["error_code"], f"describing {_resource_label(resource)}",
                           result.get("error_message"))
                out[index] = result["configs"]
        return [out[i] for i in range(len(resources))]

    def _by_config_node(self, resources: list[ConfigResource],
                        ) -> dict[int, list[tuple[int, ConfigResource]]]:
        """Which broker answers for each resource (with its position): a broker's own
        configs go to that broker, everything else to any broker (kafka-python's routing)."""
        batches: dict[int, list[tuple[int, ConfigResource]]] = {}
        for index, resource in enumerate(resources):
            if resource.resource_type in (ConfigResourceType.BROKER,
                                          ConfigResourceType.BROKER_LOGGER) and resource.name:
                try:
                    node = int(resource.name)
                except ValueError:
                    raise ValueError(f"a broker resource is named by its broker id, not "
                                     f"{resource.name!r}") from None
            else:
                node = self._any_node()
            batches.setdefault(node, []).append((index, resource))
        return batches

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
        if raise_on_unknown:
            self._check_config_keys(resources)
        if incremental is None:
            incremental = ApiKey.INCREMENTAL_ALTER_CONFIGS in self.api_versions()
        if not incremental:
            resources = self._with_other_modified_configs(resources)
        return self._send_config_changes(resources, validate_only, incremental)

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
        if raise_on_unknown:
            self._check_config_keys(resources)
        if incremental is None:
            incremental = ApiKey.INCREMENTAL_ALTER_CONFIGS in self.api_versions()
        if incremental:
            keys = [list(r.configs or ()) or list(modified) for r, modified in
                    zip(resources, self._modified_configs(resources), strict=True)]
            resources = [dataclasses.replace(r, configs=dict.fromkeys(
                k, (AlterConfigOp.DELETE, None))) for r, k in zip(resources, keys, strict=True)]
        else:  # AlterConfigs resets every key it is not given: send only the ones to keep
            resources = [dataclasses.replace(r, configs={
                k: v for k, v in modified.items() if k not in set(r.configs or ())})
                for r, modified in zip(resources, self._modified_configs(resources),
                                       strict=True)]
        return self._send_config_changes(resources, validate_only, incremental)

    def _check_config_keys(self, resources: list[ConfigResource]) -> None:
        """ValueError naming keys the resource has no changeable config for."""
        for resource, entries in zip(resources, self._describe_config_entries(resources),
                                     strict=True):
            known = {c["name"] for c in entries if not c.get("read_only")}
            unknown = sorted(set(resource.configs or ()) - known)
            if unknown:
                raise ValueError(f"{_resource_label(resource)} has no changeable config "
                                 f"{', '.join(unknown)}")

    def _modified_configs(self, resources: list[ConfigResource]) -> list[dict[str, str]]:
        """Each resource's own settings (what AlterConfigs would reset), with their values;
        values inherited from elsewhere (a broker default for a topic) are not its own."""
        return [{c["name"]: c["value"] for c in entries
                 if c.get("config_source") == _own_config_source(resource)
                 and c["value"] is not None}
                for resource, entries in zip(resources, self._describe_config_entries(resources),
                                             strict=True)]

    def _with_other_modified_configs(self, resources: list[ConfigResource],
                                     ) -> list[ConfigResource]:
        out = []
        for resource, modified in zip(resources, self._modified_configs(resources),
                                      strict=True):
            given = resource.configs if isinstance(resource.configs, Mapping) else {}
            out.append(dataclasses.replace(resource, configs={
                **{k: v for k, v in modified.items() if k not in given}, **given}))
        return out

    def _send_config_changes(self, resources: list[ConfigResource], validate_only: bool,
                             incremental: bool) -> dict[str, dict[str, str]]:
        api = ApiKey.INCREMENTAL_ALTER_CONFIGS if incremental else ApiKey.ALTER_CONFIGS
        out: dict[str, dict[str, str]] = {}
        for node, batch in self._by_config_node(resources).items():
            body = {"resources": [{"resource_type": int(r.resource_type),
                                   "resource_name": r.name,
                                   "configs": _config_entries(r, incremental)}
                                  for _, r in batch],
                    "validate_only": validate_only}
            for result in self._call(node, api, body)["responses"]:
                kind = ConfigResourceType(result["resource_type"]).name.lower()
                code = result["error_code"]
                out.setdefault(kind, {})[result["resource_name"]] = "OK" if not code else \
                    str(error_for_code(code)(result["error_message"] or ""))
        return out

    # -- groups --------------------------------------------------------------------------------

    def list_groups(self, broker_ids: Iterable[int] | None = None,
                    states_filter: Iterable[str] | None = None,
                    types_filter: Iterable[str] | None = None) -> list[GroupListing]:
        """Every group on every broker (each broker lists the groups it coordinates), or on
        ``broker_ids``; ``states_filter`` keeps groups in those states ("Stable", "Empty",
        ...: ListGroups v4's filter, matched without regard to case) and ``types_filter``
        those of these protocol types."""
        self._refresh_metadata()
        listings = {}
        wanted = None if broker_ids is None else set(broker_ids)
        states = [] if states_filter is None else list(states_filter)
        types = None if types_filter is None else set(types_filter)
        for broker in sorted(self._client.cluster.brokers()):
            if wanted is not None and broker.node_id not in wanted:
                continue
            body = self._call(broker.node_id, ApiKey.LIST_GROUPS, {"states_filter": states})
            _raise_for(body["error_code"], f"listing groups on broker {broker.node_id}")
            for group in body["groups"]:
                if types is None or group["protocol_type"] in types:
                    listings[group["group_id"]] = GroupListing(group["group_id"],
                                                               group["protocol_type"])
        return sorted(listings.values(), key=lambda g: g.group_id)

    def describe_groups(self, group_ids: Iterable[str], group_coordinator_id: int | None = None,
                        include_authorized_operations: bool = False,
                        ) -> dict[str, GroupDescription]:
        out = {}
        for group_id in group_ids:
            node = self._coordinator(group_id, group_coordinator_id)
            body = self._call(node, ApiKey.DESCRIBE_GROUPS,
                              {"groups": [group_id],
                               "include_authorized_operations": include_authorized_operations})
            (group,) = body["groups"]
            _raise_for(group["error_code"], f"describing group {group_id!r}")
            members = [MemberDescription(
                m["member_id"], m.get("group_instance_id"), m["client_id"], m["client_host"],
                _member_assignment(group["protocol_type"], m["member_assignment"]))
                for m in group["members"]]
            out[group_id] = GroupDescription(group_id, group["group_state"],
                                             group["protocol_type"], group["protocol_data"],
                                             members, _operation_names(
                                                 group["authorized_operations"])
                                             if include_authorized_operations else None)
        return out

    def list_consumer_group_offsets(self, group_id: str,
                                    partitions: Iterable[TopicPartition] | None = None,
                                    ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (all of them, or for ``partitions``)."""
        return fetch_committed_offsets(self._client, group_id,
                                       None if partitions is None else list(partitions),
                                       self._deadline())

    def consumer_group_lag(self, group_id: str) -> dict[TopicPartition, tuple[int, int, int]]:
        """``{tp: (committed, end offset, lag)}`` for every partition the group committed."""
        committed = self.list_consumer_group_offsets(group_id)
        if not committed:
            return {}
        ends = list_offsets(self._client, dict.fromkeys(committed, LATEST),
                            timeout=self._timeout)
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
        by_node: dict[int, list[str]] = {}
        for group_id in group_ids:
            node = self._coordinator(group_id, group_coordinator_id)
            by_node.setdefault(node, []).append(group_id)
        results = {}
        for node, names in by_node.items():
            body = self._call(node, ApiKey.DELETE_GROUPS, {"groups_names": names})
            for result in body["results"]:
                code = result["error_code"]
                results[result["group_id"]] = "OK" if not code else error_for_code(code).__name__
        return results

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
        topics: dict[str, list[dict[str, int]]] = {}
        for tp in wanted:
            topics.setdefault(tp.topic, []).append({"partition_index": tp.partition})
        body = self._call(self._coordinator(group_id, group_coordinator_id),
                          ApiKey.OFFSET_DELETE, {"group_id": group_id, "topics": [
                              {"name": t, "partitions": p} for t, p in topics.items()]})
        _raise_for(body["error_code"], f"deleting offsets of group {group_id!r}")
        return {TopicPartition(topic["name"], part["partition_index"]):
                NoError if not part["error_code"] else error_for_code(part["error_code"])
                for topic in body["topics"] for part in topic["partitions"]}

    def remove_group_members(self, group_id: str, members: Iterable[MemberToRemove],
                             group_coordinator_id: int | None = None,
                             ) -> dict[str, type[KafkaError]]:
        """Remove members from a group (LeaveGroup v3 with member identities), as Kafka's
        tool does for static members that will not come back: ``{member id or instance
        id: error class}``. The group rebalances without them."""
        wanted = list(members)
        if not wanted:
            return {}
        if any(not (m.member_id or m.group_instance_id) for m in wanted):
            raise ValueError("each MemberToRemove needs a member_id or a group_instance_id")
        node = self._coordinator(group_id, group_coordinator_id)
        if self._max_version(node, ApiKey.LEAVE_GROUP) < 3:
            raise UnsupportedVersionError(f"removing members of group {group_id!r} needs "
                                          "LeaveGroup v3, which the broker does not support")
        body = self._call(node, ApiKey.LEAVE_GROUP, {"group_id": group_id, "members": [
            {"member_id": m.member_id or "", "group_instance_id": m.group_instance_id}
            for m in wanted]})
        _raise_for(body["error_code"], f"removing members of group {group_id!r}")
        return {m["member_id"] or m["group_instance_id"]:
                NoError if not m["error_code"] else error_for_code(m["error_code"])
                for m in body["members"]}

    def list_group_offsets(self, group_specs: Mapping[str, Iterable[TopicPartition] | None]
                           | Iterable[str]) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Committed offsets of several groups: ``{group_id: {tp: OffsetAndMetadata}}``;
        ``group_specs`` maps each group to its partitions (None: all) or lists group ids."""
        specs = group_specs if isinstance(group_specs, Mapping) else \
            dict.fromkeys(group_specs)
        return {group: self.list_consumer_group_offsets(group, partitions)
                for group, partitions in specs.items()}

    def alter_group_offsets(self, group_id: str,
                            offsets: Mapping[TopicPartition, int | OffsetAndMetadata],
                            group_coordinator_id: int | None = None,
                            ) -> dict[TopicPartition, type[KafkaError]]:
        """Commit ``offsets`` for a group that has no active members; ``{tp: error class}``
        with ``NoError`` for each partition committed (kafka-python's shape)."""
        checked = {tp: value if isinstance(value, OffsetAndMetadata) else
                   OffsetAndMetadata(value) for tp, value in offsets.items()}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for tp, meta in sorted(checked.items()):
            by_topic.setdefault(tp.topic, []).append({
                "partition_index": tp.partition, "committed_offset": meta.offset,
                "committed_leader_epoch": meta.leader_epoch,
                "committed_metadata": meta.metadata or ""})
        node = self._coordinator(group_id, group_coordinator_id)
        body = self._call(node, ApiKey.OFFSET_COMMIT, {
            "group_id": group_id, "generation_id_or_member_epoch": -1, "member_id": "",
            "group_instance_id": None, "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": p} for t, p in by_topic.items()]})
        result: dict[TopicPartition, type[KafkaError]] = {}
        for topic in body["topics"]:
            for part in topic["partitions"]:
                code = part["error_code"]
                result[TopicPartition(topic["name"], part["partition_index"])] = \
                    NoError if code == 0 else error_for_code(code)
        return result

    def reset_group_offsets(self, group_id: str,
                            offset_specs: Mapping[TopicPartition,
                                                  OffsetSpec | OffsetTimestamp | int],
                            group_coordinator_id: int | None = None,
                            ) -> dict[TopicPartition, dict[str, Any]]:
        """Move a group's offsets per partition to ``OffsetSpec.EARLIEST`` / ``LATEST``, to
        the first offset at an ``OffsetTimestamp`` (ms), or to a plain int offset; each
        target is clamped to the partition's [earliest, latest] (a timestamp past the last
        record gives latest). ``{tp: {"error": error class, "offset": committed offset}}``."""
        lookups: dict[TopicPartition, int] = {}
        explicit: dict[TopicPartition, int] = {}
        for tp, spec in offset_specs.items():
            if isinstance(spec, OffsetSpec | OffsetTimestamp):
                lookups[tp] = spec
            elif isinstance(spec, int):
                explicit[tp] = spec
            else:
                raise TypeError(f"reset target of {tp.topic}-{tp.partition}: {spec!r} is not "
                                f"an OffsetSpec, an OffsetTimestamp or an int offset")
        tps = list(offset_specs)
        earliest = self.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.EARLIEST))
        latest = self.list_partition_offsets(dict.fromkeys(tps, OffsetSpec.LATEST))
        found = self.list_partition_offsets(lookups) if lookups else {}
        targets = {}
        for tp in tps:
            low, high = earliest[tp].offset, latest[tp].offset
            raw = found[tp].offset if tp in found else explicit.get(tp, -1)
            targets[tp] = high if raw < 0 else min(max(raw, low), high)
        errors = self.alter_group_offsets(group_id, targets, group_coordinator_id)
        return {tp: {"error": errors.get(tp, NoError), "offset": offset}
                for tp, offset in targets.items()}

    # -- partitions and cluster ------------------------------------------------------------------

    def list_partition_offsets(self, topic_partition_specs: Mapping[TopicPartition,
                                                                    OffsetSpec | int],
                               isolation_level: int = 0, timeout_ms: int | None = None,
                               ) -> dict[TopicPartition, OffsetAndTimestamp]:
        """The offset for each partition's spec (``OffsetSpec.EARLIEST`` / ``LATEST`` or a
        timestamp in ms); a timestamp past the last record is left out."""
        timeout = self._timeout if timeout_ms is None else timeout_ms / 1000
        found = list_offsets(self._client, {tp: int(spec) for tp, spec
                                            in topic_partition_specs.items()},
                             isolation_level=int(isolation_level), timeout=timeout)
        return {tp: result for tp, result in found.items() if result is not None}

    # -- leader elections --------------------------------------------------------------------

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
        if isinstance(topic_partitions, Mapping):
            wanted: dict[str, list[int]] | None = {
                topic: list(parts) for topic, parts in topic_partitions.items()}
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
        body = {"election_type": int(election_type),
                "topic_partitions": None if wanted is None else [
                    {"topic": topic, "partitions": parts} for topic, parts in wanted.items()],
                "timeout_ms": timeout_ms or int(self._timeout * 1000)}
        for _ in range(3):
            self._refresh_metadata()
            cluster = self._client.cluster
            node = cluster.controller_id if cluster.controller_id >= 0 else self._any_node()
            response = self._call(node, ApiKey.ELECT_LEADERS, body)
            if response["error_code"] != NotControllerError.errno:
                break
        else:
            raise NotControllerError("the controller kept moving")
        _raise_for(response["error_code"], "electing leaders")
        results: dict[TopicPartition, BrokerResponseError | None] = {}
        for topic in response["replica_election_results"]:
            for partition in topic["partition_result"]:
                code = partition["error_code"]
                error = None if code == 0 else error_for_code(code)(
                    f"electing a leader for {topic['topic']}-{partition['partition_id']}: "
                    f"{partition['error_message']}")
                results[TopicPartition(topic["topic"], partition["partition_id"])] = error
        if raise_errors:
            for error in results.values():
                if error is not None and not isinstance(error, ElectionNotNeededError):
                    raise error
        return results

    perform_leader_election = elect_leaders
    """kafka-python 2.0's name for :meth:`elect_leaders`."""

    def describe_cluster(self) -> dict[str, Any]:
        """``{"cluster_id", "controller_id", "brokers": [{"broker_id", "host", "port",
        "rack"}], "authorized_operations": [operation names]}`` from DescribeCluster (60),
        or from Metadata on a broker without it (then without operations): kafka-python's
        shape."""
        node = self._any_node()
        if ApiKey.DESCRIBE_CLUSTER not in self.api_versions():
            self._refresh_metadata()
            cluster = self._client.cluster
            return {"cluster_id": cluster.cluster_id, "controller_id": cluster.controller_id,
                    "brokers": [{"broker_id": b.node_id, "host": b.host, "port": b.port,
                                 "rack": b.rack} for b in sorted(cluster.brokers())]}
        body = self._call(node, ApiKey.DESCRIBE_CLUSTER,
                          {"include_cluster_authorized_operations": True})
        _raise_for(body["error_code"], "describing the cluster", body["error_message"])
        return {"cluster_id": body["cluster_id"], "controller_id": body["controller_id"],
                "brokers": [dict(b) for b in body["brokers"]],
                "authorized_operations": _operation_names(
                    body["cluster_authorized_operations"])}

    def delete_records(self, records_to_delete: Mapping[TopicPartition, int],
                       timeout_ms: int | None = None, partition_leader_id: int | None = None,
                       ) -> dict[TopicPartition, dict[str, int]]:
        """Delete every record below the given offset (-1: the high watermark) of each
        partition by moving its log start offset (DeleteRecords, to each leader):
        ``{tp: {"partition_index", "low_watermark", "error_code"}}``. A refused partition
        raises its error (``OffsetOutOfRangeError`` past the end) naming it; a leader that
        moved is followed until ``timeout_ms``."""
        timeout = self._timeout if timeout_ms is None else timeout_ms / 1000
        deadline = time.monotonic() + timeout
        pending = dict(records_to_delete)
        done: dict[TopicPartition, dict[str, int]] = {}
        while pending:
            self._refresh_metadata()
            retry: dict[TopicPartition, int] = {}
            for node, batch in self._by_leader(pending, partition_leader_id).items():
                topics: dict[str, list[dict[str, int]]] = {}
                for tp, offset in sorted(batch.items()):
                    topics.setdefault(tp.topic, []).append(
                        {"partition_index": tp.partition, "offset": offset})
                body = self._call(node, ApiKey.DELETE_RECORDS, {
                    "topics": [{"name": t, "partitions": p} for t, p in topics.items()],
                    "timeout_ms": int(max(deadline - time.monotonic(), 0) * 1000)})
                for topic in body["topics"]:
                    for part in topic["partitions"]:
                        tp = TopicPartition(topic["name"], part["partition_index"])
                        if part["error_code"] == NotLeaderOrFollowerError.errno and \
                                partition_leader_id is None and time.monotonic() < deadline:
                            retry[tp] = pending[tp]
                        else:
                            done[tp] = dict(part)
            pending = retry
            if pending:
                time.sleep(self._client.config["retry_backoff_ms"] / 1000)
        failed = {tp: r["error_code"] for tp, r in done.items() if r["error_code"]}
        if failed:
            tp, code = min(failed.items())
            others = f" (and {len(failed) - 1} more partitions)" if len(failed) > 1 else ""
            raise error_for_code(code)(f"deleting records of {tp.topic}-{tp.partition}"
                                       f"{others}")
        return done

    def _by_leader(self, offsets: Mapping[TopicPartition, int], node: int | None,
                   ) -> dict[int, dict[TopicPartition, int]]:
        """The partitions grouped by the broker leading them (or all to ``node``)."""
        batches: dict[int, dict[TopicPartition, int]] = {}
        for tp, offset in offsets.items():
            leader = node if node is not None else self._client.cluster.leader_for(tp)
            if leader is None:
                raise UnknownTopicOrPartitionError(f"{tp.topic}-{tp.partition} has no leader")
            batches.setdefault(leader, {})[tp] = offset
        return batches

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
        request = {"topics": [{"topic": t, "partitions": p} for t, p in wanted.items()]}
        if brokers is None:
            self._refresh_metadata()
            brokers = sorted(b.node_id for b in self._client.cluster.brokers())
        out = []
        for node in brokers:
            body = self._call(node, ApiKey.DESCRIBE_LOG_DIRS, request)
            _raise_for(body.get("error_code", 0), f"describing the log dirs of broker {node}")
            out.append({"broker": node, "log_dirs": [dict(r) for r in body["results"]]})
        return out

    # -- transactions (KIP-664) -----------------------------------------------------------------

    def _broker_ids(self, broker_ids: Iterable[int] | None) -> list[int]:
        if broker_ids is not None:
            return list(broker_ids)
        self._refresh_metadata()
        return sorted(b.node_id for b in self._client.cluster.brokers())

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
        body = txn.list_transactions_request(producer_id_filters, state_filters,
                                             duration_filter_ms)
        out = {}
        for node in self._broker_ids(broker_ids):
            served = self._max_version(node, ApiKey.LIST_TRANSACTIONS)
            needed = 2 if transactional_id_pattern is not None else \
                1 if duration_filter_ms is not None else 0
            if served < needed:
                what = "transactional_id_pattern" if needed == 2 else "duration_filter_ms"
                raise UnsupportedVersionError(
                    f"list_transactions({what}=...) needs ListTransactions (66) v{needed}; "
                    f"broker {node} serves " + (f"up to v{served}" if served >= 0 else "none"))
            out[node] = txn.transaction_listings(
                node, self._call(node, ApiKey.LIST_TRANSACTIONS, body))
        return out

    def describe_transactions(self, transactional_ids: Iterable[str]
                              ) -> dict[str, TransactionDescription]:
        """Each transactional id as its transaction coordinator describes it
        (DescribeTransactions): ``{transactional_id: TransactionDescription}``; an id the
        coordinator does not know raises TransactionalIdNotFoundError naming it."""
        by_node: dict[int, list[str]] = {}
        for txn_id in dict.fromkeys(transactional_ids):
            node = find_coordinator(self._client, txn_id, self._deadline(),
                                    key_type=TRANSACTION_KEY)
            by_node.setdefault(node, []).append(txn_id)
        out: dict[str, TransactionDescription] = {}
        for node, ids in by_node.items():
            body = self._call(node, ApiKey.DESCRIBE_TRANSACTIONS, {"transactional_ids": ids})
            out.update(txn.transaction_descriptions(node, body))
        return out

    def describe_producers(self, partitions: Iterable[TopicPartition],
                           broker_id: int | None = None,
                           ) -> dict[TopicPartition, PartitionProducerState]:
        """The active producers of each partition, with the offset where each one's open
        transaction starts (DescribeProducers, to each leader or to ``broker_id``):
        ``{tp: PartitionProducerState([ProducerState, ...])}``."""
        partitions = list(partitions)
        if not partitions:
            return {}
        self._refresh_metadata()
        out: dict[TopicPartition, PartitionProducerState] = {}
        for node, batch in self._by_leader(dict.fromkeys(partitions, 0), broker_id).items():
            body = self._call(node, ApiKey.DESCRIBE_PRODUCERS, {"topics": [
                {"name": t, "partition_indexes": p} for t, p in txn.by_topic(batch).items()]})
            out.update(txn.producer_states(body))
        return out

    def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """End a producer's open transaction on one partition with an ABORT marker written
        by the partition's leader (WriteTxnMarkers), as ``kafka-transactions.sh abort``
        does for a hanging transaction; the leader checks the producer id and epochs."""
        self._refresh_metadata()
        [node] = self._by_leader({spec.topic_partition: 0}, None)
        txn.check_abort(spec, self._call(node, ApiKey.WRITE_TXN_MARKERS,
                                         txn.abort_request(spec)))

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
        return txn.hanging(self.describe_transactions(ids), int(time.time() * 1000),
                           max_transaction_timeout_ms)

    def wait_for_topics(self, topic_names: Iterable[str], timeout_ms: int = 10000) -> None:
        """Block until every topic has a leader for each partition (after create_topics)."""
        names = list(topic_names)
        deadline = time.monotonic() + timeout_ms / 1000
        self._client.metadata.add_topics(names)
        cluster = self._client.cluster
        while True:
            partitions = {name: cluster.partitions_for_topic(name) for name in names}
            if all(parts and all(cluster.leader_for(TopicPartition(name, p)) is not None
                                 for p in parts) for name, parts in partitions.items()):
                return
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise KafkaTimeoutError(f"topics {sorted(names)} not ready within "
                                        f"{timeout_ms} ms")
            with contextlib.suppress(KafkaTimeoutError):
                metadata = self._client.metadata
                metadata.await_update(metadata.request_update(), min(remaining, 1.0))

    def bootstrap_connected(self) -> bool:
        return bool(self._client.cluster.brokers())

    def api_versions(self) -> dict[int, tuple[int, int]]:
        """The (min, max) version of each api key a broker of the cluster supports, from its
        ApiVersions answer."""
        self._refresh_metadata()
        for broker in sorted(self._client.cluster.brokers()):
            conn = self._client.connection(broker.node_id)
            if conn is not None and conn.is_ready():
                return dict(conn.broker_versions)
        self._call(self._any_node(), ApiKey.METADATA, {"topics": []})  # connects a broker
        return self.api_versions()

    def get_broker_version_data(self, broker_id: int) -> BrokerVersionData:
        """What broker ``broker_id`` serves (its ApiVersions answer), in kafka-python's
        ``BrokerVersionData`` shape."""
        if self._client.cluster.broker(broker_id) is None:
            self._refresh_metadata()
        self._call(broker_id, ApiKey.METADATA, {"topics": []})  # connects and negotiates
        conn = self._client.connection(broker_id)
        return BrokerVersionData(conn.broker_versions if conn is not None else {})

    def metrics(self, raw: bool = False) -> dict[str, Any]:
        """kafka-python's nested shape: ``{"admin-client-metrics": {name: value}}``."""
        if not self._client.config["metrics_enabled"]:
            return {}
        values = client_metrics(self._client)
        return values if raw else {"admin-client-metrics": values}

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _acl_filter(acl_filter: ACLFilter) -> dict[str, Any]:
    pattern = acl_filter.resource_pattern
    return {"resource_type_filter": pattern.resource_type,
            "resource_name_filter": pattern.resource_name,
            "pattern_type_filter": pattern.pattern_type,
            "principal_filter": acl_filter.principal, "host_filter": acl_filter.host,
            "operation": acl_filter.operation, "permission_type": acl_filter.permission_type}


def _error_or_none(code: int, message: str | None) -> Any:
    return error_for_code(code)(message or "") if code else None


def _operation_names(bits: int) -> list[str]:
    """The ACL operations set in an authorized-operations bit field, by name (none when the
    broker did not report them)."""
    if bits < 0:
        return []
    return [op.name for op in ACLOperation if op > ACLOperation.ALL and bits & (1 << op)]


def _member_assignment(protocol_type: str, data: bytes) -> list[TopicPartition]:
    if protocol_type != PROTOCOL_TYPE or not data:
        return []
    try:
        return sorted(assignment_from_wire(data).partitions)
    except (ProtocolDecodeError, KafkaError):
        return []


for _method, _api in UNSENT_ADMIN_APIS.items():
    setattr(AdminClient, _method, _unsent(_method, _api))
del _method, _api

KafkaAdminClient = AdminClient
"""kafka-python's name for :class:`AdminClient`: the same class."""
