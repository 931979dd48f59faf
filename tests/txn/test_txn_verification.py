"""KIP-890's verification, from the outside: a transactional batch or a TxnOffsetCommit is
accepted only when the producer's transaction coordinator, wherever it runs, says its
partition is in the producer's ongoing transaction; and the backstop that aborts a
hanging transaction after ``transaction.max.timeout.ms``.

Requests are sent raw (a test client, batches built by kafka-python) because the real
clients never send what is refused here; the real clients' own transactions are the rest
of tests/txn."""

from __future__ import annotations

import random
import time
from collections.abc import Callable

import pytest
from confluent_kafka import Producer
from kafka.record.default_records import DefaultRecordBatchBuilder
from txn_helpers import TXN_SETTINGS, read_all

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    ProducerFencedError,
    TransactionalIdAuthorizationFailedError,
)
from kafkalite_server import EmbeddedCluster
from kafkalite_server.coordinator.hashing import partition_for
from kafkalite_server.group import OFFSETS_TOPIC
from kafkalite_server.txn.config import TRANSACTION_STATE_TOPIC
from tests.conftest import WireClient

TOPIC = "verified"
PRODUCE_VERSION = 8
TXN_OFFSET_COMMIT_VERSION = 3
STATE_PARTITIONS = 3  # TXN_SETTINGS' transaction.state.log.num.partitions
OFFSETS_PARTITIONS = 4  # the test brokers' offsets.topic.num.partitions
UNKNOWN_PRODUCER_ID = 987_654


def transactional_batch(values: list[bytes], producer_id: int, producer_epoch: int,
                        base_sequence: int = 0) -> bytes:
    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=True, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, timestamp=None, key=None, value=value, headers=[])
    return bytes(builder.build())


def produce(client: WireClient, records: bytes, transactional_id: str | None) -> int:
    response = client.call(ApiKey.PRODUCE, PRODUCE_VERSION, {
        "transactional_id": transactional_id, "acks": -1, "timeout_ms": 10_000,
        "topic_data": [{"name": TOPIC, "partition_data": [{"index": 0, "records": records}]}]})
    error: int = response["responses"][0]["partition_responses"][0]["error_code"]
    return error


def leader_client(cluster: EmbeddedCluster, wire: Callable[[str], WireClient],
                  topic: str, partition: int) -> WireClient:
    leader = cluster.partition_state(topic, partition).leader
    return wire(cluster.broker(leader).address("PLAINTEXT"))


def init_producer_id(cluster: EmbeddedCluster, wire: Callable[[str], WireClient],
                     transactional_id: str) -> tuple[int, int]:
    client = wire(cluster.bootstrap_servers)
    found = client.find_coordinator(transactional_id, key_type=1)
    assert found["error_code"] == 0, found
    coordinator = wire(f"{found['host']}:{found['port']}")
    for _attempt in range(100):  # COORDINATOR_LOAD_IN_PROGRESS / NOT_COORDINATOR at first
        answer = coordinator.call(ApiKey.INIT_PRODUCER_ID, 1, {
            "transactional_id": transactional_id, "transaction_timeout_ms": 1000})
        if answer["error_code"] == 0:
            return answer["producer_id"], answer["producer_epoch"]
        time.sleep(0.1)
    raise AssertionError(f"InitProducerId: {answer}")


def create_topic(cluster: EmbeddedCluster) -> None:
    cluster.create_topic(TOPIC, 1, cluster.num_brokers)


@pytest.fixture
def three(cluster_factory: Callable[..., EmbeddedCluster]) -> EmbeddedCluster:
    cluster = cluster_factory(3, **TXN_SETTINGS)
    create_topic(cluster)
    return cluster


def test_a_transactional_batch_no_coordinator_added_is_refused_and_readers_go_on(
        three: EmbeddedCluster, wire: Callable[[str], WireClient]) -> None:
    """A made-up producer id, a batch without the request's transactional id (refused
    before verification, as Kafka's KafkaApis does: TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
    and a real producer that skipped AddPartitionsToTxn: each is refused, so the
    partition's last stable offset never waits for a marker nobody will write."""
    bootstrap = three.bootstrap_servers
    real_id, real_epoch = init_producer_id(three, wire, "tx-real")
    leader = leader_client(three, wire, TOPIC, 0)
    ghost = transactional_batch([b"ghost"], UNKNOWN_PRODUCER_ID, 0)
    assert produce(leader, ghost, "tx-ghost") == InvalidProducerIdMappingError.errno
    assert produce(leader, ghost, None) == TransactionalIdAuthorizationFailedError.errno
    skipped = transactional_batch([b"not added"], real_id, real_epoch)
    assert produce(leader, skipped, "tx-real") == InvalidTxnStateError.errno
    assert produce(leader, transactional_batch([b"fenced"], real_id, real_epoch + 1),
                   "tx-real") == InvalidProducerEpochError.errno

    plain = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    for n in range(3):
        plain.produce(TOPIC, f"plain-{n}".encode(), partition=0)
    assert plain.flush(15) == 0
    assert read_all(bootstrap, TOPIC, "read_committed") == [b"plain-0", b"plain-1",
                                                            b"plain-2"]


