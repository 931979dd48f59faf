"""MetadataRefresher: which answer a waiter may take as its own."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.future import Future
from kafkalite.client.metadata import MetadataRefresher
from kafkalite.errors import KafkaTimeoutError
from tests.unit.client.metadata_bodies import metadata_body


class ScriptedClient:
    """The slice of KafkaClient the refresher uses; requests wait for the test to answer."""

    def __init__(self) -> None:
        self.sent: list[tuple[dict[str, Any], Future[dict[str, Any]]]] = []

    def start(self) -> None: ...

    def wakeup(self) -> None: ...

    def least_loaded_node(self) -> int:
        return 0

    def ready(self, node: int) -> bool:
        return True

    def api_version(self, node: int, api_key: int) -> int:
        return 8

    def send(self, node: int, api_key: int, body: dict[str, Any]) -> Future[dict[str, Any]]:
        future: Future[dict[str, Any]] = Future()
        self.sent.append((body, future))
        return future

    def timeout_error(self, message: str) -> KafkaTimeoutError:
        return KafkaTimeoutError(message)


def make_refresher() -> tuple[MetadataRefresher, ScriptedClient, ClusterMetadata]:
    client = ScriptedClient()
    cluster = ClusterMetadata()
    refresher = MetadataRefresher(client, cluster, metadata_max_age_ms=300_000,  # type: ignore[arg-type]
                                  retry_backoff_ms=0, allow_auto_topic_creation=False)
    return refresher, client, cluster


def test_an_answer_to_a_request_sent_before_the_ask_does_not_count() -> None:
    refresher, client, cluster = make_refresher()
    refresher.add_topics(["orders"])
    refresher.maybe_refresh()
    (first_body, first), = client.sent
    assert first_body["topics"] == [{"name": "orders"}]

    refresher.all_topics = True  # what Consumer.topics() does, then waits
    ticket = refresher.request_update()
    first.success(metadata_body({"orders": 1}))
    with pytest.raises(KafkaTimeoutError):  # the in-flight answer did not list every topic
        refresher.await_update(ticket, 0)

    refresher.maybe_refresh()
    second_body, second = client.sent[1]
    assert second_body["topics"] is None  # all topics
    second.success(metadata_body({"orders": 1, "payments": 2}))
    refresher.await_update(ticket, 0)
    assert cluster.topics() == {"orders", "payments"}


def test_with_nothing_in_flight_the_next_answer_counts() -> None:
    refresher, client, cluster = make_refresher()
    ticket = refresher.request_update()
    with pytest.raises(KafkaTimeoutError):
        refresher.await_update(ticket, 0)
    refresher.maybe_refresh()
    client.sent[0][1].success(metadata_body({"orders": 1}))
    refresher.await_update(ticket, 0)
    assert cluster.topics() == {"orders"}
