"""Committed offsets as the coordinator keeps them in memory and writes them to the log."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple


class TopicPartition(NamedTuple):
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetAndMetadata:
    """One committed position; ``expire_timestamp_ms`` is set only for an explicit retention."""

    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp_ms: int = -1
    expire_timestamp_ms: int | None = None


@dataclass(frozen=True)
class OffsetCommitEntry:
    """One partition of an OffsetCommit request, as the handler decoded it."""

    offset: int
    leader_epoch: int = -1
    metadata: str | None = ""
