"""``kafkalite partitions reassign``: kafka-reassign-partitions, with its options, its JSON
documents and its messages (see :mod:`kafkalite.cli.reassignment_plan`).

``--generate`` proposes a plan for moving topics onto ``--broker-list`` and prints the
current assignment (for a rollback) with it; ``--execute`` starts the moves of a plan,
with ``--throttle`` capping their copying (KIP-73); ``--verify`` tells which are done and,
once all are, removes the throttle; ``--cancel`` stops those under way (their partitions go
back to their original replicas); ``--list`` shows every move under way.

A throttle is set as Kafka's tool sets it: the rate as ``leader.replication.throttled.rate``
and ``follower.replication.throttled.rate`` on every broker of the moving partitions' old
and new replicas, and on each moving topic ``leader.replication.throttled.replicas`` (the
current replicas, which the new ones may fetch from) and
``follower.replication.throttled.replicas`` (the replicas being added).
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import Any

from kafkalite.admin import AdminClient, AlterConfigOp, ConfigResource, ConfigResourceType
from kafkalite.cli.options import CliError, UsageError, add_command, positive_int
from kafkalite.cli.reassignment_plan import (
    Plan,
    parse_reassignment,
    parse_topics_to_move,
    propose,
    render,
)
from kafkalite.cli.session import admin_client, cluster_metadata
from kafkalite.errors import NoReassignmentInProgressError
from kafkalite.structs import TopicPartition

REASSIGN_EPILOG = """examples:
  kafkalite partitions reassign --generate --topics-to-move-json-file topics.json \\
      --broker-list 1,2,3,4 > plan.txt
  kafkalite partitions reassign --execute --reassignment-json-file plan.json \\
      --throttle 10485760
  kafkalite partitions reassign --verify --reassignment-json-file plan.json
  kafkalite partitions reassign --cancel --reassignment-json-file plan.json
  kafkalite partitions reassign --list

