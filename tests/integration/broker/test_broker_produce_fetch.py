"""Produce, Fetch, ListOffsets, InitProducerId and OffsetForLeaderEpoch on the wire."""

from __future__ import annotations

import threading
import time
from typing import Any

import pytest

from kafkalite.protocol import ApiKey


@pytest.fixture
def client(cluster, wire):
    client = wire(cluster.bootstrap_servers)
    topics = [{"name": "t", "num_partitions": 2, "replication_factor": 1, "assignments": [],
               "configs": []}]
    response = client.call(ApiKey.CREATE_TOPICS, 4, {"topics": topics, "timeout_ms": 5000,
                                                     "validate_only": False})
    assert response["topics"][0]["error_code"] == 0
    return client


def produce(client, records: bytes | None, *, acks: int = 1, topic: str = "t",
            partition: int = 0, version: int = 8) -> dict[str, Any]:
    body = {"transactional_id": None, "acks": acks, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": partition,
                                                               "records": records}]}]}
    response = client.call(ApiKey.PRODUCE, version, body)
    return response["responses"][0]["partition_responses"][0]


def fetch_body(partitions: list[tuple[str, int, int]], *, max_wait_ms: int = 0,
               min_bytes: int = 1, max_bytes: int = 50 * 1024 * 1024,
               partition_max_bytes: int = 1024 * 1024) -> dict[str, Any]:
    topics: dict[str, list[dict[str, Any]]] = {}
    for topic, index, offset in partitions:
        topics.setdefault(topic, []).append(
            {"partition": index, "current_leader_epoch": -1, "fetch_offset": offset,
             "log_start_offset": -1, "partition_max_bytes": partition_max_bytes})
    return {"replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes,
            "max_bytes": max_bytes, "isolation_level": 0, "session_id": 0,
            "session_epoch": -1, "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": t, "partitions": p} for t, p in topics.items()]}


def fetch(client, partitions: list[tuple[str, int, int]], version: int = 11,
          **options: Any) -> dict[tuple[str, int], dict[str, Any]]:
    response = client.call(ApiKey.FETCH, version, fetch_body(partitions, **options))
    return {(t["topic"], p["partition_index"]): p
            for t in response["responses"] for p in t["partitions"]}


def test_produce_then_fetch_round_trip(client, make_batch, read_records):
    first = produce(client, make_batch([b"a", b"b", b"c"], keys=[b"1", b"2", b"3"]))
    assert (first["error_code"], first["base_offset"], first["log_start_offset"]) == (0, 0, 0)
    assert first["log_append_time_ms"] == -1
    second = produce(client, make_batch([b"d"]), acks=-1)
    assert (second["error_code"], second["base_offset"]) == (0, 3)
    result = fetch(client, [("t", 0, 0)])[("t", 0)]
    assert result["error_code"] == 0
    assert result["high_watermark"] == 4 == result["last_stable_offset"]
    assert result["aborted_transactions"] is None
    assert result["preferred_read_replica"] == -1
    records = read_records(result["records"])
    assert [(o, k, v) for o, k, v, _ts in records] == [
        (0, b"1", b"a"), (1, b"2", b"b"), (2, b"3", b"c"), (3, None, b"d")]
    tail = read_records(fetch(client, [("t", 0, 3)])[("t", 0)]["records"])
    assert [v for _o, _k, v, _ts in tail] == [b"d"]


def test_fetch_answers_every_requested_partition(client, make_batch):
    produce(client, make_batch([b"x"]))
    result = fetch(client, [("t", 0, 0), ("t", 1, 0), ("t", 7, 0), ("ghost", 0, 0)])
    assert len(result) == 4
    assert result[("t", 0)]["error_code"] == 0 and len(result[("t", 0)]["records"]) > 0
    assert result[("t", 1)]["error_code"] == 0 and len(result[("t", 1)]["records"]) == 0
    assert result[("t", 7)]["error_code"] == 3
    assert result[("ghost", 0)]["error_code"] == 3


def test_fetch_out_of_range_reports_the_bounds(client, make_batch):
    produce(client, make_batch([b"x", b"y"]))
    result = fetch(client, [("t", 0, 5)])[("t", 0)]
    assert result["error_code"] == 1
    assert result["high_watermark"] == 2 and result["log_start_offset"] == 0


def test_fetch_respects_partition_and_response_max_bytes(client, make_batch):
    batches = [make_batch([bytes([i]) * 500]) for i in range(6)]
    for batch in batches:
        produce(client, batch)
    one = fetch(client, [("t", 0, 0)], partition_max_bytes=1)[("t", 0)]
    assert len(one["records"]) == len(batches[0])  # the first batch always goes whole
    some = fetch(client, [("t", 0, 0)], partition_max_bytes=3 * len(batches[0]))[("t", 0)]
    assert len(some["records"]) == 3 * len(batches[0])
    capped = fetch(client, [("t", 0, 0)], max_bytes=2 * len(batches[0]))[("t", 0)]
    assert len(capped["records"]) == 2 * len(batches[0])


