"""Human-readable dumps of segment and index files, like Kafka's DumpLogSegments.

Read-only: files are memory-mapped, never opened for writing, so a dump is safe on the
files of a running broker. ``main_dump(argv)`` is the entry point the server CLI wires
to ``kafkalite-server dump-log PATH... [--deep-iteration] [--index]``.
"""

from __future__ import annotations

import argparse
import mmap
import struct
import sys
from collections.abc import Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TextIO

from kafkalite.errors import CorruptRecordError
from kafkalite.records import decode_batches
from kafkalite.records.batch_header import (
    BatchHeader,
    batch_crc_is_valid,
    iter_batch_headers,
)
from kafkalite.records.compression import CODEC_NAMES
from kafkalite_server.log.segment import INDEX_SUFFIX, LOG_SUFFIX, TIME_INDEX_SUFFIX

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


@contextmanager
def _mapped(path: Path) -> Iterator[memoryview]:
    with open(path, "rb") as file:
        if path.stat().st_size == 0:
            yield memoryview(b"")
            return
        with mmap.mmap(file.fileno(), 0, access=mmap.ACCESS_READ) as mapped:
            view = memoryview(mapped)
            try:
                yield view
            finally:
                view.release()


def _bool(value: bool) -> str:
    return "true" if value else "false"


def _timestamp_label(header: BatchHeader) -> str:
    return "LogAppendTime" if header.timestamp_type else "CreateTime"


def _describe_batch(data: memoryview, header: BatchHeader) -> str:
    valid = batch_crc_is_valid(data, header)
    common = (f"position: {header.position} {_timestamp_label(header)}: {header.max_timestamp} "
              f"size: {header.size} magic: {header.magic} "
              f"compresscodec: {CODEC_NAMES.get(header.compression, header.compression)} "
              f"crc: {header.crc} isvalid: {_bool(valid)}")
    if header.magic < 2:
        return f"offset: {header.last_offset} {common}"
    last_sequence = (header.base_sequence + header.last_offset - header.base_offset
                     if header.base_sequence >= 0 else -1)
    return (f"baseOffset: {header.base_offset} lastOffset: {header.last_offset} "
            f"count: {header.record_count} baseSequence: {header.base_sequence} "
            f"lastSequence: {last_sequence} producerId: {header.producer_id} "
            f"producerEpoch: {header.producer_epoch} "
            f"partitionLeaderEpoch: {header.partition_leader_epoch} "
            f"isTransactional: {_bool(header.is_transactional)} "
            f"isControl: {_bool(header.is_control)} {common}")


def _field(value: bytes | None) -> str:
    if value is None:
        return "null"
    return value.decode("utf-8", errors="backslashreplace")


def dump_log(path: Path | str, deep_iteration: bool = False, out: TextIO = sys.stdout) -> bool:
    """Print one line per batch (and with ``deep_iteration`` one per record).

    Returns False when the file holds an invalid batch or trailing bytes that do not
    form one; the dump continues past CRC failures and stops at unreadable framing.
    """
    path = Path(path)
    ok = True
    print(f"Dumping {path}", file=out)
    print(f"Log starting offset: {int(path.stem) if path.stem.isdigit() else 0}", file=out)
    with _mapped(path) as data:
        end = 0
        try:
            for header in iter_batch_headers(data):
                end = header.position + header.size
                print(_describe_batch(data, header), file=out)
                ok = ok and batch_crc_is_valid(data, header)
                if deep_iteration:
                    _print_records(bytes(data[header.position:end]), header, out)
        except CorruptRecordError as exc:
            print(f"Stopped at byte {end}: {exc}", file=out)
            return False
        if end < len(data):
            print(f"Found {len(data) - end} invalid bytes at the end of {path.name}", file=out)
            ok = False
    return ok


