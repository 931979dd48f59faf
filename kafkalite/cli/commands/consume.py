"""``kafkalite consume TOPIC``: print records, like kafka-console-consumer and ``kcat -C``."""

from __future__ import annotations

import argparse
import sys
from dataclasses import dataclass
from typing import Any, Literal

from kafkalite.cli.options import (
    CliError,
    UsageError,
    add_client_properties,
    add_command,
    non_negative_int,
    positive_int,
)
from kafkalite.cli.progress import Progress, stderr_only_is_terminal
from kafkalite.cli.record_format import (
    DEFAULT_FORMAT,
    FormatError,
    compile_format,
    format_help,
    render_json,
)
from kafkalite.cli.session import cluster_metadata, sdk_config
from kafkalite.consumer import Consumer
from kafkalite.idle import IdleTimer
from kafkalite.structs import TopicPartition

EPILOG = f"""examples:
  kafkalite consume events --from-beginning
  kafkalite consume events --group billing                 # join a consumer group
  kafkalite consume events --partition 0 --offset 42 --max-messages 10
  kafkalite consume events --offset beginning --timeout-ms 2000 --json
  kafkalite consume events --from-beginning --format '%p:%o %k=%v\\n'
  kafkalite consume events -o -10 -e                       # the last 10 of each partition
  kafkalite consume events -o s@1700000000000 -e -X fetch.max.bytes=1048576

--format placeholders (kcat style, but %v is the value and %s its size):
{format_help()}

Without --group the consumer reads every partition (or --partition) from the end, or from
--offset / --from-beginning, and commits nothing. With --group it joins the group and
commits what it printed; --from-beginning then applies where the group has no offset.
With stdout redirected and stderr a terminal, a progress bar counts the records."""

_POLL_MS = 200


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(commands, "consume", run, help="print records from a topic",
                         epilog=EPILOG, parents=parents)
    parser.add_argument("topic")
    parser.add_argument("-g", "--group", help="consume as a member of this consumer group")
    parser.add_argument("--from-beginning", action="store_true",
                        help="start at the earliest offset instead of the end")
    parser.add_argument("-o", "--offset", type=_offset, metavar="N|-N|s@MS|beginning|end",
                        help="start every consumed partition at offset N, N records before "
                             "its end (-N), at the first record at or after the epoch "
                             "milliseconds MS (s@MS), or at its beginning or end")
    parser.add_argument("-p", "--partition", type=non_negative_int, action="append",
                        help="only this partition (repeatable)")
    parser.add_argument("-c", "--max-messages", type=positive_int, metavar="N",
                        help="exit after N records")
    parser.add_argument("--timeout-ms", type=positive_int, metavar="MS",
                        help="exit when no record arrives for this long once partitions are "
                             "assigned (joining a group does not count)")
    parser.add_argument("-e", "--exit-at-end", action="store_true",
                        help="exit once every partition is read up to its end offset as of "
                             "when reading it began")
    add_client_properties(parser, "consumer")
    output = parser.add_mutually_exclusive_group()
    output.add_argument("-f", "--format", default=DEFAULT_FORMAT,
                        help="how to print each record (default: %(default)r)")
    output.add_argument("--json", action="store_true", help="one JSON object per record")


@dataclass(frozen=True)
class StartOffset:
    """Where ``-o`` starts each partition, in kcat's notation."""

    kind: Literal["beginning", "end", "offset", "tail", "timestamp"]
    value: int = 0


