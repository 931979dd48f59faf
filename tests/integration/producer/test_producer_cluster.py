"""Producer against a 3-broker EmbeddedCluster: leader moves while producing lose nothing."""

from __future__ import annotations

import itertools
import time
from collections import defaultdict
from collections.abc import Callable
from typing import Any

import confluent_kafka
import pytest

from kafkalite import Producer
from kafkalite.errors import KafkaTimeoutError
from kafkalite.producer import MessageSizeTooLargeError
from kafkalite_server import EmbeddedCluster

PARTITIONS = 3


def consume_all(bootstrap: str, topic: str, expected: int) -> dict[int, list[bytes]]:
    """Every value per partition, read by assignment with librdkafka (an independent reader)."""
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": "verify", "enable.auto.commit": False,
        "enable.partition.eof": True, "log_level": 3,
    })
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    values: dict[int, list[bytes]] = defaultdict(list)
    eof: set[int] = set()
    try:
        while len(eof) < PARTITIONS or sum(map(len, values.values())) < expected:
            message = consumer.poll(10)
            assert message is not None, "the consumer stalled"
            if message.error():
                if message.error().code() == confluent_kafka.KafkaError._PARTITION_EOF:
                    eof.add(message.partition())
                    continue
                raise AssertionError(message.error())
            values[message.partition()].append(message.value())
    finally:
        consumer.close()
    return values


def _wait_until_replicated(cluster: EmbeddedCluster, topic: str) -> None:
    """Until each partition's high watermark reaches its leader's log end: every replica
    then holds every acknowledged record, and any of them may take over."""
    async def replicated() -> bool:  # read on the brokers' loop
        leading = [p for broker in cluster.brokers
                   for (name, _index), p in broker.replica_manager.partitions.items()
                   if name == topic and p.is_leader]
        return len(leading) == PARTITIONS and all(
            p.high_watermark == p.log.log_end_offset for p in leading)

    for _attempt in range(400):
        if cluster.call(replicated()):
            return
        time.sleep(0.05)
    raise AssertionError(f"the followers of {topic} did not catch up")


@pytest.mark.parametrize(("idempotent", "max_in_flight", "ordered"), [
    (True, 5, True),  # idempotence: one batch in flight per partition, sequence numbers
    (False, 1, True),
    (False, 5, False),  # pipelined retries may reorder, as in the Java producer
])
def test_leader_moves_while_producing_lose_and_duplicate_nothing(
    cluster_factory: Callable[..., EmbeddedCluster], idempotent: bool, max_in_flight: int,
    ordered: bool,
) -> None:
    cluster = cluster_factory(num_brokers=3, num_partitions=str(PARTITIONS),
                              default_replication_factor="3")
    topic = "moving"
    total = 3000
    producer = Producer(
        cluster.bootstrap_servers,
        metadata_max_age_ms=3_600_000,  # only error-triggered refreshes can explain recovery
        linger_ms=2,
        retry_backoff_ms=20,
        acks="all" if idempotent else 1,
        enable_idempotence=idempotent,
        max_in_flight_requests_per_connection=max_in_flight,
    )
    futures = []
    with producer:
        for i in range(total):
            if i in (1000, 2000):
                producer.flush(30)
                _wait_until_replicated(cluster, topic)  # acks=1 alone may leave followers behind
                shift = i // 1000
                for partition in range(PARTITIONS):
                    cluster.elect_leader(topic, partition, (partition + shift) % 3)
            futures.append(producer.send(topic, b"%06d" % i, key=b"%d" % (i % 50)))
        producer.flush(60)
        results = [f.get(0) for f in futures]
        assert producer.metrics(raw=True)["retries"] >= 1

    values = consume_all(cluster.bootstrap_servers, topic, total)
    every = sorted(v for vs in values.values() for v in vs)
    assert every == [b"%06d" % i for i in range(total)]
    for partition, partition_values in values.items():
        if ordered:
            assert partition_values == sorted(partition_values), f"partition {partition}"
        offsets = sorted(r.offset for r in results if r.partition == partition)
        assert offsets == list(range(len(partition_values)))


def test_record_above_max_request_size_fails_alone(
    cluster_factory: Callable[..., EmbeddedCluster]
) -> None:
    cluster = cluster_factory(num_brokers=1)
    with Producer(cluster.bootstrap_servers, max_request_size=10_000) as producer:
        small = producer.send("sizes", b"a")
        big = producer.send("sizes", bytes(20_000))
        small_after = producer.send("sizes", b"b")
        producer.flush(10)
        with pytest.raises(MessageSizeTooLargeError, match="max_request_size"):
            big.get(0)
        assert small.get(0).offset == 0
        assert small_after.get(0).offset == 1


