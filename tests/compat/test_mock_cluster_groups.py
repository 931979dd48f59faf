"""Two of our consumers in one group on librdkafka's mock cluster settle in one generation.

The mock closes a sync round as soon as the leader's SyncGroup arrives; a follower whose
SyncGroup comes later is refused (with an answer whose null assignment does not even decode),
rejoins, and so starts a new rebalance lasting ``session_timeout_ms`` - 1 s, in which the same
race runs again. Members polled in turn from one thread used to lose it often enough to
rebalance in a loop. Followers now sync from the I/O thread as soon as JoinGroup is answered,
and the leader refreshes metadata before it assigns, so the followers are first.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import confluent_kafka
import pytest

from kafkalite import Consumer

pytestmark = pytest.mark.compat

ROUNDS = 5
TOPIC = "mock-groups"


@pytest.fixture(scope="module")
def bootstrap(mock_cluster_factory: Callable[[int], str]) -> str:
    servers = mock_cluster_factory(3)
    producer = confluent_kafka.Producer({"bootstrap.servers": servers, "log_level": 3})
    for partition in range(4):  # the mock auto-creates topics with four partitions
        producer.produce(TOPIC, b"x", partition=partition)
    assert producer.flush(10) == 0
    return servers


@pytest.mark.parametrize("round_", range(ROUNDS))
def test_two_members_settle_in_their_first_generation(bootstrap: str, round_: int) -> None:
    members = [Consumer(TOPIC, bootstrap_servers=bootstrap, group_id=f"settle-{round_}",
                        auto_offset_reset="earliest", session_timeout_ms=6000,
                        heartbeat_interval_ms=300) for _ in range(2)]
    generations: set[int] = set()
    try:
        deadline = time.monotonic() + 45
        while not all(len(m.assignment()) == 2 for m in members):
            assert time.monotonic() < deadline, f"the group did not settle: {generations}"
            for member in members:  # in turn, the leader (first to join) first
                member.poll(timeout_ms=20)
                if member.generation_id >= 0:
                    generations.add(member.generation_id)
        assert len(generations) == 1, f"the group rebalanced again: generations {generations}"
        assert {m.generation_id for m in members} == generations
    finally:
        for member in members:
            member.close(timeout=2)
