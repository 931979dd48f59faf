"""``kafkalite consume TOPIC``: print records, like kafka-console-consumer and ``kcat -C``."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from kafkalite.cli.options import (
    CliError,
    UsageError,
    add_command,
    non_negative_int,
    positive_int,
)
from kafkalite.cli.record_format import (
    DEFAULT_FORMAT,
    FormatError,
    compile_format,
    format_help,
    render_json,
)
from kafkalite.cli.session import client_config, cluster_metadata
from kafkalite.consumer import Consumer
from kafkalite.structs import TopicPartition

EPILOG = f"""examples:
  kafkalite consume events --from-beginning
  kafkalite consume events --group billing                 # join a consumer group
  kafkalite consume events --partition 0 --offset 42 --max-messages 10
  kafkalite consume events --offset beginning --timeout-ms 2000 --json
  kafkalite consume events --from-beginning --format '%p:%o %k=%v\\n'

--format placeholders (kcat style, but %v is the value and %s its size):
{format_help()}

Without --group the consumer reads every partition (or --partition) from the end, or from
--offset / --from-beginning, and commits nothing. With --group it joins the group and
commits what it printed; --from-beginning then applies where the group has no offset."""

_POLL_MS = 200


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(commands, "consume", run, help="print records from a topic",
                         epilog=EPILOG, parents=parents)
    parser.add_argument("topic")
    parser.add_argument("-g", "--group", help="consume as a member of this consumer group")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset instead of the end")
    parser.add_argument("-o", "--offset", type=_offset, metavar="N|beginning|end",
                        help="start every consumed partition at this offset")
    parser.add_argument("-p", "--partition", type=non_negative_int, action="append",
                        help="only this partition (repeatable)")
    parser.add_argument("-c", "--max-messages", type=positive_int, metavar="N",
                        help="exit after N records")
    parser.add_argument("--timeout-ms", type=positive_int, metavar="MS",
                        help="exit when no record arrives for this long")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("-f", "--format", default=DEFAULT_FORMAT,
                        help="how to print each record (default: %(default)r)")
    output.add_argument("--json", action="store_true", help="one JSON object per record")


def _offset(text: str) -> int | str:
    if text in ("beginning", "end"):
        return text
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a number, 'beginning' or 'end'") from None
    if value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} is negative")
    return value


def run(args: argparse.Namespace) -> int:
    if args.group and args.offset is not None:
        raise UsageError("--offset cannot be combined with --group (a group starts at its "
                         "committed offsets; use `kafkalite groups reset-offsets`)")
    try:
        render = render_json if args.json else compile_format(args.format)
    except FormatError as exc:
        raise UsageError(str(exc)) from None
    cluster = cluster_metadata(args, [args.topic])
    partitions = _chosen_partitions(args, cluster.partitions_for_topic(args.topic) or ())
    start_at = args.offset if args.offset is not None else (
        "beginning" if args.from_beginning else "end")
    consumer = Consumer(**client_config(args), group_id=args.group,
                        enable_auto_commit=args.group is not None,
                        auto_offset_reset="earliest" if args.from_beginning else "latest")
    count = 0
    try:
        if args.group and args.partition is None:
            consumer.subscribe([args.topic])
        else:
            consumer.assign(partitions)
            if not args.group:
                _seek(consumer, partitions, start_at)
        out = sys.stdout.buffer
        idle_since = time.monotonic()
        while args.max_messages is None or count < args.max_messages:
            remaining = None if args.max_messages is None else args.max_messages - count
            batches = consumer.poll(timeout_ms=_POLL_MS, max_records=remaining)
            records = [r for tp in sorted(batches) for r in batches[tp]]
            if records:
                out.write(b"".join(render(record) for record in records))
                out.flush()
                count += len(records)
                idle_since = time.monotonic()
            elif args.timeout_ms and time.monotonic() - idle_since >= args.timeout_ms / 1000:
                break
    finally:
        consumer.close()
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


def _chosen_partitions(args: argparse.Namespace, existing: Any) -> list[TopicPartition]:
    wanted = sorted(set(args.partition)) if args.partition else sorted(existing)
    missing = [p for p in wanted if p not in existing]
    if missing:
        raise CliError(f"topic {args.topic!r} has no partition {missing[0]} "
                       f"(it has {len(existing)})")
    return [TopicPartition(args.topic, p) for p in wanted]


def _seek(consumer: Any, partitions: list[TopicPartition], start_at: int | str) -> None:
    if start_at == "beginning":
        consumer.seek_to_beginning(*partitions)
    elif start_at == "end":
        consumer.seek_to_end(*partitions)
    else:
        for tp in partitions:
            consumer.seek(tp, start_at)
