"""``kafkalite metadata``: brokers, topics, partitions and leaders, like ``kcat -L``."""

from __future__ import annotations

import argparse
from typing import Any

from kafkalite.cli.options import add_command
from kafkalite.cli.output import print_json
from kafkalite.cli.session import cluster_metadata
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.structs import TopicPartition

EPILOG = """examples:
  kafkalite metadata
  kafkalite metadata --topic events
  kafkalite metadata --json | jq '.topics[].name'"""


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(commands, "metadata", run,
                         help="show brokers, topics, partitions and leaders",
                         epilog=EPILOG, parents=parents)
    parser.add_argument("-t", "--topic", action="append", dest="topics", metavar="TOPIC",
                        help="only this topic (repeatable; default: every topic)")
    parser.add_argument("--json", action="store_true", help="one JSON document")


def run(args: argparse.Namespace) -> int:
    cluster = cluster_metadata(args, args.topics)
    data = describe_cluster(cluster, args.topics)
    if args.json:
        print_json(data)
        return 0
    print(f"cluster {data['cluster_id'] or '-'}")
    print(f" {len(data['brokers'])} brokers:")
    for broker in data["brokers"]:
        role = " (controller)" if broker["controller"] else ""
        rack = f" rack {broker['rack']}" if broker["rack"] else ""
        print(f"  broker {broker['id']} at {broker['host']}:{broker['port']}{rack}{role}")
    print(f" {len(data['topics'])} topics:")
    for topic in data["topics"]:
        internal = " (internal)" if topic["internal"] else ""
        print(f"  topic {topic['name']!r} with {len(topic['partitions'])} partitions{internal}:")
        for p in topic["partitions"]:
            print(f"    partition {p['partition']}, leader {p['leader']}, "
                  f"replicas: {_ids(p['replicas'])}, isrs: {_ids(p['isr'])}")
    return 0


def describe_cluster(cluster: ClusterMetadata, topics: list[str] | None) -> dict[str, Any]:
    """The metadata as JSON-ready data, brokers and topics sorted."""
    names = sorted(topics) if topics else sorted(cluster.topics())
    internal = cluster.topics() - cluster.topics(exclude_internal=True)
    return {
        "cluster_id": cluster.cluster_id,
        "controller_id": cluster.controller_id,
        "brokers": [
            {"id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack,
             "controller": b.node_id == cluster.controller_id}
            for b in sorted(cluster.brokers())
        ],
        "topics": [
            {"name": name, "internal": name in internal,
             "partitions": [_partition(cluster, TopicPartition(name, p))
                            for p in sorted(cluster.partitions_for_topic(name) or ())]}
            for name in names
        ],
    }


def _partition(cluster: ClusterMetadata, tp: TopicPartition) -> dict[str, Any]:
    meta = cluster.partition_metadata(tp)
    assert meta is not None
    return {"partition": tp.partition, "leader": meta.leader, "leader_epoch": meta.leader_epoch,
            "replicas": list(meta.replicas), "isr": list(meta.isr)}


def _ids(ids: list[int]) -> str:
    return ",".join(map(str, ids)) or "-"