def txn_offset_commit(client: WireClient, group_id: str, transactional_id: str,
                      producer_id: int, producer_epoch: int) -> int:
    response = client.call(ApiKey.TXN_OFFSET_COMMIT, TXN_OFFSET_COMMIT_VERSION, {
        "transactional_id": transactional_id, "group_id": group_id,
        "producer_id": producer_id, "producer_epoch": producer_epoch,
        "topics": [{"name": TOPIC, "partitions": [
            {"partition_index": 0, "committed_offset": 1, "committed_metadata": ""}]}]})
    error: int = response["topics"][0]["partitions"][0]["error_code"]
    return error


def group_coordinator(three: EmbeddedCluster, wire: Callable[[str], WireClient],
                      group_id: str) -> tuple[int, WireClient]:
    found = wire(three.bootstrap_servers).find_coordinator(group_id)
    assert found["error_code"] == 0, found
    return found["node_id"], wire(f"{found['host']}:{found['port']}")


def test_txn_offset_commit_gets_the_same_answer_wherever_the_coordinators_are(
        three: EmbeddedCluster, wire: Callable[[str], WireClient]) -> None:
    """Random group ids (so the group's coordinator is sometimes the transaction's,
    sometimes not): a producer id no coordinator knows, a fenced epoch and a transaction
    that never added the group each get one answer everywhere."""
    real_id, real_epoch = init_producer_id(three, wire, "tx-offsets")
    txn_leader = three.partition_state(
        TRANSACTION_STATE_TOPIC, partition_for("tx-offsets", STATE_PARTITIONS)).leader
    rng = random.Random(30)
    placements = set()
    for n in range(30):
        group_id = f"group-{rng.randrange(10**9)}-{n}"
        node_id, client = group_coordinator(three, wire, group_id)
        assert node_id == three.partition_state(
            OFFSETS_TOPIC, partition_for(group_id, OFFSETS_PARTITIONS)).leader
        placements.add(node_id == txn_leader)
        answers = (
            txn_offset_commit(client, group_id, f"tx-ghost-{n}", UNKNOWN_PRODUCER_ID, 0),
            txn_offset_commit(client, group_id, "tx-offsets", UNKNOWN_PRODUCER_ID, 0),
            txn_offset_commit(client, group_id, "tx-offsets", real_id, real_epoch + 1),
            txn_offset_commit(client, group_id, "tx-offsets", real_id, real_epoch),
        )
        assert answers == (InvalidProducerIdMappingError.errno,
                           InvalidProducerIdMappingError.errno,
                           ProducerFencedError.errno, InvalidTxnStateError.errno), group_id
    assert placements == {True, False}, "every group landed on one side: widen the sample"


def test_a_hanging_transaction_is_aborted_after_the_max_timeout(
        cluster_factory: Callable[..., EmbeddedCluster],
        wire: Callable[[str], WireClient]) -> None:
    """With verification off, a made-up producer's batch is taken and holds the last
    stable offset; once it has been open transaction.max.timeout.ms and no coordinator
    (asked in process and over the network) runs that producer, the partition's leader
    aborts it and read_committed readers go on (without the hanging record)."""
    cluster = cluster_factory(
        3, transaction_partition_verification_enable="false",
        transaction_max_timeout_ms="1500", **TXN_SETTINGS)
    create_topic(cluster)
    bootstrap = cluster.bootstrap_servers
    init_producer_id(cluster, wire, "tx-bystander")  # coordinators that answer
    leader = leader_client(cluster, wire, TOPIC, 0)
    assert produce(leader, transactional_batch([b"hanging"], UNKNOWN_PRODUCER_ID, 0),
                   "tx-ghost") == 0
    plain = Producer({"bootstrap.servers": bootstrap, "log_level": 3})
    plain.produce(TOPIC, b"after", partition=0)
    assert plain.flush(15) == 0
    assert read_all(bootstrap, TOPIC, "read_committed", timeout=3) == []

    deadline = time.monotonic() + 30
    while (committed := read_all(bootstrap, TOPIC, "read_committed", timeout=3)) != [b"after"]:
        assert time.monotonic() < deadline, committed
    assert read_all(bootstrap, TOPIC, "read_uncommitted") == [b"hanging", b"after"]
