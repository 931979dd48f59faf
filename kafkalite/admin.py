"""The AdminClient: topics, partitions, configs and consumer groups, over the Kafka protocol.

Every method blocks until the cluster answers (up to ``request_timeout_ms``) and raises the
broker's error as a typed exception (``TopicAlreadyExistsError``, ``GroupIdNotFoundError``,
...) whose message names the topic or group. Topic changes go to the controller; group
questions go to the group's coordinator.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from types import TracebackType
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.consumer.group import (
    PROTOCOL_TYPE,
    assignment_from_wire,
    fetch_committed_offsets,
    find_coordinator,
)
from kafkalite.consumer.list_offsets import LATEST, list_offsets
from kafkalite.errors import KafkaError, ProtocolDecodeError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import NotControllerError, error_for_code
from kafkalite.structs import OffsetAndMetadata, PartitionMetadata, TopicPartition

_RESOURCE_TYPES = {"topic": 2, "broker": 4}


@dataclass(frozen=True)
class NewTopic:
    """A topic to create; -1 partitions / replication factor mean the broker's defaults."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    config: Mapping[str, str] = field(default_factory=dict)
    replica_assignments: Mapping[int, Sequence[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions (optionally placing the new ones)."""

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True)
class ConfigResource:
    """What ``describe_configs`` looks at: ``("topic", name)`` or ``("broker", "0")``."""

    resource_type: str
    name: str

    def __post_init__(self) -> None:
        if self.resource_type not in _RESOURCE_TYPES:
            raise ValueError(f"resource_type must be 'topic' or 'broker', "
                             f"not {self.resource_type!r}")


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


@dataclass(frozen=True)
class GroupListing:
    group_id: str
    protocol_type: str


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

    # -- topics --------------------------------------------------------------------------------

    def create_topics(self, new_topics: Iterable[NewTopic], timeout_ms: int | None = None,
                      validate_only: bool = False) -> None:
        """Create the topics; the first refusal raises (e.g. TopicAlreadyExistsError)."""
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
        for result in results:
            _raise_for(result["error_code"], f"creating topic {result['name']!r}",
                       result.get("error_message"))
        self._refresh_metadata()

    def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None) -> None:
        results = self._call_controller(ApiKey.DELETE_TOPICS, {
            "topic_names": list(topics),
            "timeout_ms": timeout_ms or int(self._timeout * 1000)}, "responses")
        for result in results:
            _raise_for(result["error_code"], f"deleting topic {result['name']!r}")
        self._refresh_metadata()

    def create_partitions(self, topic_partitions: Mapping[str, NewPartitions],
                          timeout_ms: int | None = None, validate_only: bool = False) -> None:
        topics = [{"name": name, "count": spec.total_count,
                   "assignments": None if spec.new_assignments is None else
                   [{"broker_ids": list(ids)} for ids in spec.new_assignments]}
                  for name, spec in topic_partitions.items()]
        results = self._call_controller(ApiKey.CREATE_PARTITIONS, {
            "topics": topics, "timeout_ms": timeout_ms or int(self._timeout * 1000),
            "validate_only": validate_only}, "results")
        for result in results:
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

    def describe_configs(self, resources: Iterable[ConfigResource],
                         ) -> dict[ConfigResource, dict[str, str | None]]:
        wanted = list(resources)
        body = {"resources": [{"resource_type": _RESOURCE_TYPES[r.resource_type],
                               "resource_name": r.name, "configuration_keys": None}
                              for r in wanted],
                "include_synonyms": False, "include_documentation": False}
        results = self._call(self._any_node(), ApiKey.DESCRIBE_CONFIGS, body)["results"]
        out = {}
        for resource, result in zip(wanted, results, strict=True):
            _raise_for(result["error_code"],
                       f"describing {resource.resource_type} {resource.name!r}",
                       result.get("error_message"))
            out[resource] = {c["name"]: c["value"] for c in result["configs"]}
        return out

    # -- groups --------------------------------------------------------------------------------

    def list_groups(self) -> list[GroupListing]:
        """Every group on every broker (each broker lists the groups it coordinates)."""
        self._refresh_metadata()
        listings = {}
        for broker in sorted(self._client.cluster.brokers()):
            body = self._call(broker.node_id, ApiKey.LIST_GROUPS, {})
            _raise_for(body["error_code"], f"listing groups on broker {broker.node_id}")
            for group in body["groups"]:
                listings[group["group_id"]] = GroupListing(group["group_id"],
                                                           group["protocol_type"])
        return sorted(listings.values(), key=lambda g: g.group_id)

    def describe_groups(self, group_ids: Iterable[str]) -> dict[str, GroupDescription]:
        out = {}
        for group_id in group_ids:
            node = find_coordinator(self._client, group_id, self._deadline())
            body = self._call(node, ApiKey.DESCRIBE_GROUPS,
                              {"groups": [group_id], "include_authorized_operations": False})
            (group,) = body["groups"]
            _raise_for(group["error_code"], f"describing group {group_id!r}")
            members = [MemberDescription(
                m["member_id"], m.get("group_instance_id"), m["client_id"], m["client_host"],
                _member_assignment(group["protocol_type"], m["member_assignment"]))
                for m in group["members"]]
            out[group_id] = GroupDescription(group_id, group["group_state"],
                                             group["protocol_type"], group["protocol_data"],
                                             members)
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

    # -- lifecycle -------------------------------------------------------------------------------

    def close(self) -> None:
        self._client.close()

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()


def _member_assignment(protocol_type: str, data: bytes) -> list[TopicPartition]:
    if protocol_type != PROTOCOL_TYPE or not data:
        return []
    try:
        return sorted(assignment_from_wire(data).partitions)
    except (ProtocolDecodeError, KafkaError):
        return []
