"""DescribeTopicPartitions (75), answered by any broker, in kafka-python 3's shape: one page
of topics and partitions and the cursor of the next page (None when nothing is left).

Errors stay in the answer (each topic's ``error_code``, as kafka-python returns them): a
refused or unknown topic is one entry of the page, not a failure of the whole call. Empty
ELR lists read as None, as kafka-python reads them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import CLUSTER, AnyBroker
from kafkalite.protocol import ApiKey

Cursor = Mapping[str, Any]
"""``{"topic_name": str, "partition_index": int}``."""


class DescribeTopicPartitions(AdminApiHandler[str, dict[str, Any]]):
    """``{"topics": [...], "next_cursor": None | {...}}`` (the one key is ``CLUSTER``)."""

    api_key = ApiKey.DESCRIBE_TOPIC_PARTITIONS

    def __init__(self, topics: Sequence[str], response_partition_limit: int,
                 cursor: Cursor | None) -> None:
        super().__init__(AnyBroker())
        self.topics = topics
        self.response_partition_limit = response_partition_limit
        self.cursor = cursor

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        cursor = None if self.cursor is None else {
            "topic_name": self.cursor["topic_name"],
            "partition_index": self.cursor["partition_index"]}
        return Request(self.api_key, {"topics": [{"name": name} for name in self.topics],
                                      "response_partition_limit":
                                          self.response_partition_limit,
                                      "cursor": cursor})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, dict[str, Any]]:
        outcome: ApiResult[str, dict[str, Any]] = ApiResult()
        outcome.complete(CLUSTER, {
            "topics": [{**topic, "partitions": [_partition(p) for p in topic["partitions"]]}
                       for topic in body["topics"]],
            "next_cursor": None if body["next_cursor"] is None else dict(body["next_cursor"])})
        return outcome


def _partition(partition: Mapping[str, Any]) -> dict[str, Any]:
    return {**partition,
            "eligible_leader_replicas": partition["eligible_leader_replicas"] or None,
            "last_known_elr": partition["last_known_elr"] or None}
