"""The two requests that lost acknowledged data when any authenticated user could send them:
an UNCLEAN ElectLeaders (needs Alter on the Cluster) and DeleteRecords (needs Delete on the
topic). Each is refused for a principal without the ACL, leaving every record in place, and
carried out for one that has it."""

from __future__ import annotations

import functools
from typing import Any

from polling import until

from kafkalite import Producer
from kafkalite.admin import ACLOperation, NewTopic, ResourceType
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    ClusterAuthorizationFailedError,
    TopicAuthorizationFailedError,
)
from kafkalite_server import EmbeddedCluster
from tests.conftest import WireClient
from tests.security.authorized import (
    AUTHORIZER,
    acl,
    admin_client,
    client_settings,
    login,
)

RECORDS = 50
UNCLEAN = 1
EARLIEST, LATEST = -2, -1
_until = functools.partial(until, timeout=40, interval=0.05)


def produce_all(cluster: EmbeddedCluster, topic: str, partitions: list[int],
                count: int) -> None:
    """``count`` records to each partition, acks=all, as the admin."""
    producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                        acks="all", max_block_ms=20_000, **client_settings("admin"))
    try:
        futures = [producer.send(topic, f"record-{i}".encode(), partition=p)
                   for p in partitions for i in range(count)]
        producer.flush(30)
        assert all(future.get(30).offset >= 0 for future in futures)
    finally:
        producer.close()


def offset(client: WireClient, topic: str, partition: int, which: int) -> int | None:
    """ListOffsets: the partition's log start (EARLIEST) or high watermark (LATEST); None
    while the broker does not lead it yet."""
    answer = client.call(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": topic, "partitions": [
            {"partition_index": partition, "current_leader_epoch": -1,
             "timestamp": which}]}]})
    (result,) = answer["topics"][0]["partitions"]
    return None if result["error_code"] else int(result["offset"])


def elect_unclean(client: WireClient, topic: str, partition: int) -> dict[str, Any]:
    return client.call(ApiKey.ELECT_LEADERS, 2, {
        "election_type": UNCLEAN, "timeout_ms": 10_000,
        "topic_partitions": [{"topic": topic, "partitions": [partition]}]})


def test_an_unclean_election_needs_alter_on_the_cluster() -> None:
    """The issue's scenario: the ISR (broker 1) goes down, the out-of-sync replica (broker
    2) comes back, and a user without ACLs asks for an UNCLEAN election. Refused, the
    partition waits for broker 1 and keeps all its acknowledged records; a principal with
    Alter on the Cluster may still force the election (the operator's override)."""
    config = {**AUTHORIZER, "controlled.shutdown.max.retries": "1",
              "controlled.shutdown.retry.backoff.ms": "50"}
    with EmbeddedCluster(num_brokers=3, config=config) as cluster:
        with admin_client(cluster) as admin:
            admin.create_topics([NewTopic("ledger", replica_assignments={0: [1, 2],
                                                                         1: [1, 2]})])
            admin.create_acls([acl("User:alice", ACLOperation.ALTER, ResourceType.CLUSTER,
                                   "kafka-cluster")])
        _until(lambda: all(cluster.partition_state("ledger", p).isr == (1, 2)
                           for p in (0, 1)), "both replicas in sync")
        cluster.stop_broker(2)
        _until(lambda: all(cluster.partition_state("ledger", p).isr == (1,) for p in (0, 1)),
               "broker 2 out of the ISR")
        produce_all(cluster, "ledger", [0, 1], RECORDS)
        cluster.stop_broker(1)
        cluster.restart_broker(2)
        _until(lambda: all(cluster.partition_state("ledger", p).leader == -1 for p in (0, 1)),
               "the partitions offline")

        refused = elect_unclean(login(cluster, "mallory"), "ledger", 0)
        assert refused["error_code"] == ClusterAuthorizationFailedError.errno
        (result,) = refused["replica_election_results"][0]["partition_result"]
        assert result["error_code"] == ClusterAuthorizationFailedError.errno
        assert cluster.partition_state("ledger", 0).leader == -1

        allowed = elect_unclean(login(cluster, "alice"), "ledger", 1)
        assert allowed["error_code"] == 0
        assert allowed["replica_election_results"][0]["partition_result"][0]["error_code"] == 0
        assert cluster.partition_state("ledger", 1).leader == 2

        cluster.restart_broker(1)  # the only in-sync replica of partition 0 returns
        _until(lambda: cluster.partition_state("ledger", 0).leader == 1, "broker 1 leading")
        leader = login(cluster.broker(1), "admin")
        # Every record kept (lost records would keep the high watermark below, failing this).
        _until(lambda: offset(leader, "ledger", 0, LATEST) == RECORDS, "every record")
        assert offset(leader, "ledger", 0, EARLIEST) == 0


def test_delete_records_needs_delete_on_the_topic() -> None:
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        with admin_client(cluster) as admin:
            admin.create_topics([NewTopic("payroll", 1, 1)])
            admin.create_acls([acl("User:alice", ACLOperation.DELETE, ResourceType.TOPIC,
                                   "payroll")])
        produce_all(cluster, "payroll", [0], 100)

        def delete_records(user: str, before: int) -> dict[str, Any]:
            answer = login(cluster, user).call(ApiKey.DELETE_RECORDS, 2, {
                "timeout_ms": 5000, "topics": [{"name": "payroll", "partitions": [
                    {"partition_index": 0, "offset": before}]}]})
            (result,) = answer["topics"][0]["partitions"]
            return dict(result)

        admin = login(cluster, "admin")
        refused = delete_records("mallory", LATEST)  # -1: everything up to the watermark
        assert refused["error_code"] == TopicAuthorizationFailedError.errno
        assert refused["low_watermark"] == -1
        assert (offset(admin, "payroll", 0, EARLIEST), offset(admin, "payroll", 0, LATEST)) \
            == (0, 100)

        allowed = delete_records("alice", 40)
        assert (allowed["error_code"], allowed["low_watermark"]) == (0, 40)
        assert offset(admin, "payroll", 0, EARLIEST) == 40
