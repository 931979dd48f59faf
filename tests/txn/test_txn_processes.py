"""A transaction across three ``kafkalite-server`` processes over a real ZooKeeper, with
the transaction log at its defaults (replication factor 3, min.insync.replicas 2): the
coordinator's broker is killed (SIGKILL) in the middle of a transaction, the producer
(confluent-kafka) commits through the new coordinator, and read_committed sees exactly
the committed records."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, ConfigResource, NewTopic
from polling import until
from txn_helpers import read_all

from kafkalite.protocol import ApiKey
from kafkalite_server.cluster.internal_topics import TRANSACTION_STATE_TOPIC
from tests.cluster.group_processes import running, started_brokers

pytestmark = pytest.mark.slow
BROKERS = (1, 2, 3)
SETTINGS = {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "3000",
            "replica.fetch.backoff.ms": "200", "controlled.shutdown.retry.backoff.ms": "200",
            "transaction.state.log.num.partitions": "3"}


_until = functools.partial(until, timeout=60.0, interval=0.2, tolerate=(OSError, KeyError, AssertionError, IndexError))


@pytest.fixture
def brokers(request: pytest.FixtureRequest, tmp_path: Path, zookeeper: Any,
            chroot: str) -> Iterator[dict[int, Any]]:
    with started_brokers(request, tmp_path, zookeeper.connect, chroot, SETTINGS,
                         BROKERS) as started:
        yield started


def _coordinator(brokers: dict[int, Any], wire: Callable[[str], Any], key: str) -> int:
    via = next(b for b in brokers.values() if b.process)
    answer = wire(via.bootstrap_servers).call(ApiKey.FIND_COORDINATOR, 1,
                                              {"key": key, "key_type": 1})
    assert answer["error_code"] == 0, answer
    return int(answer["node_id"])


def _transaction_log(bootstrap: str) -> tuple[set[int], str]:
    """(the replica counts of __transaction_state's partitions, its min.insync.replicas)."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = admin.list_topics(TRANSACTION_STATE_TOPIC, timeout=15).topics[TRANSACTION_STATE_TOPIC]
    resource = ConfigResource("topic", TRANSACTION_STATE_TOPIC)
    config = admin.describe_configs([resource])[resource].result(15)
    return ({len(p.replicas) for p in topic.partitions.values()},
            config["min.insync.replicas"].value)


def test_killing_the_coordinators_broker_mid_transaction(
        brokers: dict[int, Any], wire: Callable[[str], Any]) -> None:
    bootstrap = running(brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _until(lambda: len(admin.list_topics(timeout=10).brokers) == 3, "three live brokers")
    admin.create_topics([NewTopic("ledger", 3, 3, config={"min.insync.replicas": "2"})]
                        )["ledger"].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": "tx-killed",
                         "transaction.timeout.ms": 120_000, "log_level": 0})
    producer.init_transactions(60)
    assert _transaction_log(bootstrap) == ({3}, "2")
    producer.begin_transaction()
    for i in range(6):
        producer.produce("ledger", value=f"before-{i}".encode(), partition=i % 3)
    producer.flush(30)

    victim = _coordinator(brokers, wire, "tx-killed")
    brokers[victim].kill()
    _until(lambda: _coordinator(brokers, wire, "tx-killed") != victim,
           "another broker to coordinate the transaction")
    for i in range(6):
        producer.produce("ledger", value=f"after-{i}".encode(), partition=i % 3)
    producer.commit_transaction(120)

    brokers[victim].start()
    producer.begin_transaction()
    producer.produce("ledger", value=b"dropped", partition=0)
    producer.flush(30)
    producer.abort_transaction(60)
    bootstrap = running(brokers)
    expected = sorted([f"before-{i}".encode() for i in range(6)] +
                      [f"after-{i}".encode() for i in range(6)])
    assert sorted(read_all(bootstrap, "ledger", "read_committed", 3, 60)) == expected
    assert len(read_all(bootstrap, "ledger", "read_uncommitted", 3, 60)) == 13
