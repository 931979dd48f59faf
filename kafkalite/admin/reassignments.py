"""Partition reassignments (KIP-455) on the controller: AlterPartitionReassignments (45)
starts or cancels moves, ListPartitionReassignments (46) lists those under way."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import Controller
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import BrokerResponseError, error_for_code
from kafkalite.structs import TopicPartition

Outcomes = dict[TopicPartition, BrokerResponseError | None]
"""Each partition's answer: None (the move, or its cancellation, is under way) or the
error."""
Ongoing = dict[TopicPartition, dict[str, list[int]]]
"""kafka-python's shape: ``{"replicas", "adding_replicas", "removing_replicas"}``."""


class AlterPartitionReassignments(AdminApiHandler[str, Outcomes]):
    """One request for every partition (the one key is ``CLUSTER``); a target of None
    cancels that partition's move."""

    api_key = ApiKey.ALTER_PARTITION_REASSIGNMENTS

    def __init__(self, targets: Mapping[TopicPartition, Sequence[int] | None],
                 timeout_ms: int) -> None:
        super().__init__(Controller())
        self.targets = targets
        self.timeout_ms = timeout_ms

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for partition, replicas in self.targets.items():
            by_topic.setdefault(partition.topic, []).append({
                "partition_index": partition.partition,
                "replicas": None if replicas is None else list(replicas)})
        return Request(self.api_key, {"timeout_ms": self.timeout_ms, "topics": [
            {"name": topic, "partitions": parts} for topic, parts in by_topic.items()]})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, Outcomes]:
        (key,) = keys
        outcome: ApiResult[str, Outcomes] = ApiResult()
        if outcome.error(key, body["error_code"], "reassigning partitions"):
            return outcome
        results: Outcomes = {}
        for topic in body["responses"]:
            for partition in topic["partitions"]:
                code = partition["error_code"]
                name = f"{topic['name']}-{partition['partition_index']}"
                results[TopicPartition(topic["name"], partition["partition_index"])] = \
                    None if code == 0 else error_for_code(code)(
                        f"reassigning {name}: {partition['error_message']}")
        outcome.complete(key, results)
        return outcome


class ListPartitionReassignments(AdminApiHandler[str, Ongoing]):
    """The moves under way, of ``partitions`` (None: of every partition)."""

    api_key = ApiKey.LIST_PARTITION_REASSIGNMENTS

    def __init__(self, partitions: Mapping[str, Sequence[int]] | None,
                 timeout_ms: int) -> None:
        super().__init__(Controller())
        self.partitions = partitions
        self.timeout_ms = timeout_ms

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {"timeout_ms": self.timeout_ms, "topics": None
                                      if self.partitions is None else [
                                          {"name": topic, "partition_indexes": list(parts)}
                                          for topic, parts in self.partitions.items()]})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, Ongoing]:
        (key,) = keys
        outcome: ApiResult[str, Ongoing] = ApiResult()
        if outcome.error(key, body["error_code"], "listing reassignments"):
            return outcome
        outcome.complete(key, {
            TopicPartition(topic["name"], partition["partition_index"]): {
                "replicas": list(partition["replicas"]),
                "adding_replicas": list(partition["adding_replicas"]),
                "removing_replicas": list(partition["removing_replicas"])}
            for topic in body["topics"] for partition in topic["partitions"]})
        return outcome
