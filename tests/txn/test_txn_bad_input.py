"""Bad transactional requests get Kafka's error and change nothing."""

from __future__ import annotations

from collections.abc import Callable

from txn_helpers import create_topic, read_all

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    InvalidProducerEpochError,
    InvalidProducerIdMappingError,
    InvalidTxnStateError,
    ProducerFencedError,
)
from kafkalite_server.embedded import EmbeddedCluster

TXN = "bad-input"


def _setup(cluster: EmbeddedCluster, wire: Callable) -> tuple[object, int, int]:
    create_topic(cluster.bootstrap_servers, "t")
    client = wire(cluster.bootstrap_servers)
    assert client.find_coordinator(TXN, key_type=1)["error_code"] == 0
    init = client.call(ApiKey.INIT_PRODUCER_ID, 3, {
        "transactional_id": TXN, "transaction_timeout_ms": 60_000,
        "producer_id": -1, "producer_epoch": -1})
    assert init["error_code"] == 0
    return client, init["producer_id"], init["producer_epoch"]


def _describe(client: object) -> dict:
    return client.call(ApiKey.DESCRIBE_TRANSACTIONS, 0, {"transactional_ids": [TXN]})[
        "transaction_states"][0]


def _end(client: object, pid: int, epoch: int, commit: bool, version: int = 3) -> int:
    return client.call(ApiKey.END_TXN, version, {"transactional_id": TXN, "producer_id": pid,
                                                 "producer_epoch": epoch,
                                                 "committed": commit})["error_code"]


def _add(client: object, pid: int, epoch: int) -> int:
    response = client.call(ApiKey.ADD_PARTITIONS_TO_TXN, 3, {
        "v3_and_below_transactional_id": TXN, "v3_and_below_producer_id": pid,
        "v3_and_below_producer_epoch": epoch,
        "v3_and_below_topics": [{"name": "t", "partitions": [0]}]})
    return response["results_by_topic_v3_and_below"][0]["results_by_partition"][0][
        "partition_error_code"]


def test_end_txn_when_no_transaction_is_ongoing(cluster_factory, wire) -> None:
    cluster = cluster_factory(transaction_state_log_num_partitions="3")
    client, pid, epoch = _setup(cluster, wire)
    before = _describe(client)
    assert _end(client, pid, epoch, True) == InvalidTxnStateError.errno
    assert _end(client, pid, epoch, False) == InvalidTxnStateError.errno
    assert _describe(client) == before and before["transaction_state"] == "Empty"
    assert _end(client, pid + 1, epoch, True) == InvalidProducerIdMappingError.errno
    assert _end(client, pid, epoch + 1, True) == ProducerFencedError.errno
    assert _end(client, pid, epoch + 1, True, version=1) == InvalidProducerEpochError.errno
    assert _describe(client) == before


def test_stale_epoch_marker_is_refused(cluster_factory, wire) -> None:
    cluster = cluster_factory(transaction_state_log_num_partitions="3")
    client, pid, epoch = _setup(cluster, wire)
    assert _add(client, pid, epoch) == 0
    from kafkalite.records import RecordBatchBuilder
    builder = RecordBatchBuilder(producer_id=pid, producer_epoch=epoch, base_sequence=0,
                                 is_transactional=True)
    builder.append(0, None, b"in-txn")
    produced = client.call(ApiKey.PRODUCE, 8, {
        "transactional_id": TXN, "acks": -1, "timeout_ms": 5000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": builder.build()}]}]})
    assert produced["responses"][0]["partition_responses"][0]["error_code"] == 0
    assert _end(client, pid, epoch, True) == 0  # the marker is at epoch `epoch`
    stale = client.call(ApiKey.WRITE_TXN_MARKERS, 1, {"markers": [{
        "producer_id": pid, "producer_epoch": epoch - 1 if epoch else -1,
        "transaction_result": False, "coordinator_epoch": 0,
        "topics": [{"name": "t", "partition_indexes": [0]}]}]})
    error = stale["markers"][0]["topics"][0]["partitions"][0]["error_code"]
    assert error == InvalidProducerEpochError.errno
    assert read_all(cluster.bootstrap_servers, "t", "read_committed") == [b"in-txn"]


def test_txn_offset_commit_for_a_group_not_added(cluster_factory, wire) -> None:
    cluster = cluster_factory(transaction_state_log_num_partitions="3")
    client, pid, epoch = _setup(cluster, wire)
    assert _add(client, pid, epoch) == 0
    assert client.find_coordinator("g")["error_code"] == 0
    response = client.call(ApiKey.TXN_OFFSET_COMMIT, 3, {
        "transactional_id": TXN, "group_id": "g", "producer_id": pid, "producer_epoch": epoch,
        "generation_id": -1, "member_id": "", "group_instance_id": None,
        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "committed_offset": 5,
                                                 "committed_leader_epoch": -1,
                                                 "committed_metadata": ""}]}]})
    assert response["topics"][0]["partitions"][0]["error_code"] == InvalidTxnStateError.errno
    assert _end(client, pid, epoch, True) == 0
    fetched = client.call(ApiKey.OFFSET_FETCH, 5, {"group_id": "g", "topics": None,
                                                   "require_stable": False})
    assert fetched["topics"] == []
