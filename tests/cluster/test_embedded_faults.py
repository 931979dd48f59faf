"""EmbeddedCluster under faults: a restarted broker leads its
partitions again, an expired session moves the controller, and a paused controller that
lost its session is fenced by the new epoch, then comes back as a follower."""

from __future__ import annotations

import functools
import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest
from polling import until

from kafkalite.admin import AdminClient, NewTopic
from kafkalite.consumer import Consumer
from kafkalite.producer import Producer
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.coordination import CoordinationError, NoNodeError

WAIT_S = 20


_until = functools.partial(until, timeout=WAIT_S, interval=0.02)


@pytest.fixture
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=3, config={
            "zookeeper.session.timeout.ms": "1000",
            "controlled.shutdown.retry.backoff.ms": "50",
            "controlled.shutdown.max.retries": "1"}) as started:
        yield started


def _read(cluster: EmbeddedCluster, path: str) -> bytes:
    assert cluster.ensemble is not None
    store = cluster.ensemble.connect()
    try:
        return store.get(path)[0]
    finally:
        store.close()


def _controller(cluster: EmbeddedCluster) -> tuple[int, int] | None:
    """(/controller's broker id, /controller_epoch); None in the moment between one
    controller's node going and the next one's being created."""
    try:
        return (json.loads(_read(cluster, layout.CONTROLLER))["brokerid"],
                int(_read(cluster, layout.CONTROLLER_EPOCH)))
    except NoNodeError:
        return None


def _registered(cluster: EmbeddedCluster) -> set[int]:
    assert cluster.ensemble is not None
    store = cluster.ensemble.connect()
    try:
        return {int(name) for name in store.children(layout.BROKER_IDS)}
    finally:
        store.close()


def test_a_restarted_broker_leads_its_partitions_again(cluster):
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("back", 3, 1)], wait_for_metadata=True)
    with Producer(bootstrap_servers=cluster.bootstrap_servers) as producer:
        for i in range(30):
            producer.send("back", value=b"%d" % i, partition=i % 3)
        producer.flush()
    owner = cluster.broker(0).metadata_cache.partition("back", 1).leader
    epoch = cluster.broker(0).metadata_cache.partition("back", 1).leader_epoch
    cluster.stop_broker(owner)
    survivor = next(b for b in cluster.brokers).node_id
    _until(lambda: cluster.broker(survivor).metadata_cache.partition("back", 1).leader == -1,
           "the partition offline")
    cluster.restart_broker(owner)
    state = _until(lambda: (s := cluster.broker(survivor).metadata_cache.partition("back", 1))
                   and s.leader == owner and s, "its leader back")
    assert state.leader_epoch > epoch
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers, auto_offset_reset="earliest",
                        consumer_timeout_ms=5000)
    consumer.assign([TopicPartition("back", p) for p in range(3)])
    values = sorted(int(r.value) for r in consumer)
    consumer.close()
    assert values == list(range(30))


def test_an_expired_session_moves_the_controller_to_a_higher_epoch(cluster):
    first, epoch = _until(lambda: _controller(cluster), "a controller")
    cluster.expire_session(first)
    new, new_epoch = _until(lambda: (c := _controller(cluster)) and c[0] != first and c,
                            "a new controller")
    assert new_epoch > epoch
    _until(lambda: _registered(cluster) == {0, 1, 2}, f"broker {first} registered again")
    assert cluster.controller_id == new
    # One clean stop after another, the controller moving each time. (Stopping them all
    # at once from here can hang on a connection task that swallows its cancellation.)
    for broker_id in (first, new):
        cluster.stop_broker(broker_id)


def test_a_paused_controller_is_fenced_and_comes_back_as_a_follower(cluster):
    with AdminClient(cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic("spread", 3, 3)], wait_for_metadata=True)
    first, epoch = _until(lambda: _controller(cluster), "a controller")
    membership = cluster.broker(first).membership
    stale = membership.active_controller
    session = membership.require_store()
    cluster.call(_async(session.pause))
    new, new_epoch = _until(lambda: (c := _controller(cluster)) and c[0] != first and c,
                            "a controller elected past the session timeout")
    assert new_epoch > epoch
    # Still believing it is the controller, the paused one can change nothing.
    with pytest.raises(CoordinationError):
        cluster.call(_async(lambda: stale.controlled_shutdown(new)))
    cluster.call(_async(session.resume))
    _until(lambda: membership.active_controller is None and _registered(cluster) == {0, 1, 2},
           "the old controller back as a follower")
    assert _controller(cluster) == (new, new_epoch)


def _async(action: Callable[[], Any]) -> Any:
    async def run() -> Any:
        return action()
    return run()
