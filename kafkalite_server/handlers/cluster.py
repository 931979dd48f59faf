"""DescribeCluster (60) and DescribeLogDirs (35).

DescribeCluster answers what Metadata says about brokers and the controller, without
topics. DescribeLogDirs lists this broker's log directories with the size of each
partition log in them; a replica here is never behind (one replica per partition), so
``offset_lag`` is 0, and there are no future (moving) replicas.

As in Kafka, DescribeCluster is open to every principal (it tells what Metadata tells
everyone), while DescribeLogDirs, which names the broker's data directories and sizes,
needs Describe on the Cluster: others get CLUSTER_AUTHORIZATION_FAILED (v3+) and no
directory at all.
"""

from __future__ import annotations

import shutil
from typing import Any

from kafkalite.protocol.errors import MismatchedEndpointTypeError
from kafkalite.protocol.schemas.metadata import AUTHORIZED_OPERATIONS_NOT_REQUESTED
from kafkalite_server.cluster.authorized_operations import authorized_operations
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.acls import ResourceType
from kafkalite_server.security.api_checks import DESCRIBE_CLUSTER, declares, requires

_BROKERS_ENDPOINT = 1


@declares(open_because="it tells the brokers, the controller and the cluster id, which "
                        "Metadata tells every principal too")
async def handle_describe_cluster(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    cache = ctx.broker.metadata_cache
    answer: dict[str, Any] = {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None,
        "endpoint_type": body["endpoint_type"], "cluster_id": cache.cluster_id,
        "controller_id": cache.controller_id,
        "brokers": [{"broker_id": b.node_id, "host": b.host, "port": b.port, "rack": b.rack}
                    for b in (e.on(ctx.listener) for e in sorted(cache.brokers.values(),
                                                                  key=lambda b: b.node_id))],
        "cluster_authorized_operations": (
            authorized_operations(ctx.authorize, ResourceType.CLUSTER)
            if body["include_cluster_authorized_operations"]
            else AUTHORIZED_OPERATIONS_NOT_REQUESTED),
    }
    if body["endpoint_type"] != _BROKERS_ENDPOINT:
        answer.update(error_code=MismatchedEndpointTypeError.errno, brokers=[],
                      error_message="this is a broker endpoint; kafkalite has no separate "
                                    "controller endpoints")
    return answer


@requires(DESCRIBE_CLUSTER)
async def handle_describe_log_dirs(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    manager = ctx.broker.log_manager
    wanted = None if body["topics"] is None else {
        (t["topic"], p) for t in body["topics"] for p in t["partitions"]}
    by_dir: dict[str, dict[str, list[dict[str, Any]]]] = {
        str(d): {} for d in manager.log_dirs}
    replicas = ctx.broker.replica_manager.partitions
    for log in manager.all_logs():
        topic, index = log.topic_partition
        if wanted is not None and (topic, index) not in wanted:
            continue
        replica = replicas.get((topic, index))
        by_dir[str(log.directory.parent)].setdefault(topic, []).append({
            "partition_index": index, "partition_size": log.size_in_bytes,
            "offset_lag": replica.offset_lag if replica is not None else 0,
            "is_future_key": False})
    results: list[dict[str, Any]] = []
    for log_dir, topics in by_dir.items():
        usage = shutil.disk_usage(log_dir)
        described: list[dict[str, Any]] = [
            {"name": name, "partitions": sorted(parts, key=_partition_index)}
            for name, parts in sorted(topics.items())]
        results.append({"error_code": 0, "log_dir": log_dir, "topics": described,
                        "total_bytes": usage.total, "usable_bytes": usage.free})
    return {"throttle_time_ms": 0, "error_code": 0, "results": results}


def _partition_index(entry: dict[str, Any]) -> int:
    return int(entry["partition_index"])
