"""``meta.properties`` in a broker's data dir: which broker and cluster the data belongs to.

Starting a data dir with a different ``broker.id`` is refused (as Kafka does), so two
brokers never mix their partitions by accident.
"""

from __future__ import annotations

import base64
import uuid
from pathlib import Path

from kafkalite.errors import ConfigError
from kafkalite.protocol.java_properties import parse_properties
from kafkalite_server.cluster.atomic_file import write_atomically

META_PROPERTIES = "meta.properties"


def new_cluster_id() -> str:
    """A 22-character url-safe id, the shape of Kafka's cluster ids."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def read_meta_properties(directory: Path) -> dict[str, str]:
    path = directory / META_PROPERTIES
    if not path.exists():
        return {}
    return parse_properties(path.read_text(encoding="utf-8").splitlines())


def ensure_meta_properties(directory: Path, broker_id: int, cluster_id: str) -> None:
    """Writes the file on first start; later starts must match it."""
    existing = read_meta_properties(directory)
    if existing:
        if existing.get("broker.id") != str(broker_id):
            raise ConfigError("broker.id", f"{broker_id} does not match broker.id="
                              f"{existing.get('broker.id')} in {directory / META_PROPERTIES}")
        if existing.get("cluster.id") != cluster_id:
            raise ConfigError("cluster.id", f"{directory / META_PROPERTIES} belongs to cluster "
                              f"{existing.get('cluster.id')}, not {cluster_id}")
        return
    directory.mkdir(parents=True, exist_ok=True)
    text = f"version=0\nbroker.id={broker_id}\ncluster.id={cluster_id}\n"
    write_atomically(directory / META_PROPERTIES, text.encode())
