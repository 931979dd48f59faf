"""DescribeCluster, DescribeLogDirs, ElectLeaders and the transaction APIs as pure pairs,
and the coordinator lookup's own pair."""

from __future__ import annotations

from typing import Any

from kafkalite.admin.cluster import DescribeCluster, DescribeLogDirs
from kafkalite.admin.elections import ElectLeaders, first_real_failure
from kafkalite.admin.lookup import CLUSTER, Controller, Coordinator, EachBroker
from kafkalite.admin.reassignments import AlterPartitionReassignments, ListPartitionReassignments
from kafkalite.admin.transactions import (
    AbortTransaction,
    AbortTransactionSpec,
    DescribeProducers,
    DescribeTransactions,
    ListTransactions,
    PartitionProducerState,
    ProducerState,
    TransactionListing,
    TransactionState,
)
from kafkalite.client.coordinator import GROUP_KEY, TRANSACTION_KEY
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    ClusterAuthorizationFailedError,
    ElectionNotNeededError,
    InvalidProducerEpochError,
    NoReassignmentInProgressError,
    NotControllerError,
    PreferredLeaderNotAvailableError,
    TransactionalIdNotFoundError,
)
from kafkalite.protocol.schemas.elections import ElectionType
from kafkalite.structs import TopicPartition

T0 = TopicPartition("orders", 0)


def test_describe_cluster_pair() -> None:
    handler = DescribeCluster()
    assert handler.build_request(0, [CLUSTER]).body == {
        "include_cluster_authorized_operations": True}
    outcome = handler.handle_response(0, [CLUSTER], {
        "error_code": 0, "error_message": None, "cluster_id": "c1", "controller_id": 1,
        "brokers": [{"broker_id": 1, "host": "h", "port": 9092, "rack": None}],
        "cluster_authorized_operations": (1 << 8) | (1 << 7)})
    assert outcome.completed[CLUSTER] == {
        "cluster_id": "c1", "controller_id": 1,
        "brokers": [{"broker_id": 1, "host": "h", "port": 9092, "rack": None}],
        "authorized_operations": ["ALTER", "DESCRIBE"]}
    refused = handler.handle_response(0, [CLUSTER], {
        "error_code": ClusterAuthorizationFailedError.errno, "error_message": "denied"})
    assert "describing the cluster: denied" in str(refused.failed[CLUSTER])


def test_describe_log_dirs_asks_each_broker() -> None:
    handler = DescribeLogDirs({"orders": [0, 1]})
    assert isinstance(handler.lookup, EachBroker)
    assert handler.build_request(2, [2]).body == {"topics": [{"topic": "orders",
                                                              "partitions": [0, 1]}]}
    log_dir = {"error_code": 0, "log_dir": "/d", "topics": [], "total_bytes": 9,
               "usable_bytes": 3}
    assert handler.handle_response(2, [2], {"error_code": 0, "results": [log_dir]}) \
        .completed == {2: [log_dir]}


def test_elect_leaders_pair() -> None:
    handler = ElectLeaders(ElectionType.PREFERRED, {"orders": [0, 1]}, 5000)
    assert isinstance(handler.lookup, Controller)
    assert handler.build_request(0, [CLUSTER]).body == {
        "election_type": 0, "topic_partitions": [{"topic": "orders", "partitions": [0, 1]}],
        "timeout_ms": 5000}
    assert ElectLeaders(1, None, 1).build_request(0, [CLUSTER]).body["topic_partitions"] is None
    outcome = handler.handle_response(0, [CLUSTER], {
        "error_code": 0, "replica_election_results": [{"topic": "orders", "partition_result": [
            {"partition_id": 0, "error_code": 0, "error_message": None},
            {"partition_id": 1, "error_code": ElectionNotNeededError.errno,
             "error_message": "already leads"},
            {"partition_id": 2, "error_code": PreferredLeaderNotAvailableError.errno,
             "error_message": "offline"}]}]})
    results = outcome.completed[CLUSTER]
    assert results[T0] is None
    assert isinstance(results[TopicPartition("orders", 1)], ElectionNotNeededError)
    failure = first_real_failure(results.values())
    assert isinstance(failure, PreferredLeaderNotAvailableError)
    assert "electing a leader for orders-2: offline" in str(failure)
    moved = handler.handle_response(0, [CLUSTER], {"error_code": NotControllerError.errno,
                                                   "replica_election_results": []})
    assert list(moved.look_up_again) == [CLUSTER]


def test_partition_reassignment_pairs() -> None:
    alter = AlterPartitionReassignments({T0: [3, 4], TopicPartition("orders", 1): None}, 5000)
    assert isinstance(alter.lookup, Controller)
    assert alter.build_request(0, [CLUSTER]).body == {"timeout_ms": 5000, "topics": [
        {"name": "orders", "partitions": [{"partition_index": 0, "replicas": [3, 4]},
                                          {"partition_index": 1, "replicas": None}]}]}
    results = alter.handle_response(0, [CLUSTER], {
        "error_code": 0, "error_message": None, "responses": [{"name": "orders", "partitions": [
            {"partition_index": 0, "error_code": 0, "error_message": None},
            {"partition_index": 1, "error_code": NoReassignmentInProgressError.errno,
             "error_message": "nothing to cancel"}]}]}).completed[CLUSTER]
    assert results[T0] is None
    assert isinstance(results[TopicPartition("orders", 1)], NoReassignmentInProgressError)
    assert "reassigning orders-1: nothing to cancel" in str(results[TopicPartition("orders", 1)])
    moved = alter.handle_response(0, [CLUSTER], {"error_code": NotControllerError.errno,
                                                 "error_message": None, "responses": []})
    assert list(moved.look_up_again) == [CLUSTER]
    listing = ListPartitionReassignments(None, 5000)
    assert listing.build_request(0, [CLUSTER]).body == {"timeout_ms": 5000, "topics": None}
    assert listing.handle_response(0, [CLUSTER], {
        "error_code": 0, "error_message": None, "topics": [{"name": "orders", "partitions": [
            {"partition_index": 0, "replicas": [3, 1], "adding_replicas": [3],
             "removing_replicas": [1]}]}]}).completed[CLUSTER] == {T0: {
                 "replicas": [3, 1], "adding_replicas": [3], "removing_replicas": [1]}}


