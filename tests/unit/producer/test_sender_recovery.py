"""The Sender's KIP-360 path driven by hand: a fake client, a fake clock, no sockets."""

from __future__ import annotations

from typing import Any

from kafkalite.client.future import Future
from kafkalite.producer.accumulator import RecordAccumulator
from kafkalite.producer.config import validate_producer_config
from kafkalite.producer.sender import Sender
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import OutOfOrderSequenceNumberError, UnknownServerError
from kafkalite.records.batch_header import read_batch_header
from kafkalite.structs import TopicPartition
from tests.unit.producer.test_accumulator import FakeClock

TP = TopicPartition("t", 0)


class FakeCluster:
    def leader_for(self, tp: TopicPartition) -> int | None:
        return 0

    def request_update(self) -> int:
        return 0


class FakeClient:
    """Records each request; the test answers it through its future."""

    def __init__(self) -> None:
        self.cluster = FakeCluster()
        self.sent: list[tuple[int, dict[str, Any], Future[dict[str, Any]]]] = []

    def ready(self, node: int) -> bool:
        return True

    def least_loaded_node(self) -> int:
        return 0

    def api_version(self, node: int, api_key: int) -> int:
        return {ApiKey.PRODUCE: 8, ApiKey.INIT_PRODUCER_ID: 4}[api_key]

    def send(self, node: int, api_key: int, body: dict[str, Any],
             expect_response: bool = True) -> Future[dict[str, Any]]:
        future: Future[dict[str, Any]] = Future()
        self.sent.append((api_key, body, future))
        return future

    def take(self, api_key: int) -> tuple[dict[str, Any], Future[dict[str, Any]]]:
        assert [key for key, _b, _f in self.sent] == [api_key], self.sent
        _key, body, future = self.sent.pop()
        return body, future


def _answer_init(client: FakeClient, producer_id: int, epoch: int) -> dict[str, Any]:
    body, future = client.take(ApiKey.INIT_PRODUCER_ID)
    future.success({"error_code": 0, "producer_id": producer_id, "producer_epoch": epoch,
                    "throttle_time_ms": 0})
    return body


def _answer_produce(client: FakeClient, error: int = 0, offset: int = 0) -> tuple[int, int, int]:
    body, future = client.take(ApiKey.PRODUCE)
    records = body["topic_data"][0]["partition_data"][0]["records"]
    header = read_batch_header(records)
    assert header is not None
    future.success({"responses": [{"name": "t", "partition_responses": [{
        "index": 0, "error_code": error, "base_offset": offset, "log_append_time_ms": -1,
        "log_start_offset": 0, "error_message": None}]}], "throttle_time_ms": 0})
    return header.producer_id, header.producer_epoch, header.base_sequence


def _setup() -> tuple[FakeClient, RecordAccumulator, Sender]:
    clock = FakeClock()
    config = validate_producer_config({"bootstrap_servers": "x", "linger_ms": 0})
    accumulator = RecordAccumulator(batch_size=1024, max_request_size=1 << 20, linger_ms=0,
                                    compression_type=None,
                                    buffer_memory=1 << 20, max_block_ms=0,
                                    delivery_timeout_ms=120000, retry_backoff_ms=100,
                                    clock=clock)
    client = FakeClient()
    return client, accumulator, Sender(client, accumulator, config, clock=clock)  # type: ignore[arg-type]


def test_a_failed_batch_bumps_the_epoch_and_only_it_fails():
    client, accumulator, sender = _setup()
    first = accumulator.append(TP, 0, None, b"a", None)
    sender.run_once()
    assert _answer_init(client, 5, 0)["producer_id"] == -1
    sender.run_once()
    assert _answer_produce(client, offset=0) == (5, 0, 0)
    assert first is not None and first.get(0).offset == 0

    lost = accumulator.append(TP, 0, None, b"b", None)
    sender.run_once()
    assert _answer_produce(client, UnknownServerError.errno) == (5, 0, 1)
    assert lost is not None and isinstance(lost.exception, UnknownServerError)

    later = accumulator.append(TP, 0, None, b"c", None)
    sender.run_once()  # no produce before the bump is answered
    bump = _answer_init(client, 5, 1)
    assert (bump["producer_id"], bump["producer_epoch"]) == (5, 0)
    sender.run_once()
    assert _answer_produce(client, offset=1) == (5, 1, 0)
    assert later is not None and later.get(0).offset == 1
    assert sender.metrics.epoch_bumps == 1


def test_out_of_order_answer_also_recovers_with_a_new_id_from_a_kafka_broker():
    client, accumulator, sender = _setup()
    accumulator.append(TP, 0, None, b"a", None)
    sender.run_once()
    _answer_init(client, 5, 0)
    sender.run_once()
    _answer_produce(client, OutOfOrderSequenceNumberError.errno)
    accumulator.append(TP, 0, None, b"b", None)
    sender.run_once()
    _answer_init(client, 6, 0)  # Kafka gives non-transactional producers a new id
    sender.run_once()
    assert _answer_produce(client) == (6, 0, 0)