def test_delayed_fetch_is_completed_by_a_produce(cluster, client, wire, make_batch,
                                                 read_records):
    waiting = wire(cluster.bootstrap_servers)
    correlation_id = waiting.send(ApiKey.FETCH, 11,
                                  fetch_body([("t", 1, 0)], max_wait_ms=30_000))
    result: dict[str, Any] = {}

    def receive() -> None:
        result["response"] = waiting.receive(ApiKey.FETCH, 11)

    reader = threading.Thread(target=receive)
    reader.start()
    broker = cluster.brokers[0]
    deadline = time.monotonic() + 10
    while broker.replica_manager.fetch_purgatory.watched == 0:
        assert time.monotonic() < deadline, "the fetch never parked in the purgatory"
        time.sleep(0.01)
    produce(client, make_batch([b"wake up"]), partition=1)
    reader.join(timeout=20)
    received_id, body = result["response"]
    assert received_id == correlation_id
    records = read_records(body["responses"][0]["partitions"][0]["records"])
    assert [v for _o, _k, v, _ts in records] == [b"wake up"]
    assert broker.replica_manager.fetch_purgatory.watched == 0


def test_delayed_fetch_times_out_empty(client):
    result = fetch(client, [("t", 0, 0)], max_wait_ms=50, min_bytes=1)[("t", 0)]
    assert result["error_code"] == 0 and len(result["records"]) == 0


def test_produce_errors_per_partition(client, make_batch):
    assert produce(client, make_batch([b"x"]), acks=2)["error_code"] == 21
    assert produce(client, make_batch([b"x"]), topic="ghost")["error_code"] == 3
    assert produce(client, make_batch([b"x"]), partition=9)["error_code"] == 3
    corrupt = bytearray(make_batch([b"x"]))
    corrupt[-1] ^= 0xFF
    assert produce(client, bytes(corrupt))["error_code"] == 2
    assert produce(client, None)["error_code"] == 87
    assert produce(client, make_batch([b"ok"]))["base_offset"] == 0


def test_acks_zero_gets_no_response(client, make_batch):
    body = {"transactional_id": None, "acks": 0, "timeout_ms": 5000,
            "topic_data": [{"name": "t", "partition_data": [{"index": 0,
                                                             "records": make_batch([b"q"])}]}]}
    client.send(ApiKey.PRODUCE, 8, body)
    # The next response on the connection belongs to the next request.
    assert client.call(ApiKey.API_VERSIONS, 0, {})["error_code"] == 0
    assert fetch(client, [("t", 0, 0)])[("t", 0)]["high_watermark"] == 1


def test_failed_acks_zero_produce_closes_the_connection(client, make_batch):
    body = {"transactional_id": None, "acks": 0, "timeout_ms": 5000,
            "topic_data": [{"name": "ghost", "partition_data": [{"index": 0,
                                                                 "records": make_batch([b"q"])}]}]}
    client.send(ApiKey.PRODUCE, 8, body)
    assert client.is_closed_by_peer()


def test_list_offsets(client, make_batch):
    produce(client, make_batch([b"a", b"b"], timestamps=[1000, 2000]))
    produce(client, make_batch([b"c"], timestamps=[3000]))

    def lookup(timestamp: int, partition: int = 0, epoch: int = -1) -> dict[str, Any]:
        body = {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": "t", "partitions": [{"partition_index": partition,
                                          "current_leader_epoch": epoch,
                                          "timestamp": timestamp}]}]}
        return client.call(ApiKey.LIST_OFFSETS, 5, body)["topics"][0]["partitions"][0]

    assert lookup(-1)["offset"] == 3
    assert lookup(-2)["offset"] == 0
    assert (lookup(1500)["offset"], lookup(1500)["timestamp"]) == (1, 2000)
    assert lookup(3000)["offset"] == 2
    assert lookup(9999)["offset"] == -1
    assert lookup(-1, partition=5)["error_code"] == 3
    assert lookup(-1, epoch=7)["error_code"] == 75


def test_list_offsets_v7_finds_the_record_with_the_largest_timestamp(client, make_batch):
    """KIP-734's -3: the first record stamped with the log's largest timestamp, wherever
    it sits (records need not be stamped in order)."""
    produce(client, make_batch([b"a", b"b"], timestamps=[1000, 5000]))
    produce(client, make_batch([b"c", b"d"], timestamps=[3000, 5000]))
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                      "timestamp": -3}]}]}
    found = client.call(ApiKey.LIST_OFFSETS, 7, body)["topics"][0]["partitions"][0]
    assert (found["error_code"], found["offset"], found["timestamp"]) == (0, 1, 5000)