def test_list_transactions_needs_the_version_its_filters_need() -> None:
    plain = ListTransactions([7], [TransactionState.ONGOING, "PrepareCommit"], None)
    request = plain.build_request(0, [0])
    assert request.body == {"state_filters": ["Ongoing", "PrepareCommit"],
                            "producer_id_filters": [7], "duration_filter": -1}
    assert request.min_version == 0
    assert ListTransactions(None, None, 60000).build_request(0, [0]).min_version == 1
    patterned = ListTransactions(None, None, None, "pay.*").build_request(0, [0])
    assert (patterned.min_version, patterned.needs) == (
        2, "list_transactions(transactional_id_pattern=...)")
    outcome = plain.handle_response(0, [0], {"error_code": 0, "transaction_states": [
        {"transactional_id": "t1", "producer_id": 7, "transaction_state": "Ongoing"},
        {"transactional_id": "t2", "producer_id": 8, "transaction_state": "Brand-new"}]})
    assert outcome.completed == {0: [
        TransactionListing("t1", 7, TransactionState.ONGOING),
        TransactionListing("t2", 8, TransactionState.UNKNOWN)]}


def described_txn(txn_id: str, code: int = 0) -> dict[str, Any]:
    return {"error_code": code, "transactional_id": txn_id, "transaction_state": "Ongoing",
            "transaction_timeout_ms": 60000, "transaction_start_time_ms": 5,
            "producer_id": 7, "producer_epoch": 1,
            "topics": [{"topic": "orders", "partitions": [0, 1]}]}


def test_describe_transactions_pair() -> None:
    handler = DescribeTransactions()
    assert isinstance(handler.lookup, Coordinator)
    assert handler.lookup.key_type == TRANSACTION_KEY
    outcome = handler.handle_response(3, ["t1", "nope"], {"transaction_states": [
        described_txn("t1"), described_txn("nope", TransactionalIdNotFoundError.errno)]})
    description = outcome.completed["t1"]
    assert (description.coordinator_id, description.state, description.topic_partitions) == (
        3, TransactionState.ONGOING, {T0, TopicPartition("orders", 1)})
    assert "describing transactional id 'nope'" in str(outcome.failed["nope"])


def test_describe_producers_pair() -> None:
    handler = DescribeProducers()
    assert handler.build_request(0, [TopicPartition("orders", 1), T0]).body == {
        "topics": [{"name": "orders", "partition_indexes": [0, 1]}]}
    outcome = handler.handle_response(0, [T0], {"topics": [{"name": "orders", "partitions": [
        {"partition_index": 0, "error_code": 0, "error_message": None, "active_producers": [
            {"producer_id": 7, "producer_epoch": 1, "last_sequence": 4, "last_timestamp": 9,
             "coordinator_epoch": 2, "current_txn_start_offset": 3}]}]}]})
    assert outcome.completed == {T0: PartitionProducerState([ProducerState(7, 1, 4, 9, 2, 3)])}


def test_abort_transaction_writes_one_abort_marker() -> None:
    spec = AbortTransactionSpec(T0, 7, 1, 2)
    handler = AbortTransaction(spec)
    request = handler.build_request(0, [T0])
    assert request.api_key is ApiKey.WRITE_TXN_MARKERS
    assert request.body == {"markers": [{
        "producer_id": 7, "producer_epoch": 1, "transaction_result": False,
        "topics": [{"name": "orders", "partition_indexes": [0]}], "coordinator_epoch": 2}]}
    refused = handler.handle_response(0, [T0], {"markers": [{"producer_id": 7, "topics": [
        {"name": "orders", "partitions": [
            {"partition_index": 0, "error_code": InvalidProducerEpochError.errno}]}]}]})
    assert "aborting producer 7's transaction on orders-0" in str(refused.failed[T0])


def test_the_coordinator_lookup_reads_both_find_coordinator_shapes() -> None:
    lookup = Coordinator(GROUP_KEY)
    assert lookup.build_request("g").body == {"key": "g", "key_type": 0,
                                              "coordinator_keys": ["g"]}
    assert lookup.handle_response("g", {"error_code": 0, "node_id": 4}).mapped == {"g": 4}
    batched = {"coordinators": [{"key": "g", "error_code": 0, "node_id": 5}]}
    assert lookup.handle_response("g", batched).mapped == {"g": 5}
    waiting = lookup.handle_response("g", {"error_code": 15, "error_message": None,
                                           "node_id": -1})
    assert "finding the coordinator of group 'g'" in str(waiting.unmapped["g"])
    refused = lookup.handle_response("g", {"error_code": 30, "error_message": "denied",
                                           "node_id": -1})
    assert list(refused.failed) == ["g"]
