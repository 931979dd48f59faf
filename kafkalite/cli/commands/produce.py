"""``kafkalite produce TOPIC``: one record per input line, like kafka-console-producer."""

from __future__ import annotations

import argparse
import os
import stat
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

from kafkalite.cli.options import (
    CliError,
    acks,
    add_client_properties,
    add_command,
    compression,
    key_value,
    non_negative_int,
)
from kafkalite.cli.progress import Progress
from kafkalite.cli.session import cluster_metadata, sdk_config
from kafkalite.producer import Producer
from kafkalite.structs import Header

EPILOG = """examples:
  echo 'hello' | kafkalite produce events
  kafkalite produce events --file lines.txt --compression zstd --acks 1
  printf 'user-1:clicked\\nuser-2:left\\n' | kafkalite produce events --key-separator :
  kafkalite produce events --header source=cli --header trace=abc < lines.txt
  kafkalite produce events -X batch.size=65536 -X enable.idempotence=false < lines.txt

Each line (without its newline) is one record's value; with --key-separator the text
before the first separator is the key. Exits non-zero if any record is not acknowledged.
-X passes any producer setting (kafka-python or Java spelling). With stderr a terminal, a
progress bar shows the bytes sent of a file (or the lines sent from stdin)."""


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(commands, "produce", run, help="send lines from stdin or a file",
                         epilog=EPILOG, parents=parents)
    parser.add_argument("topic")
    parser.add_argument("-f", "--file", type=argparse.FileType("rb"),
                        help="read lines from this file instead of stdin")
    parser.add_argument("-K", "--key-separator", metavar="SEP",
                        help="split each line at the first SEP into key and value")
    parser.add_argument("-p", "--partition", type=non_negative_int,
                        help="send every record to this partition (default: by key)")
    parser.add_argument("-z", "--compression", type=compression, default=None,
                        metavar="CODEC", help="none, gzip, snappy, lz4 or zstd")
    parser.add_argument("--acks", type=acks, default=-1,
                        help="all (-1), 0 or 1 (default: all)")
    parser.add_argument("-H", "--header", type=key_value, action="append", default=[],
                        metavar="KEY=VALUE", help="a header on every record (repeatable)")
    parser.add_argument("--linger-ms", type=non_negative_int, default=5,
                        help="how long a batch waits for more records (default: 5)")
    add_client_properties(parser, "producer")


def run(args: argparse.Namespace) -> int:
    cluster = cluster_metadata(args, [args.topic], auto_create=True)
    partitions = cluster.partitions_for_topic(args.topic) or frozenset()
    if args.partition is not None and args.partition not in partitions:
        raise CliError(f"topic {args.topic!r} has no partition {args.partition} "
                       f"(it has {len(partitions)})")
    headers: list[Header] = [(key, value.encode()) for key, value in args.header]
    separator = args.key_separator.encode() if args.key_separator else None
    stream: BinaryIO = args.file or sys.stdin.buffer
    failures: list[BaseException] = []
    with Producer(**sdk_config(args, acks=args.acks, compression_type=args.compression,
                               linger_ms=args.linger_ms, max_block_ms=args.connect_timeout_ms)
                  ) as producer, Progress(size := _size(stream), "producing") as progress:
        for number, line in enumerate(_lines(stream), start=1):
            key, value = _split(line, separator, number)
            future = producer.send(args.topic, value, key=key, partition=args.partition,
                                   headers=headers or None)
            future.add_errback(failures.append)
            progress.advance(1 if size is None else len(line) + 1)  # lines, or bytes
            if failures:
                break
        producer.flush()
    if failures:
        raise CliError(f"a record was not delivered: {failures[0]}")
    return 0


def _size(stream: BinaryIO) -> int | None:
    """Bytes to read when the input is a regular file (the bar's total), else None."""
    try:
        info = os.fstat(stream.fileno())
    except (OSError, ValueError):
        return None
    return info.st_size if stat.S_ISREG(info.st_mode) else None


def _lines(stream: BinaryIO) -> Iterator[bytes]:
    for line in stream:
        yield line.rstrip(b"\r\n") if line.endswith(b"\n") else line


def _split(line: bytes, separator: bytes | None, number: int) -> tuple[bytes | None, bytes]:
    if separator is None:
        return None, line
    key, found, value = line.partition(separator)
    if not found:
        raise CliError(f"line {number} has no key separator {separator.decode()!r}")
    return key, value
