"""Controller messages to and from the bodies of Kafka's inter-broker requests (keys 4-6).

The network channel encodes with :func:`to_request`, in the versions that carry the target
broker's epoch (KIP-380) and each topic's id (KIP-516): LeaderAndIsr v5, StopReplica v1,
UpdateMetadata v7. The receiving broker's handlers decode any version it serves with the
``*_from`` functions and hand the same objects to its inbox.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from kafkalite.protocol import ApiKey
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.messages import (
    ControllerMessage,
    LeaderAndIsr,
    PartitionState,
    StopReplica,
    UpdateMetadata,
)
from kafkalite_server.topic_ids import ZERO

LISTENER = "PLAINTEXT"
SECURITY_PROTOCOLS = {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
"""Kafka's security protocol ids (UpdateMetadata endpoints)."""
_PROTOCOL_NAMES = {number: name for name, number in SECURITY_PROTOCOLS.items()}
VERSIONS = {ApiKey.LEADER_AND_ISR: 5, ApiKey.STOP_REPLICA: 1, ApiKey.UPDATE_METADATA: 7}
INCREMENTAL = 0
"""LeaderAndIsr v5's ``type``: the request does not list every partition of the broker
(the only kind this controller sends; Kafka's ZooKeeper-mode controller sends it too)."""


