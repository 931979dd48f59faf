"""Kafka's ZooKeeper layout: node paths and their JSON documents.

Every coordination store holds the cluster's metadata this way (ZooKeeper, a standalone
broker's local store, an EmbeddedCluster's in-memory store), so anyone who knows Kafka can
inspect a kafkalite cluster over ZooKeeper with ``zkCli.sh``:

- ``/brokers/ids/<id>`` (ephemeral): host, port, endpoints, rack, timestamp.
- ``/controller`` (ephemeral): ``{"version":1,"brokerid":N,"timestamp":"<ms>"}``.
- ``/controller_epoch``: the controller epoch as plain digits.
- ``/brokers/topics/<topic>``: ``{"version":3,"topic_id":"<base64>","partitions":
  {"0":[1,2,3],...},"adding_replicas":{},"removing_replicas":{}}`` as Kafka 2.8+ writes it:
  the topic's id (KIP-516, :mod:`~kafkalite_server.topic_ids`), and while partitions are
  being reassigned their ``adding_replicas`` and ``removing_replicas`` (KIP-455), so a new
  controller resumes the moves. Versions 1 and 2 (no id) are read too.
- ``/brokers/topics/<topic>/partitions/<p>/state``: leader, leader_epoch, isr,
  controller_epoch; written only conditionally on its version.
- ``/config/topics/<topic>``, ``/config/brokers/<id>`` and ``/config/brokers/<default>``:
  ``{"version":1,"config":{...}}``; each change also creates the sequential
  ``/config/changes/config_change_NNNNNNNNNN``, ``{"version":2,"entity_path":"topics/<t>"}``,
  which every broker watches.
- ``/admin/delete_topics/<topic>``: a deletion request for the controller.
- ``/latest_producer_id_block``: the last producer id block handed out.
- ``/cluster/id``: ``{"version":"1","id":"..."}``.
"""

from __future__ import annotations

import json
import uuid
from dataclasses import dataclass
from typing import Any

from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.coordination import CoordinationError
from kafkalite_server.topic_ids import uuid_from_text, uuid_text

BROKER_IDS = "/brokers/ids"
TOPICS = "/brokers/topics"
CONTROLLER = "/controller"
CONTROLLER_EPOCH = "/controller_epoch"
CONFIG_TOPICS = "/config/topics"
DELETE_TOPICS = "/admin/delete_topics"
PRODUCER_ID_BLOCK = "/latest_producer_id_block"
CLUSTER_ID = "/cluster/id"
ISR_CHANGE_NOTIFICATION = "/isr_change_notification"
ISR_CHANGE_PREFIX = f"{ISR_CHANGE_NOTIFICATION}/isr_change_"
LOG_DIR_EVENT_NOTIFICATION = "/log_dir_event_notification"
LOG_DIR_EVENT_PREFIX = f"{LOG_DIR_EVENT_NOTIFICATION}/log_dir_event_"
LOG_DIR_FAILURE_EVENT = 1
"""Kafka's LogDirEventNotification event code for a log directory that failed."""

PERSISTENT_PATHS = (BROKER_IDS, TOPICS, CONFIG_TOPICS, DELETE_TOPICS, "/cluster",
                    ISR_CHANGE_NOTIFICATION, LOG_DIR_EVENT_NOTIFICATION)
"""Created by every broker at start (Kafka's ``createTopLevelPaths``)."""


class LayoutError(CoordinationError):
    """A node holds a document that is not what Kafka's layout says it holds."""


def broker_path(broker_id: int) -> str:
    return f"{BROKER_IDS}/{broker_id}"


def topic_path(topic: str) -> str:
    return f"{TOPICS}/{topic}"


def partitions_path(topic: str) -> str:
    return f"{TOPICS}/{topic}/partitions"


def partition_path(topic: str, partition: int) -> str:
    return f"{partitions_path(topic)}/{partition}"


def partition_state_path(topic: str, partition: int) -> str:
    return f"{partition_path(topic, partition)}/state"


def topic_config_path(topic: str) -> str:
    return f"{CONFIG_TOPICS}/{topic}"


def delete_topic_path(topic: str) -> str:
    return f"{DELETE_TOPICS}/{topic}"


def _dump(document: dict[str, Any]) -> bytes:
    return json.dumps(document, separators=(",", ":")).encode()


