"""kafkalite leaves the global ``random`` module alone: its brokers' and clients' threads
draw from generators of their own. A program that seeds ``random`` stays reproducible while
they run, and Hypothesis, which warns when the global state moves while it generates a
test's data, stays quiet when a broker or a client runs beside the test."""

from __future__ import annotations

import random
from collections.abc import Callable

from kafkalite import Consumer, Producer
from kafkalite.admin import AdminClient, NewTopic
from kafkalite_server import EmbeddedCluster


def test_a_cluster_and_its_clients_leave_the_global_random_state_alone(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    random.seed(1234)
    state = random.getstate()
    cluster = cluster_factory(num_brokers=3)
    servers = cluster.bootstrap_servers
    with AdminClient(bootstrap_servers=servers) as admin:  # replica placement
        admin.create_topics([NewTopic("placed", 6, 3)])
    with Producer(bootstrap_servers=servers, acks="all") as producer:  # node choice
        for n in range(60):
            producer.send("placed", f"v{n}".encode())
    with Consumer("placed", bootstrap_servers=servers, group_id="readers",
                  auto_offset_reset="earliest") as consumer:  # coordinator lookup
        read = 0
        for _ in range(60):
            read += sum(len(batch) for batch in consumer.poll(timeout_ms=500).values())
            if read >= 60:
                break
        consumer.commit()
    assert read == 60
    assert random.getstate() == state
