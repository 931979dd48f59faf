"""Controller messages survive the trip through Kafka's inter-broker request encodings."""

from __future__ import annotations

from kafkalite.protocol import (
    ApiKey,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
)
from kafkalite.protocol.headers import RequestHeader
from kafkalite_server.cluster import wire
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.messages import (
    LeaderAndIsr,
    PartitionState,
    StopReplica,
    UpdateMetadata,
)
from kafkalite_server.topic_ids import new_topic_id

ORDERS = new_topic_id()
STATE = PartitionState("orders", 3, 2, 7, (2, 1), (1, 2, 3), 5, (3,), topic_id=ORDERS)


def _round_trip(message):
    api_key, version, body = wire.to_request(message)
    frame = encode_request(api_key, version, 9, "controller-1", body)[4:]
    header, offset = decode_request_header(frame)
    return decode_request_body(header, frame, offset)


def test_leader_and_isr_round_trips():
    message = LeaderAndIsr(1, 4, (PartitionState("orders", 3, 2, 7, (2, 1), (1, 2, 3), 5,
                                                 is_new=True, topic_id=ORDERS),),
                           (BrokerEndpoint(2, "h2", 9093),))
    assert wire.leader_and_isr_from(_round_trip(message)) == message


def test_update_metadata_round_trips_with_racks_and_offline_replicas():
    message = UpdateMetadata(1, 4, (STATE,), (BrokerEndpoint(1, "h1", 9092, "r1"),
                                              BrokerEndpoint(2, "h2", 9093, None)))
    assert wire.update_metadata_from(_round_trip(message)) == message


def test_stop_replica_round_trips_grouped_by_topic():
    message = StopReplica(1, 4, (("a", 0), ("a", 2), ("b", 1)), delete=True)
    assert wire.stop_replica_from(_round_trip(message)) == message


def test_every_controller_message_carries_the_target_brokers_epoch():
    state = PartitionState("orders", 3, 2, 7, (2, 1), (1, 2, 3), 5)
    for message in (LeaderAndIsr(1, 4, (state,), (), broker_epoch=4242),
                    UpdateMetadata(1, 4, (state,), (), broker_epoch=4242),
                    StopReplica(1, 4, (("orders", 3),), False, broker_epoch=4242)):
        _api_key, _version, body = wire.to_request(message)
        assert body["broker_epoch"] == 4242
        decoded = _round_trip(message)
        parse = {LeaderAndIsr: wire.leader_and_isr_from,
                 UpdateMetadata: wire.update_metadata_from,
                 StopReplica: wire.stop_replica_from}[type(message)]
        assert parse(decoded).broker_epoch == 4242


def test_versions_before_broker_epochs_still_decode():
    """A controller of an earlier release sends LeaderAndIsr v1 and UpdateMetadata v4
    (topic names per partition, no broker epoch)."""
    old_leader_and_isr = {
        "controller_id": 1, "controller_epoch": 4, "ungrouped_partition_states": [
            {"topic_name": "orders", "partition_index": 3, "controller_epoch": 4, "leader": 2,
             "leader_epoch": 7, "isr": [2, 1], "partition_epoch": 5, "replicas": [1, 2, 3],
             "is_new": False}],
        "live_leaders": []}
    frame = encode_request(4, 1, 9, "controller-1", old_leader_and_isr)[4:]
    header, offset = decode_request_header(frame)
    message = wire.leader_and_isr_from(decode_request_body(header, frame, offset))
    assert message.broker_epoch == -1
    assert message.partitions == (PartitionState("orders", 3, 2, 7, (2, 1), (1, 2, 3), 5),)


def test_the_messages_carry_topic_ids_in_kafkas_versions():
    """LeaderAndIsr v5 and UpdateMetadata v7 are the versions with a topic id (KIP-516)."""
    assert wire.to_request(LeaderAndIsr(1, 4, (STATE,)))[1] == 5
    assert wire.to_request(UpdateMetadata(1, 4, (STATE,), ()))[1] == 7
    body = _round_trip(UpdateMetadata(1, 4, (STATE,), ()))
    assert body["topic_states"][0]["topic_id"] == ORDERS


def _answered(version, errors, message):
    body = {"error_code": 0, **wire.leader_and_isr_errors(version, errors, message)}
    header = RequestHeader(ApiKey.LEADER_AND_ISR, version, 9, "controller-1")
    frame = b"".join(encode_response(header, body))[4:]
    return decode_response(ApiKey.LEADER_AND_ISR, version, frame)[1]


def test_leader_and_isr_errors_come_back_by_topic_id_from_v5_and_by_name_before():
    other = PartitionState("refunds", 0, 2, 1, (2,), (2,), 0, topic_id=new_topic_id())
    message = LeaderAndIsr(1, 4, (STATE, other))
    errors = {("orders", 3): 0, ("refunds", 0): 103}
    by_id = _answered(5, errors, message)
    assert by_id["topics"] == [
        {"topic_id": ORDERS, "partition_errors": [{"partition_index": 3, "error_code": 0}]},
        {"topic_id": other.topic_id,
         "partition_errors": [{"partition_index": 0, "error_code": 103}]}]
    assert wire.partition_errors_from(by_id, message) == errors
    assert wire.partition_errors_from(_answered(2, errors, message), message) == errors
