"""What the console shows, read from the cluster through the SDK's clients as JSON-ready data.

One :class:`ClusterReader` serves every request of a console. Its clients are made for one
caller at a time, while the web server answers requests from a thread pool, so each read
holds the reader's lock: the console is for people, a few requests a second at most.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

from kafkalite.admin import AdminClient, ConfigResource, ConfigResourceType
from kafkalite.cli.group_view import describe_group
from kafkalite.console.values import decode_bytes
from kafkalite.consumer import Consumer
from kafkalite.producer import Producer
from kafkalite.protocol.errors import (
    ClusterAuthorizationFailedError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)
from kafkalite.structs import PartitionMetadata, TopicPartition

MAX_BROWSE_RECORDS = 200
"""The most records one page of the message browser asks for."""

BROWSE_WAIT_S = 3.0
"""How long the browser waits for records it knows exist (they are below the end offset)."""


class ClusterReader:
    """The console's view of one cluster; ``config`` is the SDK clients' shared settings
    (bootstrap servers and the ``--command-config`` security settings)."""

    def __init__(self, config: dict[str, Any]) -> None:
        self._config = dict(config)
        self._lock = threading.Lock()
        self._admin = AdminClient(**self._config)
        self._consumer = Consumer(**self._config, enable_auto_commit=False)
        self._producer: Producer | None = None

    def close(self) -> None:
        with self._lock:
            self._admin.close()
            self._consumer.close(autocommit=False)
            if self._producer is not None:
                self._producer.close()

    # -- pages ------------------------------------------------------------------------------

    def overview(self) -> dict[str, Any]:
        """Brokers, the controller, and the partitions under-replicated or offline (of every
        topic: an internal topic's partitions are as much the operator's concern)."""
        with self._lock:
            cluster = self._admin.describe_cluster()
            topics = self._admin.describe_topics()
        partitions = [p for t in topics.values() for p in t.partitions]
        own = [t for t in topics.values() if not t.internal]
        return {
            "cluster_id": cluster["cluster_id"],
            "controller_id": cluster["controller_id"],
            "brokers": sorted(cluster["brokers"], key=lambda b: b["broker_id"]),
            "topic_count": len(own),  # as the Topics page: internal topics left out
            "partition_count": sum(len(t.partitions) for t in own),
            "under_replicated": [_partition(p) for p in partitions if _under_replicated(p)],
            "offline": [_partition(p) for p in partitions if p.leader < 0],
        }

    def topics(self) -> list[dict[str, Any]]:
        """Every topic that is not internal, with its partitions, sizes and end offsets."""
        with self._lock:
            described = self._admin.describe_topics()
            names = sorted(n for n, t in described.items() if not t.internal)
            sizes = self._leader_sizes(names, described)
            ends = self._end_offsets(names, described)
        return [self._topic(described[name].partitions, sizes, ends) | {"name": name}
                for name in names]

    def topic(self, name: str) -> dict[str, Any]:
        """One topic as ``topics`` lists it, with its configs that are not Kafka's defaults."""
        with self._lock:
            described = self._admin.describe_topics([name])
            sizes = self._leader_sizes([name], described)
            ends = self._end_offsets([name], described)
            begins = self._consumer.beginning_offsets(
                [TopicPartition(name, p.partition) for p in described[name].partitions])
            configs = self._configs(name)
        view = self._topic(described[name].partitions, sizes, ends) | {"name": name}
        for row in view["partitions"]:
            row["begin_offset"] = begins.get(TopicPartition(name, row["partition"]))
        view["configs"] = configs
        return view

    def messages(self, topic: str, partition: int, offset: int | None,
                 limit: int) -> dict[str, Any]:
        """Up to ``limit`` records of a partition from ``offset`` (None: the last ``limit``)."""
        limit = max(1, min(limit, MAX_BROWSE_RECORDS))
        tp = TopicPartition(topic, partition)
        with self._lock:
            described = self._admin.describe_topics([topic])[topic]
            if partition not in {p.partition for p in described.partitions}:
                raise UnknownTopicOrPartitionError(f"topic {topic!r} has no partition "
                                                   f"{partition}")
            begin = self._consumer.beginning_offsets([tp])[tp]
            end = self._consumer.end_offsets([tp])[tp]
            start = max(end - limit, begin) if offset is None else min(max(offset, begin), end)
            stop = min(start + limit, end)
            records = self._read(tp, start, stop) if start < stop else []
        return {"topic": topic, "partition": partition, "begin_offset": begin,
                "end_offset": end, "start": start,
                "records": [{
                    "offset": r.offset, "timestamp": r.timestamp,
                    "key": decode_bytes(r.key), "value": decode_bytes(r.value),
                    "headers": [{"key": k, "value": decode_bytes(v)} for k, v in r.headers],
                } for r in records]}

    def groups(self) -> list[dict[str, Any]]:
        with self._lock:
            listings = self._admin.list_groups()
        return [{"group_id": g.group_id, "state": g.group_state, "type": g.group_type,
                 "protocol_type": g.protocol_type} for g in listings]

    def group(self, group_id: str) -> dict[str, Any]:
        """Members, assignments and per-partition committed offset, end offset and lag."""
        with self._lock:
            view = describe_group(self._admin, group_id)
        return view.as_dict() | {"members": [
            {"member_id": m.member_id, "client_id": m.client_id, "host": m.host,
             "partitions": [{"topic": t, "partition": p} for t, p in m.partitions]}
            for m in view.members]}

    def offsets(self) -> dict[str, Any]:
        """Each topic's end offsets summed, timestamped: the throughput chart's samples (the
        messages produced per second are the growth between two samples)."""
        with self._lock:
            described = self._admin.describe_topics()
            names = [n for n, t in described.items() if not t.internal]
            ends = self._end_offsets(names, described)
        totals: dict[str, int] = defaultdict(int)
        for tp, end in ends.items():
            totals[tp.topic] += end
        return {"time_ms": int(time.time() * 1000), "topics": dict(sorted(totals.items()))}

    # -- writes (only with --allow-writes) ----------------------------------------------------

    def produce_test_record(self, topic: str, value: str) -> dict[str, Any]:
        """Produces one record (key None, the UTF-8 ``value``) and waits for its offset.

        Without idempotence: one record needs no sequence numbers, and Write on the topic
        is then the only permission the principal needs (not IdempotentWrite)."""
        with self._lock:
            if self._producer is None:
                self._producer = Producer(**self._config, enable_idempotence=False,
                                          acks="all")
            metadata = self._producer.send(topic, value.encode()).get(timeout=30)
        return {"topic": topic, "partition": metadata.partition, "offset": metadata.offset}

    # -- helpers (called with the lock held) ----------------------------------------------------

    def _topic(self, partitions: list[PartitionMetadata], sizes: dict[TopicPartition, int],
               ends: dict[TopicPartition, int]) -> dict[str, Any]:
        rows = []
        for p in sorted(partitions, key=lambda p: p.partition):
            tp = TopicPartition(p.topic, p.partition)
            rows.append(_partition(p) | {"size": sizes.get(tp), "end_offset": ends.get(tp)})
        return {"partitions": rows,
                "replication_factor": max((len(p.replicas) for p in partitions), default=0),
                "size": (None if any(r["size"] is None for r in rows)
                         else sum(r["size"] for r in rows)),
                "messages": sum(r["end_offset"] or 0 for r in rows),
                "under_replicated": sum(r["under_replicated"] for r in rows)}

    def _configs(self, topic: str) -> dict[str, str | None] | None:
        """The topic's configs that are not Kafka's defaults; None when the principal may
        not describe them (DescribeConfigs on the topic)."""
        resource = ConfigResource(ConfigResourceType.TOPIC, topic)
        try:
            configs = self._admin.describe_configs([resource], config_filter="modified")
        except (TopicAuthorizationFailedError, ClusterAuthorizationFailedError):
            return None
        return dict(sorted(configs[resource].items()))

    def _leader_sizes(self, names: list[str], described: dict[str, Any]
                      ) -> dict[TopicPartition, int]:
        """Each partition's size on disk at its leader (DescribeLogDirs); none when the
        principal may not describe the cluster, which DescribeLogDirs needs."""
        if not names:
            return {}
        leaders = {TopicPartition(p.topic, p.partition): p.leader
                   for name in names for p in described[name].partitions}
        wanted = {name: [p.partition for p in described[name].partitions] for name in names}
        sizes: dict[TopicPartition, int] = {}
        try:
            brokers = self._admin.describe_log_dirs(wanted)
        except ClusterAuthorizationFailedError:
            return sizes
        for broker in brokers:
            for log_dir in broker["log_dirs"]:
                for topic in log_dir["topics"]:
                    for p in topic["partitions"]:
                        tp = TopicPartition(topic["name"], p["partition_index"])
                        if leaders.get(tp) == broker["broker"] and not p["is_future_key"]:
                            sizes[tp] = p["partition_size"]
        return sizes

    def _end_offsets(self, names: list[str], described: dict[str, Any]
                     ) -> dict[TopicPartition, int]:
        partitions = [TopicPartition(name, p.partition) for name in names
                      for p in described[name].partitions if p.leader >= 0]
        return self._consumer.end_offsets(partitions) if partitions else {}

    def _read(self, tp: TopicPartition, start: int, stop: int) -> list[Any]:
        """The records of ``tp`` in [start, stop), as many as arrive within BROWSE_WAIT_S
        (a compacted or transactional log has gaps: the wait ends at the deadline then)."""
        self._consumer.assign([tp])
        self._consumer.seek(tp, start)
        records: list[Any] = []
        deadline = time.monotonic() + BROWSE_WAIT_S
        while time.monotonic() < deadline:
            for batch in self._consumer.poll(timeout_ms=200).values():
                records.extend(r for r in batch if r.offset < stop)
            if self._consumer.position(tp) >= stop:
                break
        self._consumer.assign([])
        return records


def _under_replicated(p: PartitionMetadata) -> bool:
    return len(p.isr) < len(p.replicas)


def _partition(p: PartitionMetadata) -> dict[str, Any]:
    return {"topic": p.topic, "partition": p.partition, "leader": p.leader,
            "replicas": list(p.replicas), "isr": list(p.isr),
            "offline_replicas": list(p.offline_replicas),
            "under_replicated": _under_replicated(p)}
