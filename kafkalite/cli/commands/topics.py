"""``kafkalite topics list|create|delete|describe|elect-leaders``, like kafka-topics and
kafka-leader-election."""

from __future__ import annotations

import argparse
from typing import Any

from kafkalite.admin import (
    AdminClient,
    ConfigResource,
    ConfigResourceType,
    ElectionType,
    NewTopic,
)
from kafkalite.cli.commands.metadata import describe_cluster
from kafkalite.cli.options import (
    CliError,
    add_command,
    key_value,
    non_negative_int,
    positive_int,
)
from kafkalite.cli.output import print_json
from kafkalite.cli.session import admin_client, cluster_metadata
from kafkalite.errors import (
    BrokerResponseError,
    ElectionNotNeededError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from kafkalite.structs import PartitionMetadata, TopicPartition

LIST_EPILOG = """examples:
  kafkalite topics list
  kafkalite topics list --include-internal"""

CREATE_EPILOG = """examples:
  kafkalite topics create events --partitions 3
  kafkalite topics create compacted --config cleanup.policy=compact --config retention.ms=-1
  kafkalite topics create a b c --partitions 6 --if-not-exists"""

DELETE_EPILOG = """examples:
  kafkalite topics delete events
  kafkalite topics delete a b c"""

ELECT_EPILOG = """examples:
  kafkalite topics elect-leaders                      # preferred leaders, every partition
  kafkalite topics elect-leaders events --partition 0 --partition 2
  kafkalite topics elect-leaders events --type unclean   # offline partitions, data may be lost"""

DESCRIBE_EPILOG = """examples:
  kafkalite topics describe events
  kafkalite topics describe            # every topic
  kafkalite topics describe events --json
  kafkalite topics describe --under-replicated   # only partitions whose ISR lacks replicas"""


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    topics = commands.add_parser("topics", help="list, create, delete and describe topics",
                                 description="List, create, delete and describe topics.")
    actions = topics.add_subparsers(dest="action", required=True, metavar="ACTION",
                                    parser_class=type(topics))
    listing = add_command(actions, "list", run_list, help="print topic names",
                          epilog=LIST_EPILOG, parents=parents)
    listing.add_argument("--include-internal", action="store_true",
                         help="also list internal topics such as __consumer_offsets")

    create = add_command(actions, "create", run_create, help="create topics",
                         epilog=CREATE_EPILOG, parents=parents)
    create.add_argument("topics", nargs="+", metavar="TOPIC")
    create.add_argument("--partitions", type=positive_int,
                        help="number of partitions (default: the broker's num.partitions)")
    create.add_argument("--replication-factor", type=positive_int,
                        help="replicas per partition (default: the broker's "
                             "default.replication.factor)")
    create.add_argument("--config", type=key_value, action="append", default=[],
                        metavar="KEY=VALUE", help="a topic config (repeatable)")
    create.add_argument("--if-not-exists", action="store_true",
                        help="succeed if a topic already exists")

    delete = add_command(actions, "delete", run_delete, help="delete topics",
                         epilog=DELETE_EPILOG, parents=parents)
    delete.add_argument("topics", nargs="+", metavar="TOPIC")

    describe = add_command(actions, "describe", run_describe,
                           help="show partitions, leaders, replicas and configs",
                           epilog=DESCRIBE_EPILOG, parents=parents)
    describe.add_argument("topics", nargs="*", metavar="TOPIC")
    describe.add_argument("--json", action="store_true", help="one JSON document")
    describe.add_argument("--under-replicated", "--under-replicated-partitions",
                          dest="under_replicated", action="store_true",
                          help="only partitions whose ISR is smaller than their replica list")

    elect = add_command(actions, "elect-leaders", run_elect_leaders,
                        help="move leadership to preferred replicas (or elect offline "
                             "partitions' leaders uncleanly)",
                        epilog=ELECT_EPILOG, parents=parents)
    elect.add_argument("topics", nargs="*", metavar="TOPIC",
                       help="topics (default: every partition of every topic)")
    elect.add_argument("--partition", type=non_negative_int, action="append", default=[],
                       help="only this partition of the topics (repeatable)")
    elect.add_argument("--type", choices=["preferred", "unclean"], default="preferred",
                       help="preferred: the first replica leads again if it is in sync; "
                            "unclean: a partition without a live leader takes any live "
                            "replica")


def run_list(args: argparse.Namespace) -> int:
    cluster = cluster_metadata(args)
    for name in sorted(cluster.topics(exclude_internal=not args.include_internal)):
        print(name)
    return 0


def run_create(args: argparse.Namespace) -> int:
    new_topics = [NewTopic(name, args.partitions or -1, args.replication_factor or -1,
                           config=dict(args.config)) for name in args.topics]
    with admin_client(args) as admin:
        for topic in new_topics:
            try:
                admin.create_topics([topic])
            except TopicAlreadyExistsError as exc:
                if not args.if_not_exists:
                    raise refusal("create", topic.name, exc) from None
                continue
            except BrokerResponseError as exc:
                raise refusal("create", topic.name, exc) from None
            print(f"Created topic {topic.name}.")
    return 0


def run_delete(args: argparse.Namespace) -> int:
    with admin_client(args) as admin:
        for name in args.topics:
            try:
                admin.delete_topics([name])
            except BrokerResponseError as exc:
                raise refusal("delete", name, exc) from None
            print(f"Deleted topic {name}.")
    return 0


_REASONS: dict[type[BrokerResponseError], str] = {
    UnknownTopicOrPartitionError: "no such topic",
    TopicAlreadyExistsError: "it already exists",
}


def refusal(action: str, topic: str, exc: BrokerResponseError) -> CliError:
    """A broker's refusal as one sentence, e.g. ``cannot delete topic 'x': no such topic``.

    The broker's own explanation wins when it sent one (the admin client appends it to the
    error's context after ``: ``); otherwise a reason for the error code.
    """
    detail = exc.context.partition(": ")[2].strip()
    reason = detail or _REASONS.get(type(exc)) or exc.message.rstrip(".")
    return CliError(f"cannot {action} topic {topic!r}: {reason}")


def run_describe(args: argparse.Namespace) -> int:
    cluster = cluster_metadata(args, args.topics or None)
    data = describe_cluster(cluster, args.topics or None)
    topics = [t for t in data["topics"] if args.topics or not t["internal"]]
    live = {broker["id"] for broker in data["brokers"]}
    for topic in topics:
        for p in topic["partitions"]:
            add_replica_health(p, cluster.partition_metadata(
                TopicPartition(topic["name"], p["partition"])), live)
    if args.under_replicated:
        for topic in topics:
            topic["partitions"] = [p for p in topic["partitions"] if p["under_replicated"]]
        topics = [t for t in topics if t["partitions"]]
    else:
        with admin_client(args) as admin:
            for topic in topics:
                topic["configs"] = topic_configs(admin, topic["name"])
    if args.json:
        print_json(topics)
        return 0
    for topic in topics:
        partitions = topic["partitions"]
        if not args.under_replicated:  # as kafka-topics: the filter prints partitions only
            replication = len(partitions[0]["replicas"]) if partitions else 0
            configs = ",".join(f"{k}={v}" for k, v in sorted(topic["configs"].items()))
            print(f"Topic: {topic['name']}\tPartitionCount: {len(partitions)}\t"
                  f"ReplicationFactor: {replication}\tConfigs: {configs}")
        for p in partitions:
            print(partition_line(topic["name"], p))
    return 0


def add_replica_health(partition: dict[str, Any], meta: PartitionMetadata | None,
                       live: set[int]) -> None:
    """Adds ``offline_replicas`` and ``under_replicated`` to a described partition.

    A replica is offline when the broker says so (its log dir failed) or when its broker is
    not among the live brokers Metadata lists (it crashed or stopped). A partition is
    under-replicated when its ISR is smaller than its replica list, as kafka-topics counts.
    """
    reported = set(meta.offline_replicas) if meta is not None else set()
    partition["offline_replicas"] = [r for r in partition["replicas"]
                                     if r in reported or r not in live]
    partition["under_replicated"] = len(partition["isr"]) < len(partition["replicas"])


def partition_line(topic: str, p: dict[str, Any]) -> str:
    """kafka-topics' partition line; ``Offline:`` and the mark only when they apply."""
    leader = p["leader"] if p["leader"] >= 0 else "none"
    line = (f"\tTopic: {topic}\tPartition: {p['partition']}\tLeader: {leader}\t"
            f"Replicas: {_ids(p['replicas'])}\tIsr: {_ids(p['isr'])}")
    if p["offline_replicas"]:
        line += f"\tOffline: {_ids(p['offline_replicas'])}"
    if p["under_replicated"]:
        line += "\tUnderReplicated: true"
    return line


def run_elect_leaders(args: argparse.Namespace) -> int:
    if args.partition and not args.topics:
        raise CliError("--partition needs the topics it applies to")
    wanted = ({topic: args.partition for topic in args.topics} if args.partition
              else args.topics or None)
    kind = ElectionType[args.type.upper()]
    with admin_client(args) as admin:
        outcomes = admin.elect_leaders(kind, wanted, raise_errors=False)
    failed = 0
    for tp, error in sorted(outcomes.items()):
        if error is None:
            print(f"Elected a new leader for {tp.topic}-{tp.partition}.")
        elif isinstance(error, ElectionNotNeededError):
            print(f"{tp.topic}-{tp.partition}: the valid leader is already elected.")
        else:
            failed += 1
            print(f"{tp.topic}-{tp.partition}: {error.context.partition(': ')[2] or error}")
    return 1 if failed else 0


def topic_configs(admin: AdminClient, topic: str) -> dict[str, str | None]:
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    return admin.describe_configs([resource])[resource]


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids))
