"""Helpers for replication tests on an in-process cluster over the in-memory backend."""

from __future__ import annotations

import functools

import polling

from kafkalite_server import EmbeddedCluster
from kafkalite_server.replication.partition import Partition

until = functools.partial(polling.until, interval=0.05)


def replica(cluster: EmbeddedCluster, broker_id: int, topic: str, index: int = 0) -> Partition:
    return cluster.broker(broker_id).replica_manager.partitions[(topic, index)]


def leader_of(cluster: EmbeddedCluster, topic: str, index: int = 0) -> int:
    for broker in cluster.brokers:
        partition = broker.replica_manager.partitions.get((topic, index))
        if partition is not None and partition.is_leader:
            return broker.node_id
    return -1


def log_bytes(partition: Partition, up_to: int) -> bytes:
    """The partition's segment bytes below offset ``up_to`` (one segment in these tests)."""
    log = partition.log
    end = log.offset_metadata(up_to)
    assert end.segment_base == log.segments[0].base_offset, "expected a single segment"
    path = log.directory / f"{end.segment_base:020d}.log"
    return path.read_bytes()[:end.position]