def _grouped(states: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Partition states grouped by topic (LeaderAndIsr v2+, UpdateMetadata v5+), each
    topic with its id."""
    topics: dict[str, tuple[uuid.UUID, list[dict[str, Any]]]] = {}
    for state in states:
        topic_id = state.pop("topic_id")
        topics.setdefault(state.pop("topic_name"), (topic_id, []))[1].append(state)
    return [{"topic_name": name, "topic_id": topic_id, "partition_states": partitions}
            for name, (topic_id, partitions) in topics.items()]


def _ungrouped(body: dict[str, Any]) -> list[dict[str, Any]]:
    """Every partition state with its topic name, whichever version ``body`` came in."""
    return [{"topic_id": ZERO, **state} for state in body["ungrouped_partition_states"]] + [
        {"topic_name": topic["topic_name"], "topic_id": topic.get("topic_id", ZERO), **state}
        for topic in body["topic_states"] for state in topic["partition_states"]]


def to_request(message: ControllerMessage) -> tuple[ApiKey, int, dict[str, Any]]:
    """(api key, version, body) for the message."""
    if isinstance(message, LeaderAndIsr):
        body: dict[str, Any] = {
            "controller_id": message.controller_id,
            "controller_epoch": message.controller_epoch,
            "broker_epoch": message.broker_epoch,
            "type": INCREMENTAL,
            "topic_states": _grouped([
                {"topic_name": s.topic, "topic_id": s.topic_id, "partition_index": s.partition,
                 "controller_epoch": message.controller_epoch, "leader": s.leader,
                 "leader_epoch": s.leader_epoch, "isr": list(s.isr),
                 "partition_epoch": s.zk_version, "replicas": list(s.replicas),
                 "adding_replicas": [], "removing_replicas": [], "is_new": s.is_new}
                for s in message.partitions]),
            "live_leaders": [{"broker_id": b.node_id, "host_name": b.host, "port": b.port}
                             for b in message.live_leaders],
        }
        return ApiKey.LEADER_AND_ISR, VERSIONS[ApiKey.LEADER_AND_ISR], body
    if isinstance(message, StopReplica):
        topics: dict[str, list[int]] = {}
        for topic, index in message.partitions:
            topics.setdefault(topic, []).append(index)
        body = {"controller_id": message.controller_id,
                "controller_epoch": message.controller_epoch,
                "broker_epoch": message.broker_epoch,
                "delete_partitions": message.delete,
                "topics": [{"name": name, "partition_indexes": indexes}
                           for name, indexes in topics.items()]}
        return ApiKey.STOP_REPLICA, VERSIONS[ApiKey.STOP_REPLICA], body
    body = {
        "controller_id": message.controller_id,
        "controller_epoch": message.controller_epoch,
        "broker_epoch": message.broker_epoch,
        "topic_states": _grouped([
            {"topic_name": s.topic, "topic_id": s.topic_id, "partition_index": s.partition,
             "controller_epoch": message.controller_epoch, "leader": s.leader,
             "leader_epoch": s.leader_epoch, "isr": list(s.isr), "zk_version": s.zk_version,
             "replicas": list(s.replicas), "offline_replicas": list(s.offline_replicas)}
            for s in message.partitions]),
        "live_brokers": [
            {"id": b.node_id, "rack": b.rack,
             "endpoints": [{"port": port, "host": host, "listener": name,
                            "security_protocol": SECURITY_PROTOCOLS[protocol]}
                           for name, host, port, protocol in _listeners_of(b)]}
            for b in message.live_brokers],
    }
    return ApiKey.UPDATE_METADATA, VERSIONS[ApiKey.UPDATE_METADATA], body


def partition_errors_from(response: dict[str, Any], message: ControllerMessage
                          ) -> dict[tuple[str, int], int]:
    """The per-partition error codes of a LeaderAndIsr or StopReplica response (none for
    UpdateMetadata); LeaderAndIsr v5+ names topics by id, the ids of ``message``."""
    errors = {(entry["topic_name"], entry["partition_index"]): entry["error_code"]
              for entry in response.get("partition_errors", [])}
    if "topics" in response and isinstance(message, LeaderAndIsr):
        names = {s.topic_id: s.topic for s in message.partitions}
        for topic in response["topics"]:
            name = names.get(topic["topic_id"])
            if name is not None:
                errors.update({(name, entry["partition_index"]): entry["error_code"]
                               for entry in topic["partition_errors"]})
    return errors


def leader_and_isr_errors(version: int, errors: Mapping[tuple[str, int], int],
                          message: LeaderAndIsr) -> dict[str, Any]:
    """A LeaderAndIsr response's per-partition errors in ``version``'s form: by topic
    name, or (v5+) by topic id."""
    if version < 5:
        return {"partition_errors": [
            {"topic_name": topic, "partition_index": index, "error_code": code}
            for (topic, index), code in errors.items()]}
    ids = {s.topic: s.topic_id for s in message.partitions}
    by_id: dict[uuid.UUID, list[dict[str, Any]]] = {}
    for (topic, index), code in errors.items():
        by_id.setdefault(ids.get(topic, ZERO), []).append(
            {"partition_index": index, "error_code": code})
    return {"topics": [{"topic_id": topic_id, "partition_errors": partitions}
                       for topic_id, partitions in by_id.items()]}


def _listeners_of(endpoint: BrokerEndpoint) -> tuple[tuple[str, str, int, str], ...]:
    return endpoint.listeners or ((LISTENER, endpoint.host, endpoint.port, "PLAINTEXT"),)


def leader_and_isr_from(body: dict[str, Any]) -> LeaderAndIsr:
    return LeaderAndIsr(
        body["controller_id"], body["controller_epoch"],
        tuple(PartitionState(s["topic_name"], s["partition_index"], s["leader"],
                             s["leader_epoch"], tuple(s["isr"]), tuple(s["replicas"]),
                             s["partition_epoch"], is_new=s["is_new"],
                             topic_id=s["topic_id"])
              for s in _ungrouped(body)),
        tuple(BrokerEndpoint(b["broker_id"], b["host_name"], b["port"])
              for b in body["live_leaders"]),
        body["broker_epoch"])


def stop_replica_from(body: dict[str, Any]) -> StopReplica:
    return StopReplica(body["controller_id"], body["controller_epoch"],
                       tuple((t["name"], index) for t in body["topics"]
                             for index in t["partition_indexes"]),
                       body["delete_partitions"], body["broker_epoch"])


def update_metadata_from(body: dict[str, Any]) -> UpdateMetadata:
    brokers = []
    for broker in body["live_brokers"]:
        endpoints = broker["endpoints"]
        if endpoints:
            listeners = tuple((e["listener"], e["host"], e["port"],
                               _PROTOCOL_NAMES.get(e["security_protocol"], "PLAINTEXT"))
                              for e in endpoints)
            if listeners == ((LISTENER, listeners[0][1], listeners[0][2], "PLAINTEXT"),):
                listeners = ()  # the one default listener: as the sender had it
            brokers.append(BrokerEndpoint(broker["id"], endpoints[0]["host"],
                                          endpoints[0]["port"], broker["rack"], listeners))
    return UpdateMetadata(
        body["controller_id"], body["controller_epoch"],
        tuple(PartitionState(s["topic_name"], s["partition_index"], s["leader"],
                             s["leader_epoch"], tuple(s["isr"]), tuple(s["replicas"]),
                             s["zk_version"], tuple(s["offline_replicas"]),
                             topic_id=s["topic_id"])
              for s in _ungrouped(body)),
        tuple(brokers), body["broker_epoch"])
