"""Replication on an in-process three-broker cluster (in-memory coordination): followers
copy the leader's batches byte for byte, the high watermark waits for the ISR, acks=all
waits for every ISR member, min.insync.replicas, ISR shrink and expand, leader failover
without losing an acknowledged record."""

from __future__ import annotations

import threading
import time

from confluent_kafka import Consumer, Producer
from confluent_kafka.admin import AdminClient, NewTopic
from replication_helpers import leader_of, log_bytes, replica, until

from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster


def create(cluster: EmbeddedCluster, topic: str, replicas: int = 3, partitions: int = 1,
           **configs: str) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, partitions, replicas, config=configs)])[topic].result(10)
    until(lambda: all(leader_of(cluster, topic, p) >= 0 for p in range(partitions)),
          "leaders for every partition")


def produce(cluster: EmbeddedCluster, topic: str, values: list[bytes]) -> list[tuple[int, int]]:
    """Idempotent acks=all; returns (partition, offset) of each acknowledged record."""
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 5})
    acked: list[tuple[int, int]] = []
    errors: list[object] = []

    def done(err: object, msg: object) -> None:
        if err is None:
            acked.append((msg.partition(), msg.offset()))  # type: ignore[attr-defined]
        else:
            errors.append(err)
    for value in values:
        producer.produce(topic, value, on_delivery=done)
        producer.poll(0)
    assert producer.flush(30) == 0
    assert not errors, errors[:3]
    return acked


def consume_all(cluster: EmbeddedCluster, topic: str, count: int) -> list[bytes]:
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "check",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe([topic])
    values: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(values) < count and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            values.append(message.value())
    consumer.close()
    return values


def test_followers_copy_the_leaders_batches_byte_for_byte(memory_cluster):
    cluster = memory_cluster(3, **{"min.insync.replicas": "2"})
    create(cluster, "copied")
    values = [f"v{i}".encode() for i in range(500)]
    acked = produce(cluster, "copied", values)
    assert sorted(offset for _p, offset in acked) == list(range(500))
    leader = replica(cluster, leader_of(cluster, "copied"), "copied")
    assert leader.high_watermark == 500 and leader.isr and len(leader.isr) == 3
    followers = [replica(cluster, b.node_id, "copied") for b in cluster.brokers
                 if b.node_id != leader.local_id]
    until(lambda: all(f.high_watermark == 500 for f in followers), "follower HW at 500")
    expected = log_bytes(leader, 500)
    for follower in followers:
        assert follower.log.log_end_offset == 500
        assert log_bytes(follower, 500) == expected
        assert follower.log.leader_epoch_cache.entries == leader.log.leader_epoch_cache.entries
    assert consume_all(cluster, "copied", 500) == values


def test_min_insync_replicas_refuses_acks_all_before_the_append(memory_cluster, wire,
                                                               make_batch):
    cluster = memory_cluster(3)
    create(cluster, "guarded", **{"min.insync.replicas": "2"})
    leader_id = leader_of(cluster, "guarded")
    for broker_id in [b.node_id for b in cluster.brokers if b.node_id != leader_id]:
        cluster.kill_broker(broker_id)
    until(lambda: replica(cluster, leader_id, "guarded").isr == (leader_id,), "ISR of one")
    client = wire(cluster.bootstrap_servers)
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 5000, "topic_data": [
        {"name": "guarded", "partition_data": [{"index": 0, "records": make_batch([b"x"])}]}]}
    answer = client.call(ApiKey.PRODUCE, 8, body)
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 19
    assert replica(cluster, leader_id, "guarded").log.log_end_offset == 0  # nothing written
    body["acks"] = 1
    answer = client.call(ApiKey.PRODUCE, 8, body)
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 0


def test_stalled_followers_leave_the_isr_and_a_waiting_produce_hears_it(memory_cluster, wire,
                                                                        make_batch):
    """Both followers stop fetching: the acks=all produce waits; after
    replica.lag.time.max.ms the leader drops them from the ISR (a conditional write of the
    state node) and the produce fails with NOT_ENOUGH_REPLICAS_AFTER_APPEND."""
    cluster = memory_cluster(3, **{"replica.lag.time.max.ms": "1000"})
    create(cluster, "stalled", **{"min.insync.replicas": "2"})
    leader_id = leader_of(cluster, "stalled")
    for broker in cluster.brokers:
        if broker.node_id != leader_id:
            cluster.call(broker.replica_manager.shutdown())
    client = wire(cluster.bootstrap_servers.split(",")[leader_id])
    body = {"transactional_id": None, "acks": -1, "timeout_ms": 20000, "topic_data": [
        {"name": "stalled", "partition_data": [{"index": 0, "records": make_batch([b"x"])}]}]}
    answer = client.call(ApiKey.PRODUCE, 8, body)
    assert answer["responses"][0]["partition_responses"][0]["error_code"] == 20
    leader = replica(cluster, leader_id, "stalled")
    assert leader.isr == (leader_id,)
    assert leader.high_watermark == 1  # the record is in the log and committed in the ISR
    # Every broker's metadata cache hears of the new ISR through the controller.
    until(lambda: all(b.metadata_cache.partition("stalled", 0).isr == (leader_id,)
                      for b in cluster.brokers), "UpdateMetadata with the shrunk ISR")


