"""The metadata image every broker answers Metadata from, and its on-disk form.

The image lives in one process (one per standalone broker, one shared by the brokers of an
EmbeddedCluster) and is only touched from the event-loop thread, so it needs no locks.

Persisted file ``cluster-metadata.json`` (written atomically: temp file, fsync, rename,
directory fsync)::

    {"version": 1, "cluster_id": "...",
     "topics": {"<name>": {"configs": {"<topic key>": "<value>"},
                           "partitions": [{"leader": 0, "leader_epoch": 0}, ...]}}}

Brokers are not persisted: they register their endpoints when they start.

Changes are persisted before they take effect: the controller builds the new topics as
a copy, saves it, and only then swaps it in, so a failed save (a full disk) leaves the
image and the file as they were.
"""

from __future__ import annotations

import base64
import json
import os
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from kafkalite.errors import KafkaError
from kafkalite.protocol.errors import KafkaStorageError

METADATA_FILE = "cluster-metadata.json"
_FORMAT_VERSION = 1


@dataclass(frozen=True)
class BrokerEndpoint:
    """Where a broker is reached: ``host``/``port`` of its inter-broker listener, and every
    listener as (name, host, port, security protocol), the inter-broker one first."""

    node_id: int
    host: str
    port: int
    rack: str | None = None
    listeners: tuple[tuple[str, str, int, str], ...] = ()

    def on(self, listener: str | None) -> BrokerEndpoint:
        """This broker as clients of ``listener`` reach it (itself if it has no such
        listener, or ``listener`` is None)."""
        for name, host, port, _protocol in self.listeners:
            if name == listener:
                return replace(self, host=host, port=port)
        return self


@dataclass
class PartitionInfo:
    """Replication factor one: the leader is the only replica and the whole ISR."""

    leader: int
    leader_epoch: int = 0


@dataclass
class TopicInfo:
    name: str
    partitions: list[PartitionInfo]
    configs: dict[str, str] = field(default_factory=dict)

    def copy(self) -> TopicInfo:
        """An independent copy, to change before the change is saved."""
        return TopicInfo(self.name, [replace(p) for p in self.partitions], dict(self.configs))


class MetadataImage:
    def __init__(self, cluster_id: str, topics: dict[str, TopicInfo] | None = None) -> None:
        self.cluster_id = cluster_id
        self.topics: dict[str, TopicInfo] = topics or {}
        self.brokers: dict[int, BrokerEndpoint] = {}

    @property
    def controller_id(self) -> int:
        """The lowest registered broker id (kafkalite has no controller election)."""
        return min(self.brokers, default=-1)

    def partition(self, topic: str, index: int) -> PartitionInfo | None:
        info = self.topics.get(topic)
        if info is None or not 0 <= index < len(info.partitions):
            return None
        return info.partitions[index]

    def leader_for_new_partition(self, index: int) -> int:
        """Partition ``i`` goes to the ``i % N``-th broker by id."""
        ids = sorted(self.brokers)
        return ids[index % len(ids)]


class MetadataFileError(KafkaError):
    """The persisted metadata file exists but cannot be read."""


FileWriter = Callable[[Path, bytes], None]
"""How a metadata file is written: :func:`write_atomically`, or a failing one in tests."""


class MetadataStore:
    """Loads and atomically saves a :class:`MetadataImage` as JSON in ``directory``."""

    def __init__(self, directory: Path) -> None:
        self.path = directory / METADATA_FILE
        self.write: FileWriter = write_atomically

    def load(self, cluster_id: str | None = None) -> MetadataImage:
        """The saved image, or an empty one (with ``cluster_id`` or a fresh id)."""
        if not self.path.exists():
            return MetadataImage(cluster_id or new_cluster_id())
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            topics = {
                name: TopicInfo(
                    name,
                    [PartitionInfo(int(p["leader"]), int(p["leader_epoch"]))
                     for p in entry["partitions"]],
                    {str(k): str(v) for k, v in entry["configs"].items()},
                )
                for name, entry in raw["topics"].items()
            }
            return MetadataImage(str(raw["cluster_id"]), topics)
        except (OSError, ValueError, KeyError, TypeError) as exc:
            raise MetadataFileError(f"{self.path}: {exc!r}") from None

    def save(self, cluster_id: str, topics: dict[str, TopicInfo]) -> None:
        """Write the image durably; KafkaStorageError naming the file if that fails."""
        document = {
            "version": _FORMAT_VERSION,
            "cluster_id": cluster_id,
            "topics": {
                name: {
                    "configs": info.configs,
                    "partitions": [{"leader": p.leader, "leader_epoch": p.leader_epoch}
                                   for p in info.partitions],
                }
                for name, info in sorted(topics.items())
            },
        }
        self.write(self.path, json.dumps(document, indent=1).encode())


def new_cluster_id() -> str:
    """A 22-character url-safe id, the shape of Kafka's cluster ids."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def write_atomically(path: Path, data: bytes, *,
                     fsync: Callable[[int], None] = os.fsync) -> None:
    """Temp file + fsync + rename + directory fsync: a crash leaves old or new, never half.

    A failure (a full disk) removes the temp file, keeps the old file and raises
    KafkaStorageError naming the file; callers change nothing in memory until this returns.
    Tests pass an ``fsync`` that fails the way a full disk does.
    """
    tmp = path.with_name(path.name + ".tmp")
    try:
        try:
            with open(tmp, "wb") as out:
                out.write(data)
                out.flush()
                fsync(out.fileno())
            os.replace(tmp, path)
        except OSError:
            tmp.unlink(missing_ok=True)
            raise
        dir_fd = os.open(path.parent, os.O_RDONLY)
        try:
            fsync(dir_fd)
        finally:
            os.close(dir_fd)
    except OSError as exc:
        raise KafkaStorageError(f"cannot write {path}: {exc.strerror or exc}") from exc