topics.json: {"version": 1, "topics": [{"topic": "orders"}]}
plan.json:   {"version": 1, "partitions": [{"topic": "orders", "partition": 0,
              "replicas": [4, 2]}]}"""

ACTIONS = ("generate", "execute", "verify", "cancel", "list")


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    partitions = commands.add_parser(
        "partitions", help="move partitions between brokers",
        description="Move partitions between brokers.")
    actions = partitions.add_subparsers(dest="action", required=True, metavar="ACTION",
                                        parser_class=type(partitions))
    reassign = add_command(actions, "reassign", run_reassign,
                           help="plan, start, verify, cancel or list partition "
                                "reassignments, like kafka-reassign-partitions",
                           epilog=REASSIGN_EPILOG, parents=parents)
    mode = reassign.add_mutually_exclusive_group(required=True)
    mode.add_argument("--generate", action="store_true",
                      help="propose a plan moving the topics of --topics-to-move-json-file "
                           "onto --broker-list (prints the current assignment too)")
    mode.add_argument("--execute", action="store_true",
                      help="start the moves of --reassignment-json-file")
    mode.add_argument("--verify", action="store_true",
                      help="tell which moves of --reassignment-json-file are done")
    mode.add_argument("--cancel", action="store_true",
                      help="cancel the moves of --reassignment-json-file under way")
    mode.add_argument("--list", action="store_true", help="list every move under way")
    reassign.add_argument("--topics-to-move-json-file", type=Path, metavar="FILE")
    reassign.add_argument("--reassignment-json-file", type=Path, metavar="FILE")
    reassign.add_argument("--broker-list", type=broker_list_arg, metavar="ID,ID,...",
                          help="the brokers --generate may place replicas on")
    reassign.add_argument("--throttle", type=positive_int, metavar="BYTES_PER_S",
                          help="--execute: cap the copying of the moves at this rate per "
                               "broker (--verify removes the cap once they are done)")


def broker_list_arg(text: str) -> list[int]:
    try:
        ids = [int(part) for part in text.split(",") if part.strip()]
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a comma-separated list of broker "
                                         "ids") from None
    if not ids or len(set(ids)) != len(ids):
        raise argparse.ArgumentTypeError(f"{text!r}: give each broker id once")
    return ids


def run_reassign(args: argparse.Namespace) -> int:
    action = next(name for name in ACTIONS if getattr(args, name))
    if action == "list":
        return _list(args)
    if action == "generate":
        return _generate(args)
    if args.reassignment_json_file is None:
        raise UsageError(f"--{action} needs --reassignment-json-file")
    path = args.reassignment_json_file
    plan = parse_reassignment(_read(path), str(path))
    return {"execute": _execute, "verify": _verify, "cancel": _cancel}[action](args, plan)


def _read(path: Path) -> str:
    try:
        return path.read_text(encoding="utf-8")
    except OSError as exc:
        raise CliError(f"cannot read {path}: {exc.strerror}") from None


def current_assignment(args: argparse.Namespace, topics: set[str]) -> Plan:
    cluster = cluster_metadata(args, topics)
    current: Plan = {}
    for topic in topics:
        for index in cluster.partitions_for_topic(topic) or ():
            partition = cluster.partition_metadata(TopicPartition(topic, index))
            if partition is not None:
                current[(topic, index)] = list(partition.replicas)
    return current


def broker_racks(admin: AdminClient) -> dict[int, str | None]:
    return {b["broker_id"]: b["rack"] for b in admin.describe_cluster()["brokers"]}


def check_brokers(wanted: set[int], known: dict[int, str | None], where: str) -> None:
    unknown = sorted(wanted - set(known))
    if unknown:
        raise CliError(f"{where} names broker(s) {', '.join(map(str, unknown))}, which the "
                       f"cluster does not have (brokers: {', '.join(map(str, sorted(known)))})")


def _generate(args: argparse.Namespace) -> int:
    if args.topics_to_move_json_file is None or args.broker_list is None:
        raise UsageError("--generate needs --topics-to-move-json-file and --broker-list")
    path = args.topics_to_move_json_file
    topics = set(parse_topics_to_move(_read(path), str(path)))
    current = current_assignment(args, topics)
    with admin_client(args) as admin:
        known = broker_racks(admin)
    check_brokers(set(args.broker_list), known, "--broker-list")
    proposed = propose(current, {b: known[b] for b in args.broker_list})
    print(f"Current partition replica assignment\n{render(current)}\n")
    print(f"Proposed partition reassignment configuration\n{render(proposed)}")
    return 0


def _execute(args: argparse.Namespace, plan: Plan) -> int:
    current = current_assignment(args, {topic for topic, _ in plan})
    missing = sorted(key for key in plan if key not in current)
    if missing:
        raise CliError(f"{args.reassignment_json_file}: unknown partition(s) "
                       f"{', '.join(f'{t}-{p}' for t, p in missing)}")
    with admin_client(args) as admin:
        check_brokers({b for replicas in plan.values() for b in replicas}, broker_racks(admin),
                       str(args.reassignment_json_file))
        if args.throttle is not None:
            set_throttle(admin, plan, current, args.throttle)
        results = admin.alter_partition_reassignments(
            {TopicPartition(*key): replicas for key, replicas in plan.items()})
    print(f"Current partition replica assignment\n\n{render({k: current[k] for k in plan})}\n")
    print("Save this to use as the --reassignment-json-file option during rollback")
    failed = {tp: error for tp, error in results.items() if error is not None}
    for tp, error in sorted(failed.items()):
        print(f"Error reassigning partition(s): {tp.topic}-{tp.partition}: {error}")
    started = sorted(tp for tp, error in results.items() if error is None)
    if started:
        print("Successfully started partition reassignments for "
              + ",".join(f"{tp.topic}-{tp.partition}" for tp in started))
    if args.throttle is not None:
        print("Warning: You must run --verify periodically, until the reassignment "
              "completes, to ensure the throttle is removed.")
        print(f"The inter-broker throttle limit was set to {args.throttle} B/s")
    return 1 if failed else 0


_RATES = ("leader.replication.throttled.rate", "follower.replication.throttled.rate")
_THROTTLED_REPLICAS = ("leader.replication.throttled.replicas",
                       "follower.replication.throttled.replicas")


def set_throttle(admin: AdminClient, plan: Plan, current: Plan, rate: int) -> None:
    """Kafka's throttle of a reassignment: the rate on the brokers involved, and per topic
    the replicas the copying leaves (current) and reaches (added)."""
    moving = {key: target for key, target in plan.items() if target != current[key]}
    leaders: dict[str, list[str]] = {}
    followers: dict[str, list[str]] = {}
    for (topic, index), target in sorted(moving.items()):
        leaders.setdefault(topic, []).extend(f"{index}:{b}" for b in current[(topic, index)])
        followers.setdefault(topic, []).extend(
            f"{index}:{b}" for b in target if b not in current[(topic, index)])
    brokers = sorted({b for key, target in moving.items() for b in [*target, *current[key]]})
    resources = [ConfigResource(ConfigResourceType.BROKER, str(b),
                                configs=dict.fromkeys(_RATES, str(rate))) for b in brokers]
    resources += [ConfigResource(ConfigResourceType.TOPIC, topic, configs={
        _THROTTLED_REPLICAS[0]: ",".join(leaders[topic]),
        _THROTTLED_REPLICAS[1]: ",".join(followers[topic])}) for topic in sorted(leaders)]
    _alter(admin, resources, "setting the throttle")


def clear_throttles(admin: AdminClient, topics: set[str]) -> None:
    """What --verify does once every move is done: no throttle left anywhere."""
    brokers = sorted(broker_racks(admin))
    print(f"Clearing broker-level throttles on brokers {ids_text(brokers)}")
    resources = [ConfigResource(ConfigResourceType.BROKER, str(b), configs={
        key: (AlterConfigOp.DELETE, None) for key in _RATES}) for b in brokers]
    for topic in sorted(topics):
        print(f"Clearing topic-level throttles on topic {topic}")
        resources.append(ConfigResource(ConfigResourceType.TOPIC, topic, configs={
            key: (AlterConfigOp.DELETE, None) for key in _THROTTLED_REPLICAS}))
    _alter(admin, resources, "clearing the throttle")


def _alter(admin: AdminClient, resources: list[ConfigResource], doing: str) -> None:
    results = admin.incremental_alter_configs(resources)
    refused = [f"{kind} {name}: {outcome}" for kind, outcomes in sorted(results.items())
               for name, outcome in sorted(outcomes.items()) if outcome != "OK"]
    if refused:
        raise CliError(f"{doing}: {'; '.join(refused)}")


def _verify(args: argparse.Namespace, plan: Plan) -> int:
    with admin_client(args) as admin:
        ongoing = admin.list_partition_reassignments([TopicPartition(*key) for key in plan])
    current = current_assignment(args, {topic for topic, _ in plan})
    print("Status of partition reassignment:")
    done = True
    for key, replicas in sorted(plan.items()):
        name = f"{key[0]}-{key[1]}"
        if TopicPartition(*key) in ongoing:
            done = False
            print(f"Reassignment of partition {name} is still in progress.")
        elif current.get(key) == replicas:
            print(f"Reassignment of partition {name} is completed.")
        else:
            done = False
            print(f"There is no active reassignment of partition {name}, but replica set is "
                  f"{ids_text(current.get(key, []))} rather than {ids_text(replicas)}.")
    if done:
        with admin_client(args) as admin:
            clear_throttles(admin, {topic for topic, _ in plan})
    return 0 if done else 1


def _cancel(args: argparse.Namespace, plan: Plan) -> int:
    with admin_client(args) as admin:
        results = admin.alter_partition_reassignments(
            {TopicPartition(*key): None for key in plan})
    failed = {tp: error for tp, error in results.items() if error is not None
              and not isinstance(error, NoReassignmentInProgressError)}
    for tp, error in sorted(failed.items()):
        print(f"Error cancelling the reassignment of {tp.topic}-{tp.partition}: {error}")
    cancelled = sorted(tp for tp, error in results.items() if error is None)
    if cancelled:
        print("Successfully cancelled partition reassignments for: "
              + ",".join(f"{tp.topic}-{tp.partition}" for tp in cancelled))
    elif not failed:
        print("None of the specified partition reassignments are active.")
    return 1 if failed else 0


def _list(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        ongoing = admin.list_partition_reassignments()
    if not ongoing:
        print("No partition reassignments found.")
        return 0
    print("Current partition reassignments:")
    for tp, move in sorted(ongoing.items()):
        print(f"{tp.topic}-{tp.partition}: replicas: {ids_text(move['replicas'])}. "
              f"adding: {ids_text(move['adding_replicas'])}. "
              f"removing: {ids_text(move['removing_replicas'])}.")
    return 0


def ids_text(ids: list[int]) -> str:
    return ",".join(map(str, ids))
