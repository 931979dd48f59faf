"""Writes a topic straight into Kafka's ZooKeeper layout, with partition state nodes already
in place, as a cluster looks after replication has caught every replica up: the controller
takes the state nodes it finds instead of creating its own. Tests use it to start from a
partition whose ISR is full but whose leader is not the preferred (first) replica."""

from __future__ import annotations

from collections.abc import Mapping

from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.coordination import Coordination, Create

Partition = tuple[list[int], int, list[int]]
"""(replicas, leader, ISR)."""


def seed_topic(store: Coordination, topic: str, partitions: Mapping[int, Partition]) -> None:
    """One atomic batch: the state nodes land together with the assignment that the
    controller watches for."""
    ops = [Create(layout.topic_path(topic), layout.encode_assignment(
               {index: replicas for index, (replicas, _l, _i) in partitions.items()})),
           Create(f"{layout.topic_path(topic)}/partitions")]
    for index, (_replicas, leader, isr) in partitions.items():
        state = layout.partition_state_path(topic, index)
        ops += [Create(state.rsplit("/", 1)[0]),
                Create(state, layout.LeaderIsr(leader, 0, tuple(isr), 0).encode())]
    ops.append(Create(layout.topic_config_path(topic), layout.encode_topic_config({})))
    store.commit(ops)
