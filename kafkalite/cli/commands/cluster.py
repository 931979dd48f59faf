"""``kafkalite cluster rebalance``: spread the replicas over the brokers in one command.

Kafka's own tools leave this to three runs of kafka-reassign-partitions (``--generate``,
``--execute``, ``--verify`` until done), and operators reach for Cruise Control. Here one
command plans the moves as ``--generate`` does (every replica that can stay stays; each
broker gets its share, racks spread, preferred leaders even), prints the current
assignment of the moved partitions (the rollback plan), starts the moves with an optional
replication throttle, shows them completing on a progress bar, and removes the throttle
once all are done.
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from kafkalite.admin import AdminClient
from kafkalite.cli.commands.partitions import (
    broker_list_arg,
    broker_racks,
    check_brokers,
    clear_throttles,
    current_assignment,
    ids_text,
    set_throttle,
)
from kafkalite.cli.options import CliError, add_command, positive_int
from kafkalite.cli.progress import Progress
from kafkalite.cli.reassignment_plan import Plan, propose, render
from kafkalite.cli.session import admin_client
from kafkalite.structs import TopicPartition

POLL_S = 0.5

REBALANCE_EPILOG = """examples:
  kafkalite cluster rebalance --throttle 10485760          # every topic, every broker
  kafkalite cluster rebalance --topic orders --topic audit --broker-list 1,2,3,4
  kafkalite cluster rebalance --broker-list 1,2,4           # empty broker 3 before retiring it

The moves continue on the cluster if the command is interrupted or times out; follow them
with `kafkalite partitions reassign --list`, and clear a throttle left behind with
`kafkalite partitions reassign --verify` on the printed rollback plan's partitions."""


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    cluster = commands.add_parser("cluster", help="operate on the whole cluster",
                                  description="Operate on the whole cluster.")
    actions = cluster.add_subparsers(dest="action", required=True, metavar="ACTION",
                                     parser_class=type(cluster))
    rebalance = add_command(actions, "rebalance", run_rebalance,
                            help="plan, start and wait for the partition moves that spread "
                                 "the replicas evenly over the brokers",
                            epilog=REBALANCE_EPILOG, parents=parents)
    rebalance.add_argument("--topic", action="append", default=[], dest="topics",
                           metavar="TOPIC", help="a topic to rebalance (repeatable; default: "
                                                 "every topic but the internal ones)")
    rebalance.add_argument("--broker-list", type=broker_list_arg, metavar="ID,ID,...",
                           help="the brokers to hold the replicas (default: every broker)")
    rebalance.add_argument("--throttle", type=positive_int, metavar="BYTES_PER_S",
                           help="cap the copying at this rate per broker until done")
    rebalance.add_argument("--timeout", type=positive_int, default=3600, metavar="SECONDS",
                           help="give up waiting after this long (default 3600; the moves "
                                "go on)")


def run_rebalance(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        topics = set(args.topics) or set(admin.list_topics())
        known = broker_racks(admin)
    brokers = args.broker_list or sorted(known)
    check_brokers(set(brokers), known, "--broker-list")
    current = current_assignment(args, topics)
    missing = sorted(set(args.topics) - {topic for topic, _ in current})
    if missing:
        raise CliError(f"unknown topic(s): {', '.join(missing)}")
    proposed = propose(current, {b: known[b] for b in brokers})
    moves: Plan = {key: target for key, target in proposed.items() if target != current[key]}
    if not moves:
        print(f"Nothing to move: the replicas are spread over brokers {ids_text(brokers)}.")
        return 0
    print(f"Moving {len(moves)} of {len(current)} partition(s) to spread their replicas over "
          f"brokers {ids_text(brokers)}.")
    print(f"Rollback plan (the moved partitions' current assignment):\n"
          f"{render({key: current[key] for key in moves})}")
    with admin_client(args) as admin:
        if args.throttle is not None:
            set_throttle(admin, moves, current, args.throttle)
            print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
        results = admin.alter_partition_reassignments(
            {TopicPartition(*key): target for key, target in moves.items()})
        failed = {tp: error for tp, error in results.items() if error is not None}
        started = [tp for tp, error in results.items() if error is None]
        _wait(admin, started, args.timeout)
        if args.throttle is not None:
            clear_throttles(admin, {topic for topic, _ in moves})
    for tp, error in sorted(failed.items()):
        print(f"Error reassigning partition(s): {tp.topic}-{tp.partition}: {error}")
    print(f"Rebalanced: {len(started)} partition(s) moved.")
    return 1 if failed else 0


def _wait(admin: AdminClient, moving: list[TopicPartition], timeout: int) -> None:
    """Until none of ``moving`` is listed under way, with a progress bar (on a terminal)."""
    deadline = time.monotonic() + timeout
    with Progress(len(moving), "moving partitions") as bar:
        while moving:
            ongoing = admin.list_partition_reassignments(moving)
            bar.advance(len(moving) - len(ongoing) - bar.done)
            if not ongoing:
                return
            if time.monotonic() > deadline:
                raise CliError(f"{len(ongoing)} partition move(s) still under way after "
                               f"{timeout} s; they go on: follow them with `kafkalite "
                               f"partitions reassign --list`")
            time.sleep(POLL_S)
