"""Static membership (KIP-345) with librdkafka members (confluent-kafka ``group.instance.id``)
and kafka-python's admin (LeaveGroup v3 by instance id) against a running broker."""

from __future__ import annotations

import time
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient
from kafka.admin import KafkaAdminClient, MemberToRemove, NewTopic

from kafkalite_server import EmbeddedCluster

pytestmark = pytest.mark.compat

TOPIC = "static"
PARTITIONS = 4
SESSION_MS = 6000


class StaticMember:
    """A librdkafka consumer with a group.instance.id that records every revocation."""

    def __init__(self, bootstrap: str, group: str, instance_id: str) -> None:
        self.consumer = Consumer(
            {
                "bootstrap.servers": bootstrap,
                "group.id": group,
                "group.instance.id": instance_id,
                "session.timeout.ms": SESSION_MS,
                "heartbeat.interval.ms": 500,
            }
        )
        self.revoked: list[set[int]] = []
        self.consumer.subscribe([TOPIC], on_revoke=self._on_revoke)

    def _on_revoke(self, _consumer: Any, partitions: list[TopicPartition]) -> None:
        if partitions:
            self.revoked.append({tp.partition for tp in partitions})

    def poll(self) -> None:
        self.consumer.poll(0.05)

    def partitions(self) -> set[int]:
        return {tp.partition for tp in self.consumer.assignment()}


def poll_until(members: list[StaticMember], done: Callable[[], bool], timeout: float = 45.0) -> None:
    """Poll the members concurrently (a parked JoinGroup must not stall the others)."""
    deadline = time.monotonic() + timeout
    with ThreadPoolExecutor(max_workers=len(members)) as pool:
        while not done():
            assert time.monotonic() < deadline, [sorted(m.partitions()) for m in members]
            for future in [pool.submit(m.poll) for m in members]:
                future.result()


def split_between(a: StaticMember, b: StaticMember) -> Callable[[], bool]:
    def check() -> bool:
        pa, pb = a.partitions(), b.partitions()
        return len(pa) == len(pb) == PARTITIONS // 2 and pa | pb == set(range(PARTITIONS))

    return check


def group_members(bootstrap: str, group: str) -> list[str | None]:
    """The group.instance.ids DescribeGroups lists for ``group``."""
    admin = AdminClient({"bootstrap.servers": bootstrap})
    [description] = [f.result() for f in admin.describe_consumer_groups([group]).values()]
    return sorted(m.group_instance_id for m in description.members)


@pytest.fixture
def bootstrap(cluster: EmbeddedCluster) -> str:
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
    try:
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
    finally:
        admin.close()
    return cluster.bootstrap_servers


def test_a_restarted_static_member_gets_its_partitions_back_and_nobody_is_revoked(
    bootstrap: str,
) -> None:
    stays = StaticMember(bootstrap, "static-restart", "stays")
    restarts = StaticMember(bootstrap, "static-restart", "restarts")
    try:
        poll_until([stays, restarts], split_between(stays, restarts))
        kept, before = stays.partitions(), restarts.partitions()
        # On a loaded machine the first member may take all partitions before the second
        # joins; only revocations after the restart matter here.
        stays.revoked.clear()
        restarts.consumer.close()  # a static member's close sends no LeaveGroup

        restarted = StaticMember(bootstrap, "static-restart", "restarts")
        poll_until([stays, restarted], lambda: bool(restarted.partitions()))

        assert restarted.partitions() == before
        assert stays.partitions() == kept
        assert stays.revoked == []  # no rebalance reached the member that stayed
        assert restarted.revoked == []
        assert group_members(bootstrap, "static-restart") == ["restarts", "stays"]
        restarted.consumer.close()
    finally:
        stays.consumer.close()


def test_a_closed_static_member_holds_its_partitions_until_its_session_expires(
    bootstrap: str,
) -> None:
    stays = StaticMember(bootstrap, "static-close", "stays")
    goes = StaticMember(bootstrap, "static-close", "goes")
    try:
        poll_until([stays, goes], split_between(stays, goes))
        goes.consumer.close()
        # Still a member right after close: its partitions wait for it to come back ...
        assert group_members(bootstrap, "static-close") == ["goes", "stays"]
        # ... until the session times out; then the group rebalances them to the survivor.
        poll_until([stays], lambda: stays.partitions() == set(range(PARTITIONS)))
        assert group_members(bootstrap, "static-close") == ["stays"]
    finally:
        stays.consumer.close()


def test_an_admin_removes_a_static_member_by_instance_id(bootstrap: str) -> None:
    stays = StaticMember(bootstrap, "static-remove", "stays")
    removed = StaticMember(bootstrap, "static-remove", "removed")
    try:
        poll_until([stays, removed], split_between(stays, removed))
        removed.consumer.close()
        admin = KafkaAdminClient(bootstrap_servers=bootstrap)
        try:
            result = admin.remove_group_members(
                "static-remove",
                [MemberToRemove(group_instance_id="removed"),
                 MemberToRemove(group_instance_id="never-joined")],
            )
        finally:
            admin.close()
        assert {key: error.__name__ for key, error in result.items()} == {
            "removed": "NoError",
            "never-joined": "UnknownMemberIdError",
        }
        assert group_members(bootstrap, "static-remove") == ["stays"]
        poll_until([stays], lambda: stays.partitions() == set(range(PARTITIONS)))
    finally:
        stays.consumer.close()
