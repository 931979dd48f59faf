"""Leader elections: ElectLeaders (KIP-460) on the controller, preferred or unclean."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import Controller
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import BrokerResponseError, ElectionNotNeededError, error_for_code
from kafkalite.protocol.schemas.elections import ElectionType
from kafkalite.structs import TopicPartition

Outcomes = dict[TopicPartition, BrokerResponseError | None]
"""Each partition's election: None (elected) or the error (ElectionNotNeededError when its
leader already was the one asked for)."""


class ElectLeaders(AdminApiHandler[str, Outcomes]):
    """One request for every partition asked (``partitions`` None: all of them); the one
    key is ``CLUSTER``."""

    api_key = ApiKey.ELECT_LEADERS

    def __init__(self, election_type: ElectionType | int,
                 partitions: Mapping[str, Sequence[int]] | None, timeout_ms: int) -> None:
        super().__init__(Controller())
        self.election_type = int(election_type)
        self.partitions = partitions
        self.timeout_ms = timeout_ms

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {
            "election_type": self.election_type,
            "topic_partitions": None if self.partitions is None else [
                {"topic": topic, "partitions": list(parts)}
                for topic, parts in self.partitions.items()],
            "timeout_ms": self.timeout_ms})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, Outcomes]:
        (key,) = keys
        outcome: ApiResult[str, Outcomes] = ApiResult()
        if outcome.error(key, body["error_code"], "electing leaders"):
            return outcome
        results: Outcomes = {}
        for topic in body["replica_election_results"]:
            for partition in topic["partition_result"]:
                code = partition["error_code"]
                results[TopicPartition(topic["topic"], partition["partition_id"])] = \
                    None if code == 0 else error_for_code(code)(
                        f"electing a leader for {topic['topic']}-{partition['partition_id']}: "
                        f"{partition['error_message']}")
        outcome.complete(key, results)
        return outcome


def first_real_failure(outcomes: Iterable[BrokerResponseError | None],
                       ) -> BrokerResponseError | None:
    """The first error other than ElectionNotNeededError (a leader that already led)."""
    return next((e for e in outcomes
                 if e is not None and not isinstance(e, ElectionNotNeededError)), None)
