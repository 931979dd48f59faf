"""Builders for decoded Metadata response bodies, shaped like Kafka's MetadataResponse (v8)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from kafkalite.client.cluster import ClusterMetadata


def partition_entry(
    index: int, leader: int, replicas: Sequence[int] = (), error: int = 0
) -> dict[str, Any]:
    replicas = list(replicas) or ([leader] if leader >= 0 else [])
    return {
        "error_code": error,
        "partition_index": index,
        "leader_id": leader,
        "leader_epoch": 3,
        "replica_nodes": replicas,
        "isr_nodes": [r for r in replicas if r == leader],
        "offline_replicas": [],
    }


def metadata_body(
    topics: Mapping[str, int | Sequence[int]], brokers: Sequence[int] = (0, 1, 2)
) -> dict[str, Any]:
    """Each topic maps to a partition count (leaders round-robin over ``brokers``) or to the
    leader of each partition (-1 for none)."""
    body_topics = []
    for name, spec in topics.items():
        leaders = (
            [brokers[i % len(brokers)] for i in range(spec)]
            if isinstance(spec, int)
            else list(spec)
        )
        body_topics.append(
            {
                "error_code": 0,
                "name": name,
                "is_internal": name.startswith("__"),
                "partitions": [partition_entry(i, leader) for i, leader in enumerate(leaders)],
            }
        )
    return {
        "throttle_time_ms": 0,
        "brokers": [
            {"node_id": b, "host": f"broker{b}.example", "port": 9092, "rack": f"rack-{b % 2}"}
            for b in brokers
        ],
        "cluster_id": "lite-cluster-1",
        "controller_id": brokers[0],
        "topics": body_topics,
    }


def cluster_with(topics: Mapping[str, int | Sequence[int]]) -> ClusterMetadata:
    cluster = ClusterMetadata()
    cluster.update_from_metadata(metadata_body(topics), now_ms=1_000)
    return cluster