def _print_records(batch: bytes, header: BatchHeader, out: TextIO) -> None:
    try:
        for record in decode_batches(batch, check_crcs=False):
            header_keys = ",".join(name for name, _ in record.headers)
            print(f"| offset: {record.offset} {_timestamp_label(header)}: {record.timestamp} "
                  f"keySize: {-1 if record.key is None else len(record.key)} "
                  f"valueSize: {-1 if record.value is None else len(record.value)} "
                  f"headerKeys: [{header_keys}] key: {_field(record.key)} "
                  f"payload: {_field(record.value)}", file=out)
    except CorruptRecordError as exc:
        print(f"| cannot decode records: {exc}", file=out)


def _readable_batches(log: memoryview) -> list[BatchHeader]:
    """Headers of the log's batches up to the first unreadable one."""
    batches: list[BatchHeader] = []
    with suppress(CorruptRecordError):
        batches.extend(iter_batch_headers(log))
    return batches


def dump_index(index_path: Path | str, out: TextIO = sys.stdout) -> bool:
    """Print an ``.index`` or ``.timeindex`` and check each entry against the ``.log``.

    An offset entry must point at a batch boundary whose last offset it names; a time
    entry must name an offset whose batch has that max timestamp. Mismatches are printed;
    returns False if there were any.
    """
    index_path = Path(index_path)
    base = int(index_path.stem) if index_path.stem.isdigit() else 0
    log_path = index_path.with_suffix(LOG_SUFFIX)
    is_time_index = index_path.suffix == TIME_INDEX_SUFFIX
    entry_format = _TIME_ENTRY if is_time_index else _OFFSET_ENTRY
    mismatches = []
    print(f"Dumping {index_path}", file=out)
    with _mapped(index_path) as raw, _mapped(log_path) as log:
        usable = len(raw) - len(raw) % entry_format.size
        batches = _readable_batches(log)
        for first, second in entry_format.iter_unpack(raw[:usable]):
            if is_time_index:
                timestamp, offset = first, base + second
                print(f"timestamp: {timestamp} offset: {offset}", file=out)
                holder = next((h for h in batches if h.last_offset >= offset), None)
                if holder is None or holder.max_timestamp != timestamp:
                    found = "none" if holder is None else str(holder.max_timestamp)
                    mismatches.append(f"Index timestamp: {timestamp}, log timestamp: {found}")
            else:
                offset, position = base + first, second
                print(f"offset: {offset} position: {position}", file=out)
                header = next((h for h in batches if h.position == position), None)
                if header is None or header.last_offset != offset:
                    found = "none" if header is None else str(header.last_offset)
                    mismatches.append(f"Index offset: {offset}, log offset: {found}")
        if usable != len(raw):
            mismatches.append(f"{len(raw) - usable} trailing bytes are not a whole entry")
    if mismatches:
        print(f"Mismatches in: {index_path}", file=out)
        for line in mismatches:
            print(f"  {line}", file=out)
    return not mismatches


def main_dump(argv: Sequence[str] | None = None, out: TextIO = sys.stdout) -> int:
    """``dump-log PATH... [--deep-iteration] [--index]``; exit status 1 on any problem."""
    parser = argparse.ArgumentParser(prog="kafkalite-server dump-log",
                                     description="Print the batches of segment files.")
    parser.add_argument("paths", nargs="+", type=Path,
                        help=".log, .index or .timeindex files")
    parser.add_argument("--deep-iteration", action="store_true",
                        help="print every record, decompressing batches")
    parser.add_argument("--index", action="store_true",
                        help="also check the segment's .index and .timeindex")
    args = parser.parse_args(argv)
    ok = True
    for path in args.paths:
        if not path.is_file():
            print(f"{path}: no such file", file=out)
            ok = False
        elif path.suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
            ok = dump_index(path, out) and ok
        else:
            ok = dump_log(path, args.deep_iteration, out) and ok
            if args.index:
                for suffix in (INDEX_SUFFIX, TIME_INDEX_SUFFIX):
                    sibling = path.with_suffix(suffix)
                    if sibling.exists():
                        ok = dump_index(sibling, out) and ok
    return 0 if ok else 1