def test_a_restarted_follower_catches_up_and_rejoins_the_isr(memory_cluster):
    cluster = memory_cluster(3)
    create(cluster, "rejoin")
    leader_id = leader_of(cluster, "rejoin")
    follower_id = next(b.node_id for b in cluster.brokers if b.node_id != leader_id)
    cluster.kill_broker(follower_id)
    until(lambda: follower_id not in replica(cluster, leader_id, "rejoin").isr, "ISR shrink")
    produce(cluster, "rejoin", [b"a"] * 300)
    cluster.restart_broker(follower_id)
    until(lambda: follower_id in replica(cluster, leader_id, "rejoin").isr, "ISR expand")
    follower = replica(cluster, follower_id, "rejoin")
    assert follower.log.log_end_offset == 300
    assert log_bytes(follower, 300) == log_bytes(replica(cluster, leader_id, "rejoin"), 300)


def test_killing_the_leader_mid_stream_loses_no_acknowledged_record(memory_cluster):
    cluster = memory_cluster(3, **{"min.insync.replicas": "2"})
    create(cluster, "failover")
    first_leader = leader_of(cluster, "failover")
    values = [f"m{i}".encode() for i in range(3000)]
    producer = Producer({"bootstrap.servers": cluster.bootstrap_servers, "acks": "all",
                         "enable.idempotence": True, "linger.ms": 2,
                         "message.timeout.ms": 60000})
    acked: list[bytes] = []
    lock = threading.Lock()

    def done(err: object, msg: object) -> None:
        if err is None:
            with lock:
                acked.append(msg.value())  # type: ignore[attr-defined]
    for i, value in enumerate(values):
        producer.produce("failover", value, on_delivery=done)
        producer.poll(0)
        if i == 1000:
            producer.flush(30)
            cluster.kill_broker(first_leader)
    assert producer.flush(60) == 0
    assert acked == values  # idempotent: every record once, in order
    until(lambda: leader_of(cluster, "failover") not in (-1, first_leader), "a new leader")
    new_leader = leader_of(cluster, "failover")
    assert replica(cluster, new_leader, "failover").leader_epoch > 0
    cluster.restart_broker(first_leader)
    until(lambda: first_leader in replica(cluster, new_leader, "failover").isr,
          "the old leader back in the ISR")
    leader = replica(cluster, new_leader, "failover")
    high_watermark = leader.high_watermark
    assert high_watermark == len(values)
    expected = log_bytes(leader, high_watermark)
    for broker in cluster.brokers:
        follower = replica(cluster, broker.node_id, "failover")
        until(lambda f=follower: f.log.log_end_offset >= high_watermark, "caught up")
        assert log_bytes(follower, high_watermark) == expected
    assert consume_all(cluster, "failover", len(values)) == values


def test_committed_offsets_survive_the_coordinators_death(memory_cluster, wire):
    """__consumer_offsets gets offsets.topic.replication.factor (3) replicas; when the
    coordinator dies, the new leader of the offsets partition replays its copy."""
    from confluent_kafka import TopicPartition

    cluster = memory_cluster(3, **{"offsets.topic.num.partitions": "3",
                                   "group.initial.rebalance.delay.ms": "0"})
    create(cluster, "work")
    produce(cluster, "work", [b"job"] * 10)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers, "group.id": "workers",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    consumer.subscribe(["work"])
    seen = 0
    deadline = time.monotonic() + 30
    while seen < 10 and time.monotonic() < deadline:
        message = consumer.poll(0.5)
        if message is not None and message.error() is None:
            seen += 1
    consumer.commit(asynchronous=False)
    consumer.close()
    answer = wire(cluster.bootstrap_servers).find_coordinator("workers")
    coordinator = answer["node_id"]
    offsets = cluster.broker(coordinator).metadata_cache.partitions_of("__consumer_offsets")
    assert offsets is not None and all(len(p.replicas) == 3 for p in offsets)
    cluster.kill_broker(coordinator)

    def committed() -> int | None:
        probe = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                          "group.id": "workers"})
        try:
            return probe.committed([TopicPartition("work", 0)], timeout=5)[0].offset
        except Exception:
            return None
        finally:
            probe.close()
    assert until(lambda: committed() == 10, "the commit read from the new coordinator", 40)


def test_describe_log_dirs_reports_size_and_a_followers_lag(memory_cluster, wire):
    cluster = memory_cluster(3)
    create(cluster, "lagging")
    leader_id = leader_of(cluster, "lagging")
    follower = next(b for b in cluster.brokers if b.node_id != leader_id)
    produce(cluster, "lagging", [b"x"] * 10)
    until(lambda: replica(cluster, follower.node_id, "lagging").log.log_end_offset == 10,
          "caught up")
    cluster.call(follower.replica_manager.shutdown())  # it stops fetching
    # As if its last fetch response had said the leader committed up to 25:
    replica(cluster, follower.node_id, "lagging").leader_high_watermark = 25

    def described(broker) -> dict:
        answer = wire(f"{broker.endpoint.host}:{broker.endpoint.port}").call(
            ApiKey.DESCRIBE_LOG_DIRS, 1, {"topics": [{"topic": "lagging",
                                                      "partitions": [0]}]})
        return answer["results"][0]["topics"][0]["partitions"][0]
    assert described(follower)["offset_lag"] == 15
    assert described(follower)["partition_size"] > 0
    assert described(cluster.broker(leader_id))["offset_lag"] == 0
