"""``kafkalite groups list|describe|reset-offsets|delete``, like kafka-consumer-groups."""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from typing import Any

from kafkalite.cli.group_view import GroupView, PartitionRow, describe_group
from kafkalite.cli.options import CliError, UsageError, add_command
from kafkalite.cli.output import print_json, print_table
from kafkalite.cli.session import admin_client, client_config, cluster_metadata, require_topic
from kafkalite.consumer import Consumer
from kafkalite.errors import KafkaError, NoError
from kafkalite.structs import TopicPartition

LIST_EPILOG = """examples:
  kafkalite groups list"""

DESCRIBE_EPILOG = """examples:
  kafkalite groups describe billing
  kafkalite groups describe billing --json
  kafkalite groups describe billing --plot billing.png     # needs matplotlib"""

LAG_EPILOG = """examples:
  kafkalite groups lag billing
  kafkalite groups lag billing --watch     # redraws every second until Ctrl-C

Per partition with a committed offset: the committed offset, the log end offset and the
lag between them, then the group's total lag."""

RESET_EPILOG = """examples:
  kafkalite groups reset-offsets billing --topic events --to-earliest           # dry run
  kafkalite groups reset-offsets billing --topic events --to-latest --execute
  kafkalite groups reset-offsets billing --topic events --to-offset 100 --execute
  kafkalite groups reset-offsets billing --topic events --to-datetime 2025-01-31T12:00:00

Without --execute nothing changes: the plan is printed. The group must have no active
members (stop its consumers first), as with kafka-consumer-groups. --to-offset is clamped
to the partition's earliest and latest offsets."""

DELETE_EPILOG = """examples:
  kafkalite groups delete billing                  # the group and all its committed offsets
  kafkalite groups delete billing audit
  kafkalite groups delete billing --topic events   # only the group's offsets of one topic

A group with active members cannot be deleted (stop its consumers first); with --topic, the
offsets of a topic its active members consume cannot be deleted either, as with
kafka-consumer-groups --delete and --delete-offsets."""

#: What a group-wide refusal of DeleteGroups / OffsetDelete means, by error name.
_REFUSALS = {
    "GroupIdNotFoundError": "does not exist",
    "NonEmptyGroupError": "has active members; stop them first",
}


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    groups = commands.add_parser("groups", help="list, describe, reset and delete consumer "
                                 "groups", description="List, describe, reset and delete "
                                 "consumer groups.")
    actions = groups.add_subparsers(dest="action", required=True, metavar="ACTION",
                                    parser_class=type(groups))
    add_command(actions, "list", run_list, help="print consumer group ids",
                epilog=LIST_EPILOG, parents=parents)

    describe = add_command(actions, "describe", run_describe,
                           help="members, assignment, committed offsets and lag of a group",
                           epilog=DESCRIBE_EPILOG, parents=parents)
    describe.add_argument("group")
    describe.add_argument("--json", action="store_true", help="one JSON document")
    describe.add_argument("--plot", metavar="FILE.png",
                          help="also draw the assignment and lag per partition (matplotlib)")

    lag = add_command(actions, "lag", run_lag,
                      help="committed offset, end offset and lag per partition, and the total",
                      epilog=LAG_EPILOG, parents=parents)
    lag.add_argument("group")
    lag.add_argument("--watch", action="store_true", help="redraw every second until Ctrl-C")

    reset = add_command(actions, "reset-offsets", run_reset,
                        help="move a group's committed offsets (dry run unless --execute)",
                        epilog=RESET_EPILOG, parents=parents)
    reset.add_argument("group")
    reset.add_argument("-t", "--topic", action="append", required=True, dest="topics",
                       metavar="TOPIC", help="reset every partition of this topic (repeatable)")
    target = reset.add_mutually_exclusive_group(required=True)
    target.add_argument("--to-earliest", action="store_true")
    target.add_argument("--to-latest", action="store_true")
    target.add_argument("--to-offset", type=int, metavar="N")
    target.add_argument("--to-datetime", type=_datetime_ms, metavar="ISO-8601",
                        help="e.g. 2025-01-31T12:00:00 (local time) or ...+00:00")
    reset.add_argument("--execute", action="store_true", help="commit the new offsets")

    delete = add_command(actions, "delete", run_delete,
                         help="delete groups (DeleteGroups) or a group's offsets of a topic "
                         "(OffsetDelete)", epilog=DELETE_EPILOG, parents=parents)
    delete.add_argument("groups", nargs="+", metavar="GROUP")
    delete.add_argument("-t", "--topic", action="append", dest="topics", metavar="TOPIC",
                        help="delete only the group's committed offsets of this topic "
                        "(repeatable; one GROUP)")


def _datetime_ms(text: str) -> int:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an ISO 8601 date-time") from None
    return int(moment.timestamp() * 1000)


def run_list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        for group in sorted(list_group_ids(admin)):
            print(group)
    return 0


