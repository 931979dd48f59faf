"""The entity config nodes (``/config/users/<u>``, ``/config/clients/<c>``, ...): Kafka's
``{"version": 1, "config": {...}}`` documents, read and altered in one place.

A user's node holds both its SCRAM credentials and its quotas, and a node can be an empty
parent, made on the way to a deeper one (a quota of ``users/<u>/clients/<c>`` makes
``users/<u>``): every reader takes an empty node for an empty config, and every writer
changes only its own keys of the config it finds, written back only if the node did not
change meanwhile.
"""

from __future__ import annotations

import json
from collections.abc import Callable

from kafkalite_server.cluster.coordination import (
    BadVersionError,
    Coordination,
    NodeExistsError,
    NoNodeError,
    parent_of,
)

RETRIES = 10
"""How often a write is tried again after another writer changed the node meanwhile."""


def config_document(config: dict[str, str]) -> bytes:
    """A node's data for ``config``."""
    return json.dumps({"version": 1, "config": config}).encode()


def config_of(data: bytes) -> dict[str, str]:
    """The config of a node's data; ValueError when the data is not a config document."""
    if not data:
        return {}
    document = json.loads(data.decode())
    config = document.get("config", {}) if isinstance(document, dict) else None
    if not isinstance(config, dict):
        raise ValueError("not a config document")
    return config


def alter_config_node(store: Coordination, path: str,
                      change: Callable[[dict[str, str]], dict[str, str]]) -> None:
    """Write ``change`` of the node's config (an empty one for a missing or empty node),
    creating the node if needed; read and changed again if another writer got there
    first, up to :data:`RETRIES` times."""
    for _attempt in range(RETRIES):
        try:
            data, stat = store.get(path)
        except NoNodeError:
            data, stat = b"", None
        encoded = config_document(change(config_of(data)))
        try:
            if stat is None:
                store.ensure_path(parent_of(path))
                store.create(path, encoded)
            else:
                store.set(path, encoded, stat.version)
            return
        except (NodeExistsError, BadVersionError, NoNodeError):
            continue
    raise BadVersionError(f"{path}: too many concurrent changes")
