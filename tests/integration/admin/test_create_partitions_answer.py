"""CreatePartitions is answered once the answering broker's metadata has the new
partitions with their leaders (Kafka's DelayedCreatePartitions), as CreateTopics is: a
client that describes the topic right after the answer sees the count it asked for.

A ``kafkalite-server`` process, whose metadata store is written off the event loop (an
embedded cluster's in-memory store answers at once and never showed the gap)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from kafkalite.protocol import ApiKey
from tests.conftest import BrokerProcess

TOPIC = "grown"
ROUNDS = 5


def _partitions(client: Any, topic: str) -> list[dict[str, Any]]:
    body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    (answer,) = client.call(ApiKey.METADATA, 8, body)["topics"]
    return list(answer["partitions"])


def test_the_answer_waits_for_the_new_partitions_leaders(
        tmp_path: Path, wire: Callable[[str], Any]) -> None:
    broker = BrokerProcess(tmp_path / "broker").start()
    try:
        _grow_and_describe(wire(broker.bootstrap_servers))
    finally:
        broker.kill()


def _grow_and_describe(client: Any) -> None:
    created = client.call(ApiKey.CREATE_TOPICS, 4, {
        "topics": [{"name": TOPIC, "num_partitions": 1, "replication_factor": 1,
                    "assignments": [], "configs": []}],
        "timeout_ms": 10_000, "validate_only": False})
    assert created["topics"][0]["error_code"] == 0, created
    for count in range(2, 2 + ROUNDS):
        answer = client.call(ApiKey.CREATE_PARTITIONS, 1, {
            "topics": [{"name": TOPIC, "count": count, "assignments": None}],
            "timeout_ms": 10_000, "validate_only": False})
        assert answer["results"][0]["error_code"] == 0, answer
        partitions = _partitions(client, TOPIC)
        assert len(partitions) == count, f"{len(partitions)} partitions described, not {count}"
        assert all(p["leader_id"] >= 0 for p in partitions), partitions
