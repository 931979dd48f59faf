"""A Produce waiting for its ISR does not hold back the next request of its connection.

Two ``kafkalite-server`` processes over a real ZooKeeper; ``slow`` has replicas [1, 2],
``fast`` only [1]. With broker 2 paused (SIGSTOP, inside its session and
``replica.lag.time.max.ms``, so it stays in the ISR), an acks=all Produce to ``slow``
waits. A Produce to ``fast`` sent right behind it on the same connection is appended at
once (another connection sees it), while the answers still come in request order: ``slow``
first, once broker 2 is resumed and has the record, then ``fast``. Before, the second
Produce was read only after the first was answered: a client with many partitions on one
broker waited one follower round trip per request in turn.
"""

from __future__ import annotations

import functools
import signal
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from polling import until

from kafkalite.protocol import ApiKey

_until = functools.partial(until, timeout=30, tolerate=(OSError, KeyError, IndexError))


@pytest.fixture
def brokers(tmp_path: Path, zookeeper: Any, chroot: str,
            broker_process_type: type) -> Iterator[dict[int, Any]]:
    started = {b: broker_process_type(tmp_path / f"broker-{b}", [
        "--set", f"broker.id={b}", "--set", f"zookeeper.connect={zookeeper.connect}{chroot}",
        "--set", "zookeeper.session.timeout.ms=20000",
        "--set", "replica.lag.time.max.ms=60000"]).start() for b in (1, 2)}
    try:
        yield started
    finally:
        for broker in started.values():
            if broker.process is not None:
                broker.process.send_signal(signal.SIGCONT)
            broker.kill()


def _create(wire: Any, bootstrap: str, topic: str, replicas: list[int]) -> None:
    body = {"topics": [{"name": topic, "num_partitions": -1, "replication_factor": -1,
                        "assignments": [{"partition_index": 0, "broker_ids": replicas}],
                        "configs": []}], "timeout_ms": 10000, "validate_only": False}
    answer = wire(bootstrap).call(ApiKey.CREATE_TOPICS, 4, body)
    assert answer["topics"][0]["error_code"] == 0, answer


def _isr(wire: Any, bootstrap: str, topic: str) -> list[int]:
    body = {"topics": [{"name": topic}], "allow_auto_topic_creation": False}
    partition = wire(bootstrap).call(ApiKey.METADATA, 8, body)["topics"][0]["partitions"][0]
    return sorted(partition["isr_nodes"])


def _latest(wire: Any, bootstrap: str, topic: str) -> int:
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                        "timestamp": -1}]}]}
    answer = wire(bootstrap).call(ApiKey.LIST_OFFSETS, 4, body)
    return int(answer["topics"][0]["partitions"][0]["offset"])


def _produce(topic: str, batch: bytes, acks: int) -> dict[str, Any]:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 25000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": batch}]}]}


def test_a_waiting_produce_does_not_hold_back_the_next(brokers, wire, make_batch) -> None:
    leader = brokers[1].bootstrap_servers
    _create(wire, leader, "slow", [1, 2])
    _create(wire, leader, "fast", [1])
    _until(lambda: _isr(wire, leader, "slow") == [1, 2], "both replicas in the ISR")
    first = wire(leader).call(ApiKey.PRODUCE, 8, _produce("slow", make_batch([b"a"]), -1))
    assert first["responses"][0]["partition_responses"][0]["error_code"] == 0

    brokers[2].process.send_signal(signal.SIGSTOP)
    client = wire(leader)
    waiting = client.send(ApiKey.PRODUCE, 8, _produce("slow", make_batch([b"b"]), -1))
    behind = client.send(ApiKey.PRODUCE, 8, _produce("fast", make_batch([b"c"]), 1))
    # Well inside broker 2's session: the waiting Produce cannot have been answered yet.
    _until(lambda: _latest(wire, leader, "fast") == 1,
           "the Produce behind a waiting one appended", timeout=8)
    brokers[2].process.send_signal(signal.SIGCONT)

    correlation, answer = client.receive(ApiKey.PRODUCE, 8)
    assert correlation == waiting
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
    correlation, answer = client.receive(ApiKey.PRODUCE, 8)
    assert correlation == behind
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0
    assert _latest(wire, leader, "slow") == 2
