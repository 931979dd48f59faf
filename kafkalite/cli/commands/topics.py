"""``kafkalite topics list|create|delete|describe|alter|elect-leaders``, like kafka-topics and
kafka-leader-election."""

from __future__ import annotations

import argparse
from collections.abc import Callable
from typing import Any

from kafkalite.admin import (
    AdminClient,
    ConfigResource,
    ConfigResourceType,
    ElectionType,
    NewPartitions,
    NewTopic,
)
from kafkalite.cli.commands.metadata import describe_cluster
from kafkalite.cli.options import (
    CliError,
    UsageError,
    add_command,
    key_value,
    non_negative_int,
    positive_int,
)
from kafkalite.cli.output import print_json
from kafkalite.cli.session import admin_client, cluster_metadata, require_topic
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

ALTER_EPILOG = """examples:
  kafkalite topics alter events --partitions 6       # add partitions (never fewer)
  kafkalite topics alter events --config retention.ms=3600000 --config cleanup.policy=compact
  kafkalite topics alter events --delete-config retention.ms   # back to the broker's default"""

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
    topics = commands.add_parser("topics", help="list, create, delete, describe and alter topics",
                                 description="List, create, delete, describe and alter topics.")
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

    alter = add_command(actions, "alter", run_alter,
                        help="add partitions to topics, or change their configs",
                        epilog=ALTER_EPILOG, parents=parents)
    alter.add_argument("topics", nargs="+", metavar="TOPIC")
    alter.add_argument("--partitions", type=positive_int, metavar="N",
                       help="grow each topic to N partitions (Kafka cannot remove partitions)")
    alter.add_argument("--config", type=key_value, action="append", default=[],
                       metavar="KEY=VALUE", help="set a topic config (repeatable)")
    alter.add_argument("--delete-config", action="append", default=[], metavar="KEY",
                       help="remove a topic's own setting of KEY, so the broker's default "
                            "applies again (repeatable)")

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


def run_alter(args: argparse.Namespace) -> int:
    """Partitions first, then config changes, topic by topic; stops at the first refusal.

    Each topic is checked to exist first, so a typo is "unknown topic" rather than an
    error per change.
    """
    settings = dict(args.config)
    if args.partitions is None and not settings and not args.delete_config:
        raise UsageError("nothing to alter: give --partitions, --config or --delete-config")
    both = sorted(set(settings) & set(args.delete_config))
    if both:
        raise UsageError(f"{', '.join(both)}: both --config and --delete-config")
    cluster = cluster_metadata(args, args.topics)
    with admin_client(args) as admin:
        for topic in args.topics:
            changes = []
            if args.partitions is not None:
                before = len(require_topic(cluster, topic))
                add_partitions(admin, topic, args.partitions)
                changes.append(f"partitions {before} -> {args.partitions}")
            if settings:
                change_configs(admin.alter_configs, topic, settings)
                changes.append("set " + ", ".join(f"{k}={v}" for k, v in settings.items()))
            if args.delete_config:
                change_configs(admin.reset_configs, topic, args.delete_config)
                changes.append("deleted " + ", ".join(args.delete_config))
            print(f"Altered topic {topic}: {'; '.join(changes)}.")
    return 0


def add_partitions(admin: AdminClient, topic: str, count: int) -> None:
    try:
        admin.create_partitions({topic: NewPartitions(count)})
    except BrokerResponseError as exc:
        raise refusal("alter", topic, exc) from None


def change_configs(alter: Callable[[list[ConfigResource]], dict[str, dict[str, str]]],
                   topic: str, configs: dict[str, str] | list[str]) -> None:
    """``alter`` is the admin client's ``alter_configs`` or ``reset_configs``: both refuse a
    key the topic does not have before sending, and report the broker's refusal per topic."""
    try:
        outcome = alter([ConfigResource(ConfigResourceType.TOPIC, topic, configs)])
    except ValueError as exc:
        raise CliError(f"cannot alter topic {topic!r}: {exc}") from None
    result = outcome.get("topic", {}).get(topic, "no answer from the broker")
    if result != "OK":
        raise CliError(f"cannot alter topic {topic!r}: {result}")


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
    """The topic's configs that are not Kafka's defaults: its own settings and the broker
    settings it inherits (DescribeConfigs sources), as kafka-topics prints them."""
    resource = ConfigResource(ConfigResourceType.TOPIC, topic)
    return admin.describe_configs([resource], config_filter="modified")[resource]


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids))
