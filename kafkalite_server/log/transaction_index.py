"""The aborted-transaction index of one segment: ``<base offset>.txnindex``.

Kafka's format: a flat file of 34-byte entries, each ``version int16 (0), producer id
int64, first offset int64, last offset int64, last stable offset int64``. An entry is
added when an abort marker is written: ``first offset`` is the aborted transaction's first
record, ``last offset`` the marker's offset, ``last stable offset`` the partition's LSO once
the transaction was complete. Entries live in the segment holding the marker, in marker
order, so a read_committed fetch from offset F collects the entries of F's segment and
every later one whose ``last offset >= F``.

The file is created with its first entry (most segments never have one); entries are
also kept in memory (a few per segment), read from the file on first use.
"""

from __future__ import annotations

import os
import struct
from dataclasses import dataclass
from pathlib import Path

TXN_INDEX_SUFFIX = ".txnindex"
ENTRY = struct.Struct(">hqqqq")
ENTRY_VERSION = 0


class CorruptTransactionIndexError(Exception):
    """The file's length or an entry's version is not Kafka's format."""


@dataclass(frozen=True, slots=True)
class AbortedTxn:
    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        return ENTRY.pack(ENTRY_VERSION, self.producer_id, self.first_offset,
                          self.last_offset, self.last_stable_offset)


class TransactionIndex:
    def __init__(self, path: str | Path) -> None:
        """No I/O here: the file is read on first use of :attr:`entries`."""
        self.fspath = os.fspath(path)
        self._entries: list[AbortedTxn] | None = None
        self._problem: str | None = None

    @property
    def path(self) -> Path:
        return Path(self.fspath)

    @path.setter
    def path(self, path: str | Path) -> None:
        self.fspath = os.fspath(path)

    @property
    def problem(self) -> str | None:
        """Why the file could not be read (it was emptied; recovery refills it)."""
        if self._entries is None:
            self._entries = self._read()
        return self._problem

    @property
    def entries(self) -> list[AbortedTxn]:
        if self._entries is None:
            self._entries = self._read()
        return self._entries

    @entries.setter
    def entries(self, entries: list[AbortedTxn]) -> None:
        self._entries = entries

    def _read(self) -> list[AbortedTxn]:
        try:
            return read_entries(self.path.read_bytes())
        except FileNotFoundError:
            return []
        except CorruptTransactionIndexError as exc:
            self._problem = str(exc)
            self.path.unlink()
            return []

    def append(self, entry: AbortedTxn) -> None:
        if self.entries and entry.last_offset <= self.entries[-1].last_offset:
            raise ValueError(f"aborted transaction ending at {entry.last_offset} does not "
                             f"follow {self.entries[-1].last_offset} in {self.path.name}")
        with open(self.path, "ab") as file:
            file.write(entry.encode())
        self.entries.append(entry)

    def collect(self, fetch_offset: int, upper_bound: int) -> list[AbortedTxn]:
        """Entries of transactions overlapping [fetch_offset, upper_bound)."""
        return [entry for entry in self.entries
                if entry.last_offset >= fetch_offset and entry.first_offset < upper_bound]

    def truncate_to(self, offset: int) -> None:
        """Forget transactions whose marker is at or above ``offset`` (the log was cut)."""
        kept = [entry for entry in self.entries if entry.last_offset < offset]
        if len(kept) != len(self.entries):
            self.entries = kept
            self._rewrite()

    def replace(self, entries: list[AbortedTxn]) -> None:
        """Set the entries (a cleaned segment inherits those of the segments it replaces)."""
        self.entries = list(entries)
        self._rewrite()

    def _rewrite(self) -> None:
        if not self.entries:
            self.path.unlink(missing_ok=True)
            return
        temp = self.path.with_name(self.path.name + ".tmp")
        temp.write_bytes(b"".join(entry.encode() for entry in self.entries))
        os.replace(temp, self.path)

    def flush(self) -> None:
        if not self._entries:  # never read (so never written here), or empty
            return
        try:
            fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def rename(self, path: Path) -> None:
        if self.path.exists():
            os.rename(self.path, path)
        self.path = path

    def delete(self) -> None:
        self.path.unlink(missing_ok=True)


def read_entries(data: bytes) -> list[AbortedTxn]:
    if len(data) % ENTRY.size:
        raise CorruptTransactionIndexError(f"{len(data)} bytes is not a whole number of "
                                           f"{ENTRY.size}-byte entries")
    entries = []
    for version, producer_id, first, last, lso in ENTRY.iter_unpack(data):
        if version != ENTRY_VERSION:
            raise CorruptTransactionIndexError(f"entry version {version}")
        entries.append(AbortedTxn(producer_id, first, last, lso))
    return entries
