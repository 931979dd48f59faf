"""The AdminClient's transaction tooling (KIP-664) against a running broker, with real
transactional producers (ours and librdkafka's): list, describe, describe the producers of a
partition, find a hanging transaction and abort it so read_committed consumers move on."""

from __future__ import annotations

import time
from collections.abc import Iterator

import confluent_kafka
import pytest

from kafkalite.admin import (
    AbortTransactionSpec,
    AdminClient,
    NewTopic,
    PartitionProducerState,
    TransactionDescription,
    TransactionListing,
    TransactionState,
)
from kafkalite.admin.transactions import HANGING_SLACK_MS
from kafkalite.consumer import Consumer
from kafkalite.errors import TransactionalIdNotFoundError
from kafkalite.producer import Producer
from kafkalite.protocol.errors import UnsupportedVersionError
from kafkalite.structs import TopicPartition
from kafkalite_server import EmbeddedCluster

TOPIC = "payments"
TP = TopicPartition(TOPIC, 0)


@pytest.fixture
def admin(cluster: EmbeddedCluster) -> Iterator[AdminClient]:
    with AdminClient(cluster.bootstrap_servers) as client:
        client.create_topics([NewTopic(TOPIC, 1, 1)])
        client.wait_for_topics([TOPIC])
        yield client


def committed_values(cluster: EmbeddedCluster, until: bytes) -> list[bytes]:
    """What a read_committed consumer reads of the partition, stopping at ``until`` or after
    ten seconds."""
    consumer = Consumer(bootstrap_servers=cluster.bootstrap_servers,
                        isolation_level="read_committed", auto_offset_reset="earliest")
    consumer.assign([TP])
    seen: list[bytes] = []
    deadline = time.monotonic() + 10
    try:
        while until not in seen and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=200).values():
                seen.extend(r.value for r in records)
    finally:
        consumer.close()
    return seen


def test_a_hanging_transaction_is_listed_described_found_and_aborted(
        cluster: EmbeddedCluster, admin: AdminClient) -> None:
    done = Producer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="tx-done")
    done.init_transactions()
    done.begin_transaction()
    done.send(TOPIC, b"committed")
    done.commit_transaction()
    done.close()

    hung = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap_servers,
                                     "transactional.id": "tx-hang",
                                     "transaction.timeout.ms": 600000})
    hung.init_transactions(15)
    hung.begin_transaction()
    hung.produce(TOPIC, b"never-ended")
    assert hung.flush(15) == 0

    listed = admin.list_transactions()
    assert list(listed) == [0]
    by_id = {t.transactional_id: t for t in listed[0]}
    assert by_id["tx-hang"].state is TransactionState.ONGOING
    assert isinstance(by_id["tx-hang"], TransactionListing)
    assert by_id["tx-done"].state is TransactionState.COMPLETE_COMMIT
    ongoing = admin.list_transactions(state_filters=[TransactionState.ONGOING])[0]
    assert [t.transactional_id for t in ongoing] == ["tx-hang"]
    only_done = admin.list_transactions(
        producer_id_filters=[by_id["tx-done"].producer_id])[0]
    assert [t.transactional_id for t in only_done] == ["tx-done"]

    described = admin.describe_transactions(["tx-hang", "tx-done"])
    hang = described["tx-hang"]
    assert isinstance(hang, TransactionDescription)
    assert (hang.coordinator_id, hang.state, hang.topic_partitions) == \
        (0, TransactionState.ONGOING, {TP})
    assert hang.producer_id == by_id["tx-hang"].producer_id
    assert hang.transaction_timeout_ms == 600000 and hang.transaction_start_time_ms > 0
    assert described["tx-done"].topic_partitions == set()
    with pytest.raises(TransactionalIdNotFoundError, match="tx-nobody"):
        admin.describe_transactions(["tx-nobody"])

    producers = admin.describe_producers([TP])
    assert isinstance(producers[TP], PartitionProducerState)
    states = {p.producer_id: p for p in producers[TP].active_producers}
    open_txn = states[hang.producer_id]
    assert open_txn.producer_epoch == hang.producer_epoch
    assert open_txn.current_transaction_start_offset == 2  # after "committed" and its marker
    assert states[described["tx-done"].producer_id].current_transaction_start_offset == -1
    assert admin.describe_producers([TP], broker_id=0) == producers

    # Younger than the timeout plus Kafka's five minutes: not hanging yet. With a timeout
    # that leaves no margin it is, as it would be five minutes after transaction.max.timeout.ms.
    assert admin.find_hanging_transactions() == []
    [found] = admin.find_hanging_transactions(max_transaction_timeout_ms=-HANGING_SLACK_MS)
    assert {k: found[k] for k in ("transactional_id", "producer_id", "producer_epoch", "state",
                                  "coordinator_id", "topic_partitions")} == {
        "transactional_id": "tx-hang", "producer_id": hang.producer_id,
        "producer_epoch": hang.producer_epoch, "state": "Ongoing", "coordinator_id": 0,
        "topic_partitions": [TP]}
    assert found["age_ms"] >= 0

    plain = Producer(bootstrap_servers=cluster.bootstrap_servers)
    plain.send(TOPIC, b"after").get(timeout=15)
    assert b"after" not in committed_values(cluster, until=b"after")  # held back by the LSO

    admin.abort_transaction(AbortTransactionSpec(TP, found["producer_id"],
                                                 found["producer_epoch"],
                                                 open_txn.coordinator_epoch))
    after = {p.producer_id: p for p in admin.describe_producers([TP])[TP].active_producers}
    assert after[hang.producer_id].current_transaction_start_offset == -1
    assert committed_values(cluster, until=b"after") == [b"committed", b"after"]
    plain.close()
    hung.purge()


def test_abort_from_an_older_producer_epoch_is_refused_naming_the_partition(
        cluster: EmbeddedCluster, admin: AdminClient) -> None:
    producer = Producer(bootstrap_servers=cluster.bootstrap_servers, transactional_id="tx-e")
    producer.init_transactions()
    producer.begin_transaction()
    producer.send(TOPIC, b"open")
    producer.flush()
    [state] = admin.describe_producers([TP])[TP].active_producers
    with pytest.raises(Exception, match=f"{TOPIC}-0") as refused:
        admin.abort_transaction(AbortTransactionSpec(TP, state.producer_id,
                                                     state.producer_epoch - 1))
    assert type(refused.value).__name__ in ("InvalidProducerEpochError", "ProducerFencedError")
    producer.abort_transaction()
    producer.close()


def test_filters_the_broker_does_not_serve_are_refused_naming_the_api(
        admin: AdminClient) -> None:
    with pytest.raises(UnsupportedVersionError, match=r"ListTransactions \(66\) v2"):
        admin.list_transactions(transactional_id_pattern="tx-.*")
    assert admin.list_transactions(duration_filter_ms=60000) == {0: []}
    assert admin.describe_transactions([]) == {} and admin.describe_producers([]) == {}