def test_list_offsets_v0_answers_old_style_offsets_newest_first(client, make_batch):
    """Kafka's legacy form: segment base offsets, plus the high watermark, walked back."""
    topics = [{"name": "legacy", "num_partitions": 1, "replication_factor": 1,
               "assignments": [], "configs": [{"name": "segment.bytes", "value": "200"}]}]
    created = client.call(ApiKey.CREATE_TOPICS, 4, {"topics": topics, "timeout_ms": 5000,
                                                    "validate_only": False})
    assert created["topics"][0]["error_code"] == 0
    for stamp in (1000, 2000, 3000):  # two batches outgrow 200 bytes: one segment each
        assert produce(client, make_batch([b"x" * 60], timestamps=[stamp]),
                       topic="legacy")["error_code"] == 0

    def lookup(timestamp: int, max_num_offsets: int, topic: str = "legacy") -> dict[str, Any]:
        body = {"replica_id": -1, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "timestamp": timestamp,
                                            "max_num_offsets": max_num_offsets}]}]}
        answer = client.call(ApiKey.LIST_OFFSETS, 0, body)["topics"][0]["partitions"][0]
        return {key: answer[key] for key in ("error_code", "old_style_offsets")}

    assert lookup(-1, 10) == {"error_code": 0, "old_style_offsets": [3, 2, 1, 0]}
    assert lookup(-1, 1)["old_style_offsets"] == [3]
    assert lookup(-2, 10)["old_style_offsets"] == [0]
    assert lookup(2500, 10)["old_style_offsets"] == [1, 0]
    assert lookup(500, 10)["old_style_offsets"] == []
    assert lookup(-1, 1, topic="absent") == {"error_code": 3, "old_style_offsets": []}


def test_init_producer_id_and_idempotent_produce(client, make_batch):
    body = {"transactional_id": None, "transaction_timeout_ms": 60000}
    first = client.call(ApiKey.INIT_PRODUCER_ID, 1, body)
    second = client.call(ApiKey.INIT_PRODUCER_ID, 1, body)
    assert first["error_code"] == 0 and first["producer_epoch"] == 0
    assert second["producer_id"] > first["producer_id"]
    batch = make_batch([b"once"], producer_id=first["producer_id"], producer_epoch=0,
                       base_sequence=0)
    assert produce(client, batch)["base_offset"] == 0
    retry = produce(client, batch)
    assert (retry["error_code"], retry["base_offset"]) == (0, 0)
    assert fetch(client, [("t", 0, 0)])[("t", 0)]["high_watermark"] == 1
    found = client.find_coordinator("tx", key_type=1)
    assert found["error_code"] == 0
    transactional = client.call(ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": "tx",
                                                             "transaction_timeout_ms": 60000})
    assert (transactional["error_code"], transactional["producer_epoch"]) == (0, 0)


def test_offset_for_leader_epoch(client, make_batch):
    produce(client, make_batch([b"a", b"b"]))
    body = {"replica_id": -1, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": -1, "leader_epoch": 0},
        {"partition": 3, "current_leader_epoch": -1, "leader_epoch": 0}]}]}
    known, unknown = client.call(ApiKey.OFFSET_FOR_LEADER_EPOCH, 3, body)["topics"][0][
        "partitions"]
    assert (known["error_code"], known["leader_epoch"], known["end_offset"]) == (0, 0, 2)
    assert unknown["error_code"] == 3


def test_background_retention_deletes_old_segments(cluster_factory, wire, make_batch):
    cluster = cluster_factory(log_retention_check_interval_ms="20")
    client = wire(cluster.bootstrap_servers)
    topics = [{"name": "short", "num_partitions": 1, "replication_factor": 1,
               "assignments": [], "configs": [{"name": "segment.bytes", "value": "200"},
                                              {"name": "retention.ms", "value": "1"}]}]
    client.call(ApiKey.CREATE_TOPICS, 4, {"topics": topics, "timeout_ms": 5000,
                                          "validate_only": False})
    for value in (b"a", b"b", b"c", b"d"):
        assert produce(client, make_batch([value * 60]), topic="short")["error_code"] == 0
    body = {"replica_id": -1, "isolation_level": 0, "topics": [
        {"name": "short", "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                          "timestamp": -2}]}]}
    deadline = time.monotonic() + 20
    while client.call(ApiKey.LIST_OFFSETS, 5, body)["topics"][0]["partitions"][0][
            "offset"] == 0:
        assert time.monotonic() < deadline, "retention never ran"
        time.sleep(0.02)
    result = fetch(client, [("short", 0, 0)], max_wait_ms=0)[("short", 0)]
    assert result["error_code"] == 1
    assert result["log_start_offset"] > 0
