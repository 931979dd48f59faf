"""aiokafka's admin API (``aiokafka.admin``) on the event loop.

:class:`AIOKafkaAdminClient` takes aiokafka's parameters and returns aiokafka's shapes:
protocol-style answers (``resp.topic_errors``, ``resp.to_object()``: see
:mod:`kafkalite.aio.admin_responses`), metadata dicts, ``{tp: low_watermark}``. Underneath
it is the threaded :class:`~kafkalite.admin.AdminClient`'s machinery: the same API handlers
build every request and read every answer, and the same driver routes each key to the
controller, a coordinator or a partition leader, following moves and retrying within
``request_timeout_ms``; :class:`~kafkalite.aio.admin_runner.AIOAdminRunner` awaits them on
the loop. A refusal is the SDK's typed error (``TopicAuthorizationFailedError``, ...);
where aiokafka hands back an answer carrying error codes (``create_topics``,
``delete_topics``, ``alter_configs``) so does this client.

``NewTopic``, ``NewPartitions`` and ``ConfigResource`` are the SDK's own classes (they take
aiokafka's arguments); ``aiokafka.admin.config_resource``'s names are importable from here.
"""

from __future__ import annotations

from collections.abc import Hashable, Iterable, Mapping, Sequence
from typing import Any, TypeVar

from kafkalite.admin.configs import (
    AlterConfigs,
    ConfigResource,
    DescribeConfigs,
    ResourceKey,
    resource_keys,
)
from kafkalite.admin.groups import DescribeGroups, GroupDescription, ListGroups
from kafkalite.admin.handler import AdminApiHandler
from kafkalite.admin.lookup import Coordinator
from kafkalite.admin.offsets import DeleteRecords, FetchGroupOffsets, raise_refusals
from kafkalite.admin.topics import (
    CreatePartitions,
    CreateTopics,
    DeleteTopics,
    NewPartitions,
    NewTopic,
    NewTopics,
    PartitionCounts,
    as_new_partitions,
    as_new_topics,
)
from kafkalite.aio.admin_responses import (
    AlterConfigsResponse_v1,
    CreatePartitionsResponse_v1,
    CreateTopicsResponse_v3,
    DeleteTopicsResponse_v3,
    DescribeConfigsResponse_v2,
    DescribeGroupsResponse_v2,
)
from kafkalite.aio.admin_runner import AIOAdminRunner
from kafkalite.aio.client import AIOClient, security_settings
from kafkalite.aio.structs import OffsetAndMetadata
from kafkalite.protocol.config_codes import ConfigResourceType
from kafkalite.structs import TopicPartition

__all__ = ["AIOKafkaAdminClient", "ConfigResource", "ConfigResourceType", "NewPartitions",
           "NewTopic", "RecordsToDelete"]

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

THROTTLE_TIME_MS = 0
"""The ``throttle_time_ms`` of a returned answer: an answer may gather several brokers'
replies (and retries), so no one broker's throttle applies to it."""


class RecordsToDelete:
    """``delete_records``' value for a partition: delete every record before
    ``before_offset`` (-1: up to the high watermark)."""

    def __init__(self, before_offset: int) -> None:
        self.before_offset = before_offset

    def __repr__(self) -> str:
        return f"RecordsToDelete(before_offset={self.before_offset})"


