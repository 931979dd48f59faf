"""``partition.metadata``: the id of the topic a partition directory belongs to (KIP-516).

Kafka's format, two lines::

    version: 0
    topic_id: <the id as Kafka's Uuid.toString writes it>

A directory is named ``<topic>-<partition>`` only, so a directory left behind by a deleted
topic (its broker was down when the topic was deleted) looks like one of a topic created
again under the same name. The file tells them apart: the replica manager compares it
with the id the controller sends before it opens the log for a partition.

The file is written once, when the replica first learns its topic's id, with a temporary
file, fsync and rename, so a crash leaves no half-written file.
"""

from __future__ import annotations

import os
import uuid
from pathlib import Path

from kafkalite.errors import KafkaError
from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.log.file_io import fsync_directory
from kafkalite_server.topic_ids import uuid_from_text, uuid_text

PARTITION_METADATA_FILE = "partition.metadata"
VERSION = 0


class CorruptPartitionMetadataError(KafkaError):
    """A ``partition.metadata`` that does not parse; names the file and the problem."""


def read_topic_id(directory: Path) -> uuid.UUID | None:
    """The topic id in ``directory``'s file; None when there is no file (a directory made
    before topics had ids, or one whose id was not known yet)."""
    path = directory / PARTITION_METADATA_FILE
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return None
    fields: dict[str, str] = {}
    for line in text.splitlines():
        if line.strip():
            key, colon, value = line.partition(":")
            if not colon:
                raise CorruptPartitionMetadataError(f"{path}: malformed line {line!r}")
            fields[key.strip()] = value.strip()
    if fields.get("version") != str(VERSION):
        raise CorruptPartitionMetadataError(f"{path}: unsupported version "
                                            f"{fields.get('version')!r}")
    try:
        return uuid_from_text(fields["topic_id"])
    except KeyError:
        raise CorruptPartitionMetadataError(f"{path}: no topic_id line") from None
    except ValueError as exc:
        raise CorruptPartitionMetadataError(f"{path}: {exc}") from None


def write_topic_id(directory: Path, topic_id: uuid.UUID) -> None:
    """Writes the file (durably); KafkaStorageError names a directory that cannot take it."""
    path = directory / PARTITION_METADATA_FILE
    tmp = path.with_name(path.name + ".tmp")
    try:
        with open(tmp, "w", encoding="utf-8") as out:
            out.write(f"version: {VERSION}\ntopic_id: {uuid_text(topic_id)}\n")
            out.flush()
            os.fsync(out.fileno())
        os.replace(tmp, path)
        fsync_directory(directory)
    except OSError as exc:
        tmp.unlink(missing_ok=True)
        raise KafkaStorageError(f"cannot write {path}: {exc.strerror or exc}") from exc
