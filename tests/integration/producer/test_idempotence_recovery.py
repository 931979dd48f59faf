"""KIP-360 recovery: after one failed append the idempotent Producer bumps its epoch and goes on.

The broker's append path fails once (a hook on the partition's log, raising before anything
is written); the broker answers UNKNOWN_SERVER_ERROR for that batch alone. Before the fix
every later send to the partition failed with OUT_OF_ORDER_SEQUENCE_NUMBER forever.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest

from kafkalite import Producer
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    InvalidProducerEpochError,
    InvalidRequestError,
    ProducerFencedError,
    UnknownServerError,
)
from kafkalite_server import EmbeddedCluster
from tests.integration.producer.test_producer_cluster import PARTITIONS, consume_all


def _fail_next_append(cluster: EmbeddedCluster, topic: str, partition: int) -> list[int]:
    """Make the partition's next leader append raise before writing; returns a call log."""
    log = cluster.brokers[0].replica_manager.leader_partition(topic, partition).log
    original = log.append_as_leader
    calls: list[int] = []

    def failing_once(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            raise RuntimeError("injected append failure")
        return original(*args, **kwargs)

    log.append_as_leader = failing_once
    return calls


def test_one_failed_append_costs_only_its_batch(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    cluster = cluster_factory(num_partitions=str(PARTITIONS))
    topic = "recovering"
    with Producer(cluster.bootstrap_servers, linger_ms=0, enable_idempotence=True) as producer:
        for partition in range(PARTITIONS):
            producer.send(topic, b"before-%d" % partition, partition=partition).get(10)
        identity = (producer._sender.producer_id, producer._sender.producer_epoch)
        calls = _fail_next_append(cluster, topic, 0)

        with pytest.raises(UnknownServerError):
            producer.send(topic, b"lost", partition=0).get(10)
        assert calls == [1]
        futures = [producer.send(topic, b"after-%d-%d" % (partition, i), partition=partition)
                   for i in range(5) for partition in range(PARTITIONS)]
        producer.flush(30)
        assert all(f.get(0).offset >= 1 for f in futures)
        # The same producer id, one epoch later.
        assert (producer._sender.producer_id, producer._sender.producer_epoch) == (
            identity[0], identity[1] + 1)
        assert producer.metrics(raw=True)["epoch_bumps"] == 1

    values = consume_all(cluster.bootstrap_servers, topic, 3 + 15)
    for partition in range(PARTITIONS):
        assert values[partition] == [b"before-%d" % partition] + [
            b"after-%d-%d" % (partition, i) for i in range(5)]


def _init(client: Any, version: int, producer_id: int = -1, epoch: int = -1) -> dict[str, Any]:
    return client.call(ApiKey.INIT_PRODUCER_ID, version, {
        "transactional_id": None, "transaction_timeout_ms": 60000,
        "producer_id": producer_id, "producer_epoch": epoch})


def test_init_producer_id_bumps_by_id_and_epoch(cluster: EmbeddedCluster, wire) -> None:
    client = wire(cluster.bootstrap_servers)
    fresh = _init(client, 4)
    assert fresh["error_code"] == 0 and fresh["producer_epoch"] == 0
    pid = fresh["producer_id"]
    bumped = _init(client, 4, pid, 0)
    assert (bumped["error_code"], bumped["producer_id"], bumped["producer_epoch"]) == (0, pid, 1)
    # A retry of that bump (its answer lost) gets the same answer.
    assert _init(client, 3, pid, 0)["producer_epoch"] == 1
    assert _init(client, 4, pid, 1)["producer_epoch"] == 2
    # A zombie two epochs behind is fenced (INVALID_PRODUCER_EPOCH before v4).
    assert _init(client, 4, pid, 0)["error_code"] == ProducerFencedError.errno
    assert _init(client, 3, pid, 0)["error_code"] == InvalidProducerEpochError.errno
    assert _init(client, 4, pid, -1)["error_code"] == InvalidRequestError.errno
    assert _init(client, 2)["producer_id"] not in (-1, pid)
    # An exhausted epoch is replaced by a new id at epoch 0; retrying gets the same one.
    other = _init(client, 4)["producer_id"]
    replaced = _init(client, 4, other, 32766)
    assert replaced["producer_id"] != other and replaced["producer_epoch"] == 0
    assert _init(client, 4, other, 32766)["producer_id"] == replaced["producer_id"]


def test_confluent_kafka_and_kafkalite_recover_on_the_same_broker(
        cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    cluster = cluster_factory(num_partitions=str(PARTITIONS))
    topic = "shared"
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers,
                                         "enable.idempotence": True, "linger.ms": 0,
                                         "log_level": 3})
    errors: list[Any] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(err)

    producer.produce(topic, b"c-before", partition=0, on_delivery=report)
    assert producer.flush(20) == 0
    _fail_next_append(cluster, topic, 0)
    producer.produce(topic, b"c-lost", partition=0, on_delivery=report)
    producer.flush(20)
    for i in range(3):
        producer.produce(topic, b"c-after-%d" % i, partition=0, on_delivery=report)
    assert producer.flush(30) == 0
    assert len(errors) <= 1  # librdkafka may retry the failed batch itself
    values = consume_all(cluster.bootstrap_servers, topic, 4)[0]
    assert values[0] == b"c-before" and values[-3:] == [b"c-after-%d" % i for i in range(3)]
