"""Internal topics cannot be deleted, re-created or grown by clients (confluent-kafka's admin
client against a broker process), so committed group offsets survive a restart."""

from __future__ import annotations

import pytest

confluent_kafka = pytest.importorskip("confluent_kafka")
from confluent_kafka import Consumer, KafkaError, KafkaException, TopicPartition  # noqa: E402
from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic  # noqa: E402

OFFSETS = "__consumer_offsets"


def _commit(bootstrap: str, offsets: dict[int, int]) -> None:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "keepers",
                         "enable.auto.commit": False})
    try:
        consumer.commit(offsets=[TopicPartition("work", p, o) for p, o in offsets.items()],
                        asynchronous=False)
    finally:
        consumer.close()


def _committed(bootstrap: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "keepers",
                         "enable.auto.commit": False})
    try:
        answer = consumer.committed([TopicPartition("work", p) for p in (0, 1)], timeout=20)
        return {tp.partition: tp.offset for tp in answer}
    finally:
        consumer.close()


def _error_of(future) -> KafkaError:
    with pytest.raises(KafkaException) as caught:
        future.result(timeout=20)
    return caught.value.args[0]


def test_internal_topics_refused_and_group_offsets_survive_restart(broker_process):
    bootstrap = broker_process.bootstrap_servers
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic("work", 2, 1)])["work"].result(timeout=20)
    _commit(bootstrap, {0: 7, 1: 11})

    error = _error_of(admin.delete_topics([OFFSETS], operation_timeout=10)[OFFSETS])
    assert error.code() == KafkaError.INVALID_REQUEST
    error = _error_of(admin.create_partitions([NewPartitions(OFFSETS, 8)])[OFFSETS])
    assert error.code() == KafkaError.INVALID_REQUEST
    assert OFFSETS in error.str() and "internal topic" in error.str()
    error = _error_of(admin.create_topics([NewTopic("__transaction_state", 1, 1)])[
        "__transaction_state"])
    assert error.code() == KafkaError.INVALID_REQUEST
    assert "__transaction_state" not in admin.list_topics(timeout=20).topics

    described = admin.list_topics(OFFSETS, timeout=20).topics[OFFSETS]
    assert described.error is None and len(described.partitions) == 4
    assert "cannot delete '__consumer_offsets'" in broker_process.log_text()

    broker_process.restart()
    assert _committed(broker_process.bootstrap_servers) == {0: 7, 1: 11}
    # An ordinary topic is still deletable.
    admin = AdminClient({"bootstrap.servers": broker_process.bootstrap_servers})
    admin.delete_topics(["work"], operation_timeout=10)["work"].result(timeout=20)