class AIOKafkaAdminClient:
    """Administers a Kafka cluster from asyncio (aiokafka's class). ``request_timeout_ms``
    bounds each call, retries included."""

    def __init__(
        self, *, loop: Any = None, bootstrap_servers: str | Iterable[str] = "localhost",
        client_id: str = "kafkalite-aio-admin", request_timeout_ms: int = 40000,
        connections_max_idle_ms: int = 540000, retry_backoff_ms: int = 100,
        metadata_max_age_ms: int = 300000, security_protocol: str = "PLAINTEXT",
        ssl_context: Any = None, api_version: Any = None, sasl_mechanism: str = "PLAIN",
        sasl_plain_username: str | None = None, sasl_plain_password: str | None = None,
        sasl_kerberos_service_name: str = "kafka", sasl_kerberos_domain_name: str | None = None,
        sasl_oauth_token_provider: Any = None,
    ) -> None:
        self._client = AIOClient(
            bootstrap_servers=bootstrap_servers, client_id=client_id,
            request_timeout_ms=request_timeout_ms, metadata_max_age_ms=metadata_max_age_ms,
            retry_backoff_ms=retry_backoff_ms,
            security=security_settings(security_protocol, ssl_context, sasl_mechanism,
                                       sasl_plain_username, sasl_plain_password,
                                       sasl_oauth_token_provider),
            allow_auto_topic_creation=False)
        self._client.all_topics = True
        self._request_timeout_ms = request_timeout_ms
        self._runner = AIOAdminRunner(self._client, request_timeout_ms / 1000, retry_backoff_ms)
        self._started = False

    async def start(self) -> None:
        """Connect and read the cluster's metadata (again: a no-op)."""
        if not self._started:
            await self._client.bootstrap()
            self._started = True

    async def close(self) -> None:
        await self._client.close()
        self._started = False

    async def _run(self, handler: AdminApiHandler[K, V], keys: Iterable[K]) -> dict[K, V]:
        return await self._runner.run(handler, keys)

    def _timeout_ms(self, timeout_ms: int | None) -> int:
        return timeout_ms or self._request_timeout_ms

    # -- topics and partitions -------------------------------------------------------------

    async def create_topics(self, new_topics: NewTopics, timeout_ms: int | None = None,
                            validate_only: bool = False) -> CreateTopicsResponse_v3:
        """CreateTopics on the controller; each topic's error code (0: created) is in
        ``topic_errors`` as ``(topic, error_code, error_message)``."""
        topics = as_new_topics(new_topics)
        results = await self._run(CreateTopics(topics, self._timeout_ms(timeout_ms),
                                               validate_only, raise_errors=False),
                                  [t.name for t in topics])
        return CreateTopicsResponse_v3(THROTTLE_TIME_MS, [
            (r["name"], r["error_code"], r["error_message"]) for r in results.values()])

    async def delete_topics(self, topics: Iterable[str], timeout_ms: int | None = None,
                            ) -> DeleteTopicsResponse_v3:
        """DeleteTopics on the controller: ``topic_error_codes`` as ``(topic, error_code)``."""
        results = await self._run(DeleteTopics(self._timeout_ms(timeout_ms), raise_errors=False),
                                  list(dict.fromkeys(topics)))
        return DeleteTopicsResponse_v3(THROTTLE_TIME_MS, [
            (r["name"], r["error_code"]) for r in results.values()])

    async def create_partitions(self, topic_partitions: PartitionCounts,
                                timeout_ms: int | None = None, validate_only: bool = False,
                                ) -> CreatePartitionsResponse_v1:
        """Grow topics to ``NewPartitions.total_count`` partitions; a refusal raises its
        typed error naming the topic."""
        counts = as_new_partitions(topic_partitions)
        results = await self._run(CreatePartitions(counts, self._timeout_ms(timeout_ms),
                                                   validate_only), list(counts))
        return CreatePartitionsResponse_v1(THROTTLE_TIME_MS, [
            (r["name"], r["error_code"], r["error_message"]) for r in results.values()])

    async def list_topics(self) -> list[str]:
        """Every topic's name (internal ones too), in the broker's order."""
        body = await self._client.fetch_metadata(None)
        return [topic["name"] for topic in body["topics"]]

    async def describe_topics(self, topics: Sequence[str] | None = None,
                              ) -> list[dict[str, Any]]:
        """Metadata of ``topics`` (None: all) as aiokafka's dicts: ``{"error_code",
        "topic", "is_internal", "partitions": [{"error_code", "partition", "leader",
        "replicas", "isr", "offline_replicas"}]}``."""
        body = await self._client.fetch_metadata(None if topics is None else list(topics))
        return [{"error_code": t["error_code"], "topic": t["name"],
                 "is_internal": t["is_internal"],
                 "partitions": [{"error_code": p["error_code"], "partition": p["partition_index"],
                                 "leader": p["leader_id"], "replicas": list(p["replica_nodes"]),
                                 "isr": list(p["isr_nodes"]),
                                 "offline_replicas": list(p["offline_replicas"])}
                                for p in t["partitions"]]}
                for t in body["topics"]]

    async def describe_cluster(self) -> dict[str, Any]:
        """``{"throttle_time_ms", "brokers": [{"node_id", "host", "port", "rack"}],
        "cluster_id", "controller_id"}`` from a Metadata answer, as aiokafka's."""
        body = await self._client.fetch_metadata([])
        return {"throttle_time_ms": body["throttle_time_ms"],
                "brokers": [{"node_id": b["node_id"], "host": b["host"], "port": b["port"],
                             "rack": b["rack"]} for b in body["brokers"]],
                "cluster_id": body["cluster_id"], "controller_id": body["controller_id"]}

    # -- configs ---------------------------------------------------------------------------

    async def describe_configs(self, config_resources: Sequence[ConfigResource],
                               include_synonyms: bool = False,
                               ) -> list[DescribeConfigsResponse_v2]:
        """One answer per broker asked about its own configs, then one for the topics (as
        aiokafka's); a resource's ``configs`` keys, if given, select its entries. A refused
        resource raises its typed error naming it."""
        keys = resource_keys(list(config_resources))
        described = await self._run(DescribeConfigs(include_synonyms), keys)
        return [DescribeConfigsResponse_v2(THROTTLE_TIME_MS, [
            (0, None, int(resource.resource_type), resource.name,
             [(c["name"], c["value"], c["read_only"], c["config_source"], c["is_sensitive"],
               [(s["name"], s["value"], s["source"]) for s in c.get("synonyms") or ()])
              for c in described[(index, resource)]
              if resource.configs is None or c["name"] in resource.configs])
            for index, resource in group]) for group in _by_broker(keys, topics_last=True)]

    async def alter_configs(self, config_resources: Sequence[ConfigResource],
                            ) -> list[AlterConfigsResponse_v1]:
        """AlterConfigs (keys a resource is not given go back to their defaults, as the
        request defines): one answer for the topics, then one per broker, each resource as
        ``(error_code, error_message, resource_type, resource_name)``."""
        keys = resource_keys(list(config_resources))
        outcomes = await self._run(AlterConfigs(incremental=False, validate_only=False), keys)
        return [AlterConfigsResponse_v1(THROTTLE_TIME_MS, [
            (outcomes[key].error_code, outcomes[key].error_message,
             int(key[1].resource_type), key[1].name) for key in group])
            for group in _by_broker(keys, topics_last=False)]

    # -- groups ----------------------------------------------------------------------------

    async def find_coordinator(self, group_id: str, coordinator_type: int = 0) -> int:
        """The id of the broker coordinating ``group_id`` (``coordinator_type`` 1: a
        transactional id); a broker that cannot say raises its typed error."""
        strategy = Coordinator(coordinator_type)
        request = strategy.build_request(group_id)
        node = await self._client.any_node()
        body = await self._client.send(node, request.api_key, request.body)
        found = strategy.handle_response(group_id, body)
        if group_id in found.mapped:
            return found.mapped[group_id]
        raise (found.failed.get(group_id) or found.unmapped[group_id])

    async def describe_consumer_groups(self, group_ids: Sequence[str],
                                       group_coordinator_id: int | None = None,
                                       include_authorized_operations: bool = False,
                                       ) -> list[DescribeGroupsResponse_v2]:
        """DescribeGroups, one answer per coordinator, with each member's metadata and
        assignment as the bytes the broker sent; a refused group raises its typed error."""
        by_node: dict[int, list[str]] = {}
        for group_id in dict.fromkeys(group_ids):
            node = group_coordinator_id if group_coordinator_id is not None else \
                await self.find_coordinator(group_id)
            by_node.setdefault(node, []).append(group_id)
        answers = []
        for node, groups in by_node.items():
            described = await self._run(DescribeGroups(node, include_authorized_operations),
                                        groups)
            answers.append(DescribeGroupsResponse_v2(THROTTLE_TIME_MS, [
                _group_row(described[g]) for g in groups]))
        return answers

    async def list_consumer_groups(self, broker_ids: Sequence[int] | None = None,
                                   ) -> list[tuple[str, str]]:
        """``(group_id, protocol_type)`` of the groups each broker (or each of
        ``broker_ids``) coordinates, by group id."""
        if broker_ids is None:
            body = await self._client.fetch_metadata([])
            broker_ids = [b["node_id"] for b in body["brokers"]]
        found = await self._run(ListGroups(), list(broker_ids))
        groups = {(g.group_id, g.protocol_type) for listings in found.values() for g in listings}
        return sorted(groups)

    async def list_consumer_group_offsets(self, group_id: str,
                                          group_coordinator_id: int | None = None,
                                          partitions: Sequence[TopicPartition] | None = None,
                                          ) -> dict[TopicPartition, OffsetAndMetadata]:
        """The group's committed offsets (all, or of ``partitions``: one of them without a
        commit has offset -1, as in aiokafka)."""
        wanted = list(partitions) if partitions else None
        found = (await self._run(FetchGroupOffsets(wanted, group_coordinator_id),
                                 [group_id]))[group_id]
        offsets = {tp: OffsetAndMetadata(meta.offset, meta.metadata or "")
                   for tp, meta in found.items()}
        for tp in wanted or ():
            offsets.setdefault(tp, OffsetAndMetadata(-1, ""))
        return offsets

    # -- records ---------------------------------------------------------------------------

    async def delete_records(self, records_to_delete: Mapping[TopicPartition,
                                                              RecordsToDelete | int],
                             timeout_ms: int | None = None) -> dict[TopicPartition, int]:
        """Delete the records before each ``RecordsToDelete.before_offset`` (DeleteRecords
        to each partition's leader): ``{tp: new low watermark}``; a refused partition
        raises its typed error naming it."""
        offsets = {tp: spec if isinstance(spec, int) else spec.before_offset
                   for tp, spec in records_to_delete.items()}
        timeout = self._timeout_ms(timeout_ms)
        results = await self._runner.run(DeleteRecords(offsets, timeout), list(offsets),
                                         timeout / 1000)
        raise_refusals(results)
        return {tp: result["low_watermark"] for tp, result in results.items()}


def _by_broker(keys: list[ResourceKey], *, topics_last: bool) -> list[list[ResourceKey]]:
    """The resources as aiokafka groups them into requests: each broker's own resources
    together, and the others (topics) in one group that aiokafka's ``describe_configs``
    puts last (and leaves out when empty) and ``alter_configs`` puts first (always)."""
    brokers: dict[int, list[ResourceKey]] = {}
    others: list[ResourceKey] = []
    for key in keys:
        node = key[1].broker_id
        if node is None:
            others.append(key)
        else:
            brokers.setdefault(node, []).append(key)
    if topics_last:
        return [*brokers.values(), *([others] if others else [])]
    return [others, *brokers.values()]


def _group_row(group: GroupDescription) -> tuple[Any, ...]:
    return (0, group.group_id, group.state, group.protocol_type, group.protocol,
            [(m.member_id, m.client_id, m.client_host, m.raw_metadata, m.raw_assignment)
             for m in group.members])