def _offset(text: str) -> StartOffset:
    if text in ("beginning", "end"):
        return StartOffset(text)  # type: ignore[arg-type]
    kind: Literal["offset", "tail", "timestamp"] = "offset"
    number = text
    if text.startswith("s@"):
        kind, number = "timestamp", text[2:]
    elif text.startswith("-"):
        kind, number = "tail", text[1:]
    try:
        value = int(number)
    except ValueError:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not N, -N, s@MS, 'beginning' or 'end'") from None
    if value < 0 or (kind == "tail" and value == 0):
        raise argparse.ArgumentTypeError(f"{text!r} is not N, -N, s@MS, 'beginning' or 'end'")
    return StartOffset(kind, value)


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
    start_at = args.offset or StartOffset("beginning" if args.from_beginning else "end")
    consumer = Consumer(**sdk_config(
        args, group_id=args.group, enable_auto_commit=args.group is not None,
        auto_offset_reset="earliest" if args.from_beginning else "latest"))
    # Idle time counts only once partitions are assigned: joining a group can take seconds.
    idle = IdleTimer(args.timeout_ms) if args.timeout_ms else None
    end = EndOfPartitions(consumer) if args.exit_at_end else None
    count = 0
    try:
        if args.group and args.partition is None:
            consumer.subscribe([args.topic], listener=idle)
        else:
            consumer.assign(partitions)
            if not args.group:
                _seek(consumer, partitions, start_at)
            if idle is not None:
                idle.start()
        out = sys.stdout.buffer
        with Progress(args.max_messages, "consuming",
                      enabled=stderr_only_is_terminal()) as progress:
            while args.max_messages is None or count < args.max_messages:
                remaining = None if args.max_messages is None else args.max_messages - count
                batches = consumer.poll(timeout_ms=_POLL_MS, max_records=remaining)
                records = [r for tp in sorted(batches) for r in batches[tp]]
                if records:
                    out.write(b"".join(render(record) for record in records))
                    out.flush()
                    count += len(records)
                    progress.advance(len(records))
                    if idle is not None:
                        idle.record_activity()
                elif idle is not None and idle.expired():
                    break
                if end is not None and end.reached():
                    break
    finally:
        consumer.close()
        print(f"Processed a total of {count} messages", file=sys.stderr)
    return 0


class EndOfPartitions:
    """``-e``: every assigned partition read up to the end offset it had when first seen.

    In a group the partitions are known only once assigned; each partition's end is looked
    up when it first appears, so records produced after that are left for the next run.
    """

    def __init__(self, consumer: Any) -> None:
        self.consumer = consumer
        self.ends: dict[TopicPartition, int] = {}

    def reached(self) -> bool:
        assigned = self.consumer.assignment()
        if not assigned:
            return False
        new = [tp for tp in assigned if tp not in self.ends]
        if new:
            self.ends.update(self.consumer.end_offsets(new))
        return all(self.consumer.position(tp) >= self.ends[tp] for tp in assigned)


def _chosen_partitions(args: argparse.Namespace, existing: Any) -> list[TopicPartition]:
    wanted = sorted(set(args.partition)) if args.partition else sorted(existing)
    missing = [p for p in wanted if p not in existing]
    if missing:
        raise CliError(f"topic {args.topic!r} has no partition {missing[0]} "
                       f"(it has {len(existing)})")
    return [TopicPartition(args.topic, p) for p in wanted]


def _seek(consumer: Any, partitions: list[TopicPartition], start_at: StartOffset) -> None:
    if start_at.kind == "beginning":
        consumer.seek_to_beginning(*partitions)
    elif start_at.kind == "end":
        consumer.seek_to_end(*partitions)
    elif start_at.kind == "offset":
        for tp in partitions:
            consumer.seek(tp, start_at.value)
    elif start_at.kind == "tail":  # N from the end, but not before the first record
        firsts, ends = consumer.beginning_offsets(partitions), consumer.end_offsets(partitions)
        for tp in partitions:
            consumer.seek(tp, max(firsts[tp], ends[tp] - start_at.value))
    else:  # the first record at or after the timestamp; the end when there is none
        found = consumer.offsets_for_times({tp: start_at.value for tp in partitions})
        ends = consumer.end_offsets(partitions)
        for tp in partitions:
            at = found.get(tp)
            consumer.seek(tp, at.offset if at is not None else ends[tp])