def run_describe(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        view = describe_group(admin, args.group)
    if args.plot:
        from kafkalite.cli.plot import plot_group

        plot_group(view, args.plot)
    if args.json:
        print_json(view.as_dict())
        return 0
    print(f"Consumer group '{view.group}' is {view.state} "
          f"({len(view.members)} members{', ' + view.protocol if view.protocol else ''}).")
    print()
    print_table(["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                 "CONSUMER-ID", "HOST", "CLIENT-ID"],
                [_row(view.group, row) for row in view.partitions])
    return 0


WATCH_INTERVAL_S = 1.0
_CLEAR_SCREEN = "\x1b[H\x1b[2J"


def run_lag(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        if not args.watch:
            _print_lag(describe_group(admin, args.group))
            return 0
        try:
            while True:
                view = describe_group(admin, args.group)
                print(_CLEAR_SCREEN, end="")
                print(f"{datetime.now():%H:%M:%S}  every {WATCH_INTERVAL_S:g} s, Ctrl-C stops")
                _print_lag(view)
                sys.stdout.flush()
                time.sleep(WATCH_INTERVAL_S)
        except KeyboardInterrupt:
            return 0


def _print_lag(view: GroupView) -> None:
    rows: list[list[Any]] = [[row.topic, row.partition, row.committed, row.end_offset, row.lag]
                             for row in view.partitions]
    rows.append(["TOTAL", None, None, None, view.total_lag])
    print_table(["TOPIC", "PARTITION", "COMMITTED", "END-OFFSET", "LAG"], rows)


def _row(group: str, row: PartitionRow) -> list[Any]:
    member = row.member
    return [group, row.topic, row.partition, row.committed, row.end_offset, row.lag,
            member.member_id if member else None, member.host if member else None,
            member.client_id if member else None]


def run_reset(args: argparse.Namespace) -> int:
    cluster = cluster_metadata(args, args.topics)
    partitions = [TopicPartition(topic, p) for topic in sorted(set(args.topics))
                  for p in sorted(require_topic(cluster, topic))]
    with admin_client(args) as admin:
        view = describe_group(admin, args.group)
    if view.members:
        raise CliError(f"group {args.group!r} has {len(view.members)} active members "
                       f"(state {view.state}); stop them before resetting offsets")
    reader = Consumer(**client_config(args), enable_auto_commit=False)
    try:
        plan = _new_offsets(args, reader, partitions)
    finally:
        reader.close()
    if args.execute:
        committer = Consumer(**client_config(args), group_id=args.group,
                             enable_auto_commit=False)
        try:
            committer.assign(partitions)
            committer.commit(plan)
        finally:
            committer.close(autocommit=False)
    print_table(["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"],
                [[args.group, tp.topic, tp.partition, plan[tp]] for tp in partitions])
    if not args.execute:
        print("\n(dry run: add --execute to commit these offsets)")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    if args.topics:
        return _delete_offsets(args)
    with admin_client(args) as admin:
        results = admin.delete_groups(list(dict.fromkeys(args.groups)))
    refused = []
    for group, outcome in results.items():
        if outcome == "OK":
            print(f"Deleted consumer group {group!r}.")
        else:
            refused.append(f"consumer group {group!r} {_REFUSALS.get(outcome, outcome)}")
    if refused:
        raise CliError("; ".join(refused))
    return 0


def _delete_offsets(args: argparse.Namespace) -> int:
    if len(args.groups) != 1:
        raise UsageError("--topic deletes the offsets of one group; name exactly one GROUP")
    (group,) = args.groups
    cluster = cluster_metadata(args, args.topics)
    partitions = [TopicPartition(topic, p) for topic in sorted(set(args.topics))
                  for p in sorted(require_topic(cluster, topic))]
    with admin_client(args) as admin:
        try:
            results = admin.delete_group_offsets(group, partitions)
        except KafkaError as exc:
            reason = _REFUSALS.get(type(exc).__name__)
            raise CliError(f"consumer group {group!r} {reason}" if reason else str(exc)) \
                from None
    print_table(["GROUP", "TOPIC", "PARTITION", "STATUS"],
                [[group, tp.topic, tp.partition,
                  "deleted" if error is NoError else error.__name__]
                 for tp, error in sorted(results.items())])
    refused = sorted({(tp.topic, error.__name__) for tp, error in results.items()
                      if error is not NoError})
    if refused:
        raise CliError("; ".join(
            f"offsets of topic {topic!r} not deleted: " + (
                "an active member of the group consumes it"
                if name == "GroupSubscribedToTopicError" else name)
            for topic, name in refused))
    return 0


def _new_offsets(args: argparse.Namespace, reader: Any, partitions: list[TopicPartition]
                 ) -> dict[TopicPartition, int]:
    if args.to_datetime is not None:
        found = reader.offsets_for_times(dict.fromkeys(partitions, args.to_datetime))
        missing = [tp for tp, hit in found.items() if hit is None]
        ends = reader.end_offsets(missing) if missing else {}
        return {tp: ends[tp] if found[tp] is None else found[tp].offset for tp in partitions}
    earliest = reader.beginning_offsets(partitions)
    latest = reader.end_offsets(partitions)
    if args.to_earliest:
        return earliest
    if args.to_latest:
        return latest
    if args.to_offset < 0:
        raise UsageError(f"--to-offset must not be negative, not {args.to_offset}")
    return {tp: min(max(args.to_offset, earliest[tp]), latest[tp]) for tp in partitions}


def list_group_ids(admin: Any) -> list[str]:
    return [group.group_id for group in admin.list_groups()]
