"""``kafkalite produce TOPIC``: one record per input line, like kafka-console-producer."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO

from kafkalite.cli.options import (
    CliError,
    acks,
    add_command,
    compression,
    key_value,
    non_negative_int,
)
from kafkalite.cli.session import client_config, cluster_metadata
from kafkalite.producer import Producer
from kafkalite.structs import Header

EPILOG = """examples:
  echo 'hello' | kafkalite produce events
  kafkalite produce events --file lines.txt --compression zstd --acks 1
  printf 'user-1:clicked\\nuser-2:left\\n' | kafkalite produce events --key-separator :
  kafkalite produce events --header source=cli --header trace=abc < lines.txt

Each line (without its newline) is one record's value; with --key-separator the text
before the first separator is the key. Exits non-zero if any record is not acknowledged."""


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
    with Producer(**client_config(args), acks=args.acks, compression_type=args.compression,
                  linger_ms=args.linger_ms, max_block_ms=args.connect_timeout_ms) as producer:
        for number, line in enumerate(_lines(stream), start=1):
            key, value = _split(line, separator, number)
            future = producer.send(args.topic, value, key=key, partition=args.partition,
                                   headers=headers or None)
            future.add_errback(failures.append)
            if failures:
                break
        producer.flush()
    if failures:
        raise CliError(f"a record was not delivered: {failures[0]}")
    return 0


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
