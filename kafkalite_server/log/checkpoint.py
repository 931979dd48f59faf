"""Kafka's checkpoint text files: a version line, a count line, then one entry a line.

Writes go to ``<file>.tmp``, are fsynced, then renamed over the original, so a crash
leaves either the old or the new file, never half of one. A write may leave the fsync to a
later :meth:`_CheckpointFile.sync` (``sync=False``): then a power loss can leave the old
file or an unreadable one, which a reader reports as corrupt.
"""

from __future__ import annotations

import os
from abc import ABC, abstractmethod
from collections.abc import Iterable
from pathlib import Path
from typing import Generic, TypeVar

from kafkalite.errors import KafkaError
from kafkalite_server.log.file_io import fsync_directory

CHECKPOINT_VERSION = 0

Entry = TypeVar("Entry")


class CorruptCheckpointError(KafkaError):
    """A checkpoint file that does not parse; names the file and the line."""

    def __init__(self, path: Path, line_number: int, problem: str) -> None:
        super().__init__(f"{path}: line {line_number}: {problem}")
        self.path = path
        self.line_number = line_number


class _CheckpointFile(ABC, Generic[Entry]):
    """The shared format; subclasses say how one entry line looks."""

    _FIELDS: int

    def __init__(self, path: Path) -> None:
        self.path = path

    @abstractmethod
    def _format_entry(self, entry: Entry) -> str: ...

    @abstractmethod
    def _parse_entry(self, fields: list[str]) -> Entry:
        """Build an entry from its fields; a ``ValueError`` marks the line malformed."""

    def read_entries(self) -> list[Entry]:
        """Every entry in file order; ``[]`` when the file does not exist."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return []
        lines = text.splitlines()
        version = self._integer(lines, 0, "version")
        if version != CHECKPOINT_VERSION:
            raise CorruptCheckpointError(self.path, 1, f"unsupported version {version}")
        count = self._integer(lines, 1, "entry count")
        entries = []
        for number, line in enumerate(lines[2:], start=3):
            if not line.strip():
                continue
            fields = line.split()
            if len(fields) != self._FIELDS:
                raise CorruptCheckpointError(self.path, number, f"expected {self._FIELDS} "
                                             f"fields, got {line!r}")
            try:
                entries.append(self._parse_entry(fields))
            except ValueError:
                raise CorruptCheckpointError(self.path, number, f"malformed entry {line!r}") \
                    from None
        if len(entries) != count:
            raise CorruptCheckpointError(self.path, 2, f"header says {count} entries, "
                                         f"found {len(entries)}")
        return entries

    def _integer(self, lines: list[str], index: int, what: str) -> int:
        if index >= len(lines):
            raise CorruptCheckpointError(self.path, index + 1, f"missing {what} line")
        try:
            return int(lines[index].strip())
        except ValueError:
            raise CorruptCheckpointError(self.path, index + 1,
                                         f"{what} {lines[index]!r} is not an integer") from None

    def write_entries(self, entries: Iterable[Entry], *, sync: bool = True) -> None:
        lines = [self._format_entry(entry) for entry in entries]
        text = "\n".join([str(CHECKPOINT_VERSION), str(len(lines)), *lines]) + "\n"
        tmp = self.path.with_name(self.path.name + ".tmp")
        try:
            with open(tmp, "w", encoding="utf-8") as file:
                file.write(text)
                if sync:
                    file.flush()
                    os.fsync(file.fileno())
            os.replace(tmp, self.path)
        except OSError:
            tmp.unlink(missing_ok=True)  # a full disk keeps the old file, without litter
            raise
        if sync:
            fsync_directory(self.path.parent)  # the rename itself durable

    def sync(self) -> None:
        """Make the last write durable (its content, then its rename)."""
        fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)
        fsync_directory(self.path.parent)


class OffsetCheckpointFile(_CheckpointFile[tuple[str, int, int]]):
    """``<topic> <partition> <offset>`` lines: recovery points, log start offsets, HWs."""

    _FIELDS = 3

    def _format_entry(self, entry: tuple[str, int, int]) -> str:
        topic, partition, offset = entry
        return f"{topic} {partition} {offset}"

    def _parse_entry(self, fields: list[str]) -> tuple[str, int, int]:
        return fields[0], int(fields[1]), int(fields[2])

    def read(self) -> dict[tuple[str, int], int]:
        return {(topic, partition): offset for topic, partition, offset in self.read_entries()}

    def write(self, offsets: dict[tuple[str, int], int]) -> None:
        self.write_entries((topic, partition, offset)
                           for (topic, partition), offset in sorted(offsets.items()))


class LeaderEpochCheckpointFile(_CheckpointFile[tuple[int, int]]):
    """``<leader epoch> <start offset>`` lines in ascending epoch order."""

    _FIELDS = 2

    def _format_entry(self, entry: tuple[int, int]) -> str:
        return f"{entry[0]} {entry[1]}"

    def _parse_entry(self, fields: list[str]) -> tuple[int, int]:
        return int(fields[0]), int(fields[1])

    def read(self) -> list[tuple[int, int]]:
        return self.read_entries()

    def write(self, entries: Iterable[tuple[int, int]], *, sync: bool = True) -> None:
        self.write_entries(entries, sync=sync)