def test_a_bad_timestamp_raises_alone_on_the_unkeyed_hot_path(
    cluster_factory: Callable[..., EmbeddedCluster]
) -> None:
    """The first unkeyed record opens the batch that later ones append to directly (see
    Producer._unkeyed_appends); a bad timestamp there raises the full path's typed error
    and costs no other record."""
    cluster = cluster_factory(num_brokers=1)
    with Producer(cluster.bootstrap_servers, linger_ms=500) as producer:  # the batch stays open
        first = producer.send("stamps", b"a")
        with pytest.raises(TypeError, match="record timestamp must be an int"):
            producer.send("stamps", b"b", timestamp_ms="soon")  # type: ignore[arg-type]
        with pytest.raises(ValueError, match="does not fit 64 bits"):
            producer.send("stamps", b"c", timestamp_ms=1 << 64)
        after = producer.send("stamps", b"d", timestamp_ms=1_700_000_000_000)
        assert [first.get(10).offset, after.get(10).offset] == [0, 1]
        assert after.get(0).timestamp == 1_700_000_000_000


def test_without_atomic_appends_send_never_asks_for_a_lock_free_append(
    cluster_factory: Callable[..., EmbeddedCluster], monkeypatch: pytest.MonkeyPatch
) -> None:
    """With the pure-Python writer the hot path is off from the start: no second trip
    through the accumulator's lock per record to ask for an append it cannot have."""
    from kafkalite.producer import producer as producer_module
    from kafkalite.producer.accumulator import RecordAccumulator

    asked: list[object] = []
    ask = RecordAccumulator.lock_free_append
    monkeypatch.setattr(producer_module, "ATOMIC_APPENDS", False)
    monkeypatch.setattr(RecordAccumulator, "lock_free_append",
                        lambda self, tp: asked.append(tp) or ask(self, tp))
    cluster = cluster_factory(num_brokers=1)
    with Producer(cluster.bootstrap_servers) as producer:
        futures = [producer.send("plain", b"v%d" % i) for i in range(100)]
        assert [f.get(10).offset for f in futures] == list(range(100))
    assert asked == []


def test_record_larger_than_batch_size_travels_alone(
    cluster_factory: Callable[..., EmbeddedCluster]
) -> None:
    cluster = cluster_factory(num_brokers=1)
    with Producer(cluster.bootstrap_servers, batch_size=1000) as producer:
        futures = [producer.send("big", bytes(5000)), producer.send("big", b"x")]
        assert [f.get(10).offset for f in futures] == [0, 1]


def test_unreachable_cluster_times_out_with_a_typed_error() -> None:
    with Producer("127.0.0.1:1", max_block_ms=300) as producer, \
            pytest.raises(KafkaTimeoutError, match="max_block_ms"):
        producer.send("t", b"x")


def test_callbacks_and_partitions_for(cluster_factory: Callable[..., EmbeddedCluster]) -> None:
    cluster = cluster_factory(num_brokers=1, num_partitions="4")
    seen = []
    with Producer(cluster.bootstrap_servers, value_serializer=str.encode) as producer:
        assert producer.partitions_for("cb") == {0, 1, 2, 3}
        producer.send("cb", "hello", partition=2).add_callback(seen.append)
        producer.flush(10)
    assert [(m.topic, m.partition, m.offset) for m in seen] == [("cb", 2, 0)]


def test_sticky_partitioner_moves_on_when_its_batch_is_full(
    cluster_factory: Callable[..., EmbeddedCluster]
) -> None:
    from kafkalite.producer import DefaultPartitioner

    class CountingSticky(DefaultPartitioner):
        def __init__(self) -> None:
            super().__init__()
            self.moves: list[int] = []

        def on_new_batch(self, topic: str, cluster: Any, prev_partition: int) -> None:
            self.moves.append(prev_partition)
            super().on_new_batch(topic, cluster, prev_partition)

    cluster = cluster_factory(num_brokers=1, num_partitions="4")
    partitioner = CountingSticky()
    with Producer(cluster.bootstrap_servers, partitioner=partitioner, batch_size=1000,
                  linger_ms=1000) as producer:
        futures = [producer.send("sticky", bytes(100)) for _ in range(40)]
        producer.flush(10)
        partitions = [f.get(0).partition for f in futures]
    runs = [(p, len(list(group))) for p, group in itertools.groupby(partitions)]
    assert len(partitioner.moves) == len(runs) - 1 >= 3
    assert partitioner.moves == [p for p, _ in runs[:-1]]  # each move leaves a full batch
    assert {length for _, length in runs[:-1]} == {8}  # 8 records of 100 B fill 1000 B
