"""The cluster and its brokers: DescribeCluster (any broker) and DescribeLogDirs (each
broker), in kafka-python 3's shapes.
"""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from typing import Any

from kafkalite.admin.groups import operation_names
from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import AnyBroker, EachBroker
from kafkalite.protocol import ApiKey


class UpdateFeatureType(enum.IntEnum):
    """UpdateFeatures' upgrade types (KIP-584); kafkalite does not send UpdateFeatures yet."""

    UNKNOWN = 0
    UPGRADE = 1
    SAFE_DOWNGRADE = 2
    UNSAFE_DOWNGRADE = 3


class DescribeCluster(AdminApiHandler[str, dict[str, Any]]):
    """``{"cluster_id", "controller_id", "brokers": [{"broker_id", "host", "port", "rack"}],
    "authorized_operations": [operation names]}`` (the one key is ``CLUSTER``)."""

    api_key = ApiKey.DESCRIBE_CLUSTER

    def __init__(self) -> None:
        super().__init__(AnyBroker())

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {"include_cluster_authorized_operations": True})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, dict[str, Any]]:
        (key,) = keys
        outcome: ApiResult[str, dict[str, Any]] = ApiResult()
        if not outcome.error(key, body["error_code"], "describing the cluster",
                             body["error_message"]):
            outcome.complete(key, {
                "cluster_id": body["cluster_id"], "controller_id": body["controller_id"],
                "brokers": [dict(b) for b in body["brokers"]],
                "authorized_operations": operation_names(
                    body["cluster_authorized_operations"])})
        return outcome


class DescribeLogDirs(AdminApiHandler[int, list[dict[str, Any]]]):
    """Each broker's log directories (the keys are broker ids): ``[{"log_dir",
    "error_code", "topics": [{"name", "partitions": [...]}], "total_bytes",
    "usable_bytes"}]``."""

    api_key = ApiKey.DESCRIBE_LOG_DIRS

    def __init__(self, partitions: Mapping[str, Sequence[int]]) -> None:
        super().__init__(EachBroker())
        self.partitions = partitions

    def build_request(self, node: int, keys: Sequence[int]) -> Request:
        return Request(self.api_key, {"topics": [{"topic": t, "partitions": list(p)}
                                                 for t, p in self.partitions.items()]})

    def handle_response(self, node: int, keys: Sequence[int], body: Mapping[str, Any],
                        ) -> ApiResult[int, list[dict[str, Any]]]:
        outcome: ApiResult[int, list[dict[str, Any]]] = ApiResult()
        if not outcome.error(node, body.get("error_code", 0),
                             f"describing the log dirs of broker {node}"):
            outcome.complete(node, [dict(r) for r in body["results"]])
        return outcome