def _load(data: bytes, what: str) -> Any:
    try:
        return json.loads(data.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise LayoutError(f"{what}: not JSON ({exc})") from None


# ------------------------------------------------------------------ brokers and controller

def encode_broker(endpoint: BrokerEndpoint, now_ms: int) -> bytes:
    listeners = endpoint.listeners or (("PLAINTEXT", endpoint.host, endpoint.port,
                                        "PLAINTEXT"),)
    return _dump({"version": 4, "host": endpoint.host, "port": endpoint.port, "jmx_port": -1,
                  "timestamp": str(now_ms),
                  "endpoints": [f"{name}://{host}:{port}" for name, host, port, _ in listeners],
                  "listener_security_protocol_map": {name: protocol
                                                     for name, _, _, protocol in listeners},
                  "rack": endpoint.rack})


def decode_broker(broker_id: int, data: bytes) -> BrokerEndpoint:
    document = _load(data, broker_path(broker_id))
    try:
        protocols = document.get("listener_security_protocol_map") or {}
        listeners = []
        for text in document.get("endpoints") or ():
            name, _, address = str(text).partition("://")
            host, _, port = address.rpartition(":")
            listeners.append((name, host.strip("[]"), int(port),
                              str(protocols.get(name, "PLAINTEXT"))))
        if listeners == [("PLAINTEXT", document["host"], document["port"], "PLAINTEXT")]:
            listeners = []  # the one default listener
        return BrokerEndpoint(broker_id, str(document["host"]), int(document["port"]),
                              document.get("rack"), tuple(listeners))
    except (KeyError, TypeError, ValueError) as exc:
        raise LayoutError(f"{broker_path(broker_id)}: {exc!r}") from None


def encode_controller(broker_id: int, now_ms: int) -> bytes:
    return _dump({"version": 1, "brokerid": broker_id, "timestamp": str(now_ms)})


def decode_controller(data: bytes) -> int:
    try:
        return int(_load(data, CONTROLLER)["brokerid"])
    except (KeyError, TypeError, ValueError) as exc:
        raise LayoutError(f"{CONTROLLER}: {exc!r}") from None


def encode_epoch(epoch: int) -> bytes:
    return str(epoch).encode()


def decode_epoch(data: bytes) -> int:
    try:
        return int(data.decode())
    except ValueError:
        raise LayoutError(f"{CONTROLLER_EPOCH}: {data!r} is not a number") from None


# ------------------------------------------------------------------ topics

def encode_assignment(assignment: dict[int, list[int]],
                      adding: dict[int, list[int]] | None = None,
                      removing: dict[int, list[int]] | None = None, *,
                      topic_id: uuid.UUID | None = None) -> bytes:
    """Version 3 (Kafka 2.8+) with the topic's id; while partitions are being reassigned
    (KIP-455) their ``partitions`` entry is the full replica set (target first, then the
    original replicas leaving), ``adding_replicas`` and ``removing_replicas`` say which are
    which. Without an id (only a topic that never had one), version 1 or 2 as before."""
    document: dict[str, Any] = {"version": 1, "partitions": _by_partition(assignment)}
    if adding or removing or topic_id is not None:
        document.update(version=2, adding_replicas=_by_partition(adding or {}),
                        removing_replicas=_by_partition(removing or {}))
    if topic_id is not None:
        document.update(version=3, topic_id=uuid_text(topic_id))
    return _dump(document)


def _by_partition(replicas: dict[int, list[int]]) -> dict[str, list[int]]:
    return {str(p): list(brokers) for p, brokers in sorted(replicas.items())}


def decode_assignment(topic: str, data: bytes) -> dict[int, list[int]]:
    try:
        partitions = _load(data, topic_path(topic))["partitions"]
        return {int(p): [int(b) for b in replicas] for p, replicas in partitions.items()}
    except (KeyError, TypeError, ValueError, AttributeError) as exc:
        raise LayoutError(f"{topic_path(topic)}: {exc!r}") from None


def _replica_map(value: Any) -> dict[int, list[int]]:
    return {int(p): [int(b) for b in replicas] for p, replicas in (value or {}).items()
            if replicas}


def decode_reassigning(topic: str, data: bytes
                       ) -> tuple[dict[int, list[int]], dict[int, list[int]]]:
    """A version 2 assignment's (adding_replicas, removing_replicas) by partition; empty
    for a version 1 one."""
    document = _load(data, topic_path(topic))
    try:
        return (_replica_map(document.get("adding_replicas")),
                _replica_map(document.get("removing_replicas")))
    except (TypeError, ValueError, AttributeError) as exc:
        raise LayoutError(f"{topic_path(topic)}: {exc!r}") from None


def decode_topic_id(topic: str, data: bytes) -> uuid.UUID | None:
    """The topic's id, or None for a node written before topics had one."""
    document = _load(data, topic_path(topic))
    text = document.get("topic_id") if isinstance(document, dict) else None
    if text is None:
        return None
    try:
        return uuid_from_text(str(text))
    except ValueError as exc:
        raise LayoutError(f"{topic_path(topic)}: {exc}") from None


@dataclass(frozen=True, slots=True)
class LeaderIsr:
    """The partition state node's document."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    controller_epoch: int

    def encode(self) -> bytes:
        return _dump({"controller_epoch": self.controller_epoch, "leader": self.leader,
                      "version": 1, "leader_epoch": self.leader_epoch, "isr": list(self.isr)})

    @classmethod
    def decode(cls, path: str, data: bytes) -> LeaderIsr:
        document = _load(data, path)
        try:
            return cls(int(document["leader"]), int(document["leader_epoch"]),
                       tuple(int(b) for b in document["isr"]),
                       int(document["controller_epoch"]))
        except (KeyError, TypeError, ValueError) as exc:
            raise LayoutError(f"{path}: {exc!r}") from None


def encode_isr_change(partitions: list[tuple[str, int]]) -> bytes:
    """A leader changed these partitions' ISR (the controller re-reads their state)."""
    return _dump({"version": 1, "partitions": [{"topic": t, "partition": p}
                                               for t, p in partitions]})


def decode_isr_change(path: str, data: bytes) -> list[tuple[str, int]]:
    try:
        return [(str(entry["topic"]), int(entry["partition"]))
                for entry in _load(data, path)["partitions"]]
    except (KeyError, TypeError, ValueError) as exc:
        raise LayoutError(f"{path}: {exc!r}") from None


def encode_log_dir_event(broker_id: int) -> bytes:
    """A broker's log directory failed (the controller asks it which replicas it lost)."""
    return _dump({"version": 1, "broker": broker_id, "event": LOG_DIR_FAILURE_EVENT})


def decode_log_dir_event(path: str, data: bytes) -> int:
    """The broker whose log directory failed."""
    try:
        document = _load(data, path)
        if int(document["event"]) != LOG_DIR_FAILURE_EVENT:
            raise ValueError(f"unknown event {document['event']!r}")
        return int(document["broker"])
    except (KeyError, TypeError, ValueError) as exc:
        raise LayoutError(f"{path}: {exc!r}") from None


def encode_topic_config(configs: dict[str, str]) -> bytes:
    """The document of every ``/config/<type>/<name>`` node (topics and brokers alike)."""
    return _dump({"version": 1, "config": dict(sorted(configs.items()))})


def decode_topic_config(topic: str, data: bytes) -> dict[str, str]:
    return decode_config(topic_config_path(topic), data)


# ------------------------------------------------------------------ cluster id, producer ids

def encode_cluster_id(cluster_id: str) -> bytes:
    return _dump({"version": "1", "id": cluster_id})


def decode_cluster_id(data: bytes) -> str:
    try:
        return str(_load(data, CLUSTER_ID)["id"])
    except (KeyError, TypeError) as exc:
        raise LayoutError(f"{CLUSTER_ID}: {exc!r}") from None


def encode_producer_id_block(broker_id: int, start: int, end: int) -> bytes:
    return _dump({"version": 1, "broker": broker_id, "block_start": str(start),
                  "block_end": str(end)})


def decode_producer_id_block(data: bytes) -> int:
    """The block's last id."""
    try:
        return int(_load(data, PRODUCER_ID_BLOCK)["block_end"])
    except (KeyError, TypeError, ValueError) as exc:
        raise LayoutError(f"{PRODUCER_ID_BLOCK}: {exc!r}") from None


# ------------------------------------------------------------------ dynamic configs

CONFIG_BROKERS = "/config/brokers"
CONFIG_CHANGES = "/config/changes"
CONFIG_CHANGE_PREFIX = f"{CONFIG_CHANGES}/config_change_"
DEFAULT_BROKER_ENTITY = "<default>"
"""``/config/brokers/<default>`` holds the cluster-wide dynamic broker configs."""


def broker_config_path(resource_name: str) -> str:
    """``resource_name`` is a broker id, or ``""`` for the cluster-wide defaults."""
    return f"{CONFIG_BROKERS}/{resource_name or DEFAULT_BROKER_ENTITY}"


def broker_config_entity(resource_name: str) -> str:
    return f"brokers/{resource_name or DEFAULT_BROKER_ENTITY}"


def topic_config_entity(topic: str) -> str:
    return f"topics/{topic}"


def decode_config(path: str, data: bytes) -> dict[str, str]:
    """A ``/config/<type>/<name>`` node's configs."""
    try:
        return {str(k): str(v) for k, v in _load(data, path)["config"].items()}
    except (KeyError, TypeError, AttributeError) as exc:
        raise LayoutError(f"{path}: {exc!r}") from None


def encode_config_change(entity_path: str) -> bytes:
    """A change notification (version 2): which entity's config node changed."""
    return _dump({"version": 2, "entity_path": entity_path})


def decode_config_change(path: str, data: bytes) -> str:
    try:
        return str(_load(data, path)["entity_path"])
    except (KeyError, TypeError) as exc:
        raise LayoutError(f"{path}: {exc!r}") from None
