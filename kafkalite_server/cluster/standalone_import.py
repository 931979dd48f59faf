"""Upgrading a standalone broker's data dir from an earlier version: its metadata files,
once, into the local coordination store, in Kafka's ZooKeeper layout.

Before a standalone broker became a one-broker cluster, it kept its metadata in files of
its data dir. The first start of a store that was never written (:attr:`LocalEnsemble.
empty`) imports them, in one atomic batch:

- ``cluster-metadata.json``: the cluster id; each topic's assignment (its one replica, the
  leader it had), configs and partition states, with their leader epochs (epochs never go
  backwards, or followers and clients would take the old ones for newer);
- ``security-metadata.json``: ACLs, SCRAM credentials and the secret behind SCRAM decoys;
- ``producer-id-block``: the first id of the next block, so no producer id is issued twice;
- ``dynamic-broker-configs.json``: the dynamic broker configs.

The files are kept as they are, and never read again: the store is not empty after the
import, so a later start does not import again, and changes made since survive. A store
that is new in a data dir holding no such files starts with the cluster id of the log
dir's ``meta.properties``, if it has one, so the logs still belong to their cluster.
"""

from __future__ import annotations

import base64
import json
import logging
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

from kafkalite.errors import ConfigError, KafkaError
from kafkalite.protocol.scram import ScramCredential, ScramError
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.coordination import Create, parent_of
from kafkalite_server.cluster.dynamic_config import CLUSTER_DEFAULT, validate_dynamic
from kafkalite_server.cluster.local_store import LocalEnsemble
from kafkalite_server.cluster.meta_properties import read_meta_properties
from kafkalite_server.cluster.producer_ids import BLOCK_SIZE
from kafkalite_server.config import BrokerConfig
from kafkalite_server.security.acls import AclBinding
from kafkalite_server.security.security_store import (
    SCRAM_DECOY_SECRET,
    acl_nodes,
    user_document,
    user_path,
)

log = logging.getLogger(__name__)

T = TypeVar("T")
METADATA_FILE = "cluster-metadata.json"
SECURITY_FILE = "security-metadata.json"
PRODUCER_ID_FILE = "producer-id-block"
DYNAMIC_CONFIG_FILE = "dynamic-broker-configs.json"
IMPORTED_CONTROLLER_EPOCH = 1
"""The standalone controller's constant epoch: the partition states were its decisions."""


class StandaloneImportError(KafkaError):
    """A metadata file of the old standalone broker cannot be read."""


def import_standalone_metadata(store: LocalEnsemble, data_dir: Path,
                               config: BrokerConfig) -> None:
    """Imports the files found in ``data_dir`` into ``store`` (which must be empty)."""
    nodes: dict[str, bytes] = {}
    found = [name for name in (METADATA_FILE, SECURITY_FILE, PRODUCER_ID_FILE,
                               DYNAMIC_CONFIG_FILE) if (data_dir / name).exists()]
    cluster_id = read_meta_properties(Path(config.log_dirs[0])).get("cluster.id")
    if METADATA_FILE in found:
        cluster_id = _read(data_dir / METADATA_FILE, _topic_nodes, nodes)
    if cluster_id:
        nodes[layout.CLUSTER_ID] = layout.encode_cluster_id(cluster_id)
    if SECURITY_FILE in found:
        _read(data_dir / SECURITY_FILE, _security_nodes, nodes)
    if PRODUCER_ID_FILE in found:
        _read(data_dir / PRODUCER_ID_FILE,
              lambda text, into: _producer_id_node(text, into, config.broker_id), nodes)
    if DYNAMIC_CONFIG_FILE in found:
        _read(data_dir / DYNAMIC_CONFIG_FILE, _broker_config_nodes, nodes)
    if not nodes:
        return
    session = store.connect()
    try:
        session.commit([Create(path, nodes.get(path, b"")) for path in _with_ancestors(nodes)])
    finally:
        session.close()
    if found:
        log.info("imported %s from %s into the coordination store in %s, once; the files "
                 "are kept and no longer read", ", ".join(found), data_dir, store.directory)


def _read(path: Path, parse: Callable[[Any, dict[str, bytes]], T],
          nodes: dict[str, bytes]) -> T:
    """``parse(content, nodes)`` over the file (JSON, or the text of ``producer-id-block``),
    any problem named with the file."""
    try:
        text = path.read_text(encoding="utf-8")
        content = text if path.name == PRODUCER_ID_FILE else json.loads(text)
        return parse(content, nodes)
    except (OSError, ValueError, KeyError, TypeError, AttributeError, ConfigError,
            ScramError) as exc:
        raise StandaloneImportError(f"{path}: cannot import it: {exc!r}") from None


def _topic_nodes(document: dict[str, Any], nodes: dict[str, bytes]) -> str:
    """Each topic's assignment, configs and partition states; returns the cluster id."""
    for topic, entry in document["topics"].items():
        configs = {str(key): str(value) for key, value in entry["configs"].items()}
        assignment: dict[int, list[int]] = {}
        for index, partition in enumerate(entry["partitions"]):
            leader = int(partition["leader"])
            assignment[index] = [leader]
            state = layout.LeaderIsr(leader, int(partition["leader_epoch"]), (leader,),
                                     IMPORTED_CONTROLLER_EPOCH)
            nodes[layout.partition_state_path(topic, index)] = state.encode()
        nodes[layout.topic_path(topic)] = layout.encode_assignment(assignment)
        nodes[layout.topic_config_path(topic)] = layout.encode_topic_config(configs)
    nodes[layout.CONTROLLER_EPOCH] = layout.encode_epoch(IMPORTED_CONTROLLER_EPOCH)
    return str(document["cluster_id"])


def _security_nodes(document: dict[str, Any], nodes: dict[str, bytes]) -> None:
    nodes.update(acl_nodes([AclBinding.from_json(entry) for entry in document["acls"]]))
    for user, mechanisms in document["scram"].items():
        for text in mechanisms.values():
            ScramCredential.from_text(text)
        nodes[user_path(user)] = user_document(dict(mechanisms))
    secret = document.get("scram_decoy_secret")
    if secret is not None:
        nodes[SCRAM_DECOY_SECRET] = base64.b64decode(secret, validate=True)


def _producer_id_node(text: str, nodes: dict[str, bytes], broker_id: int) -> None:
    """The file holds the first id of the next block: the store's last block ends below
    it, so the next block claimed starts there."""
    next_id = int(text.strip())
    if next_id > 0:
        nodes[layout.PRODUCER_ID_BLOCK] = layout.encode_producer_id_block(
            broker_id, max(next_id - BLOCK_SIZE, 0), next_id - 1)


def _broker_config_nodes(document: dict[str, Any], nodes: dict[str, bytes]) -> None:
    layers = {CLUSTER_DEFAULT: document["default"], **document["brokers"]}
    for name, values in layers.items():
        configs = {str(key): str(value) for key, value in values.items()}
        validate_dynamic(configs)
        if configs:
            nodes[layout.broker_config_path(str(name))] = layout.encode_topic_config(configs)


def _with_ancestors(nodes: dict[str, bytes]) -> list[str]:
    """Every path to create, parents before children."""
    paths = set()
    for path in nodes:
        while path != "/":
            paths.add(path)
            path = parent_of(path)
    return sorted(paths, key=lambda path: (path.count("/"), path))
