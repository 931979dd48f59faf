"""confluent-kafka consumers (librdkafka 2.16, ``group.protocol=consumer``) in a KIP-848
consumer group on one broker: two members split six partitions 3/3, a third joining makes
it 2/2/2 with only the partitions that move revoked, a member closing hands its partitions
over within 10 s with its committed offsets (every record read exactly once), and the
admin APIs (confluent-kafka's, kafkalite's ``describe_consumer_groups`` and kafka-python's
classic DescribeGroups) see the group as a consumer group."""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator

import pytest

from tests.polling import until

confluent_kafka = pytest.importorskip("confluent_kafka")
kafka = pytest.importorskip("kafka")
from confluent_kafka import (  # noqa: E402
    Consumer,
    ConsumerGroupType,
)
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from kafkalite import Consumer as KafkaliteConsumer  # noqa: E402
from kafkalite import ConsumerRebalanceListener  # noqa: E402
from kafkalite import TopicPartition as KafkaliteTopicPartition  # noqa: E402
from kafkalite.admin import AdminClient as KafkaliteAdmin  # noqa: E402
from kafkalite.protocol.errors import GroupSubscribedToTopicError  # noqa: E402
from kafkalite_server import EmbeddedCluster  # noqa: E402
from tests.integration.consumer.kip848_members import Member, produce  # noqa: E402

TOPIC, GROUP, PARTITIONS = "kip848-orders", "kip848-group", 6
BROKER_CONFIG = {"group.consumer.heartbeat.interval.ms": "300"}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=BROKER_CONFIG) as cluster:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])[TOPIC].result(30)
        yield cluster


def _split(members: list[Member]) -> list[int]:
    return sorted(len(m.owned) for m in members)


def test_members_rebalance_incrementally_and_hand_over_their_offsets(
        cluster: EmbeddedCluster) -> None:
    seen: Counter[bytes] = Counter()
    lock = threading.Lock()
    members: list[Member] = []
    try:
        members += [Member(cluster, name, seen, lock, topic=TOPIC, group=GROUP)
                    for name in ("a", "b")]
        until(lambda: _split(members) == [3, 3], "a 3/3 split", 60)
        produced = produce(cluster, 0, 60, TOPIC)
        until(lambda: sum(seen.values()) >= 60, "the first 60 records read", 60)
        before = {m.name: set(m.owned) for m in members}
        revoked_before = {m.name: len(m.revoked) for m in members}

        members.append(Member(cluster, "c", seen, lock, topic=TOPIC, group=GROUP))
        until(lambda: _split(members) == [2, 2, 2], "a 2/2/2 split", 60)
        for member in members[:2]:
            revoked = set().union(*member.revoked[revoked_before[member.name]:])
            # only what moved to the newcomer was revoked, one partition each
            assert revoked == before[member.name] - member.owned, (member.name, revoked)
            assert len(revoked) == 1 and revoked <= members[2].owned
        assert set().union(*(m.owned for m in members)) == set(range(PARTITIONS))
        produced += produce(cluster, 60, 60, TOPIC)
        until(lambda: sum(seen.values()) >= 120, "120 records read", 60)

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
        listed = admin.list_consumer_groups(types={ConsumerGroupType.CONSUMER}).result(30)
        assert [g.group_id for g in listed.valid] == [GROUP]
        assert listed.valid[0].type == ConsumerGroupType.CONSUMER
        described = admin.describe_consumer_groups([GROUP])[GROUP].result(30)
        assert described.type == ConsumerGroupType.CONSUMER
        assert sorted(m.client_id for m in described.members) == ["a", "b", "c"]
        assert sorted(len(m.assignment.topic_partitions) for m in described.members) == \
            [2, 2, 2]

        with KafkaliteAdmin(bootstrap_servers=cluster.bootstrap_servers) as ours:
            found = ours.describe_consumer_groups([GROUP, "never-used"])
            # the members read the topic: its offsets are not deleted under them
            kept = ours.delete_group_offsets(GROUP, [KafkaliteTopicPartition(TOPIC, 0)])
        assert kept == {KafkaliteTopicPartition(TOPIC, 0): GroupSubscribedToTopicError}
        group = found[GROUP]
        assert (group.group_type, group.state, group.assignor) == ("consumer", "Stable",
                                                                   "uniform")
        assert group.assignment_epoch == group.group_epoch
        assert {m.member_epoch for m in group.members} == {group.group_epoch}
        assert all(m.assignment == m.target_assignment and len(m.assignment) == 2
                   and m.subscribed_topics == (TOPIC,) for m in group.members)
        # a group that is no consumer group is described by DescribeGroups: classic, no epochs
        assert (found["never-used"].group_type, found["never-used"].state,
                found["never-used"].group_epoch) == ("classic", "Dead", -1)

        classic = kafka.KafkaAdminClient(bootstrap_servers=cluster.bootstrap_servers)
        try:  # a classic client's DescribeGroups sees a consumer group too
            info = classic.describe_groups([GROUP])[GROUP]
        finally:
            classic.close()
        assert (info["error"], info["group_state"], info["protocol_type"],
                info["protocol_data"]) == (None, "Stable", "consumer", "uniform")
        assert len(info["members"]) == 3, info

        leaving = members.pop()
        handed_over = set(leaving.owned)
        leaving.close()
        until(lambda: handed_over <= members[0].owned | members[1].owned,
              "the closed member's partitions taken over", 10)
        produced += produce(cluster, 120, 60, TOPIC)
        until(lambda: sum(seen.values()) >= 180, "180 records read", 60)
        with lock:
            assert set(seen) == set(produced)
            assert max(seen.values()) == 1, [v for v, n in seen.items() if n > 1][:5]
        assert [m.errors for m in [*members, leaving]] == [[], [], []]
    finally:
        for member in members:
            member.close()

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    offsets = admin.list_consumer_group_offsets(
        [confluent_kafka.ConsumerGroupTopicPartitions(GROUP)])[GROUP].result(30)
    assert sum(tp.offset for tp in offsets.topic_partitions) == 180
    until(lambda: admin.describe_consumer_groups([GROUP])[GROUP].result(30).members == [],
          "the group empty")
    admin.delete_consumer_groups([GROUP])[GROUP].result(30)
    listed = admin.list_consumer_groups().result(30)
    assert GROUP not in [g.group_id for g in listed.valid]


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.calls: list[tuple[str, set[int]]] = []

    def on_partitions_revoked(self, revoked: set[KafkaliteTopicPartition]) -> None:
        self.calls.append(("revoked", {tp.partition for tp in revoked}))

    def on_partitions_assigned(self, assigned: set[KafkaliteTopicPartition]) -> None:
        self.calls.append(("assigned", {tp.partition for tp in assigned}))


def test_a_kafkalite_member_and_a_librdkafka_member_share_a_group(
        cluster: EmbeddedCluster) -> None:
    topic, group = "kip848-mixed", "kip848-mixed"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    seen: Counter[bytes] = Counter()
    lock = threading.Lock()
    listener = Recorder()
    ours = KafkaliteConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                             group_protocol="consumer", auto_offset_reset="earliest",
                             group_remote_assignor="uniform")
    ours.subscribe([topic], listener=listener)
    theirs: Member | None = None

    def read_ours() -> None:
        for records in ours.poll(timeout_ms=100).values():
            with lock:
                seen.update(r.value for r in records)

    try:
        until(lambda: read_ours() or len(ours.assignment()) == PARTITIONS,
              "the kafkalite member owning every partition", 60)
        assert listener.calls == [("assigned", set(range(PARTITIONS)))]
        theirs = Member(cluster, "theirs", seen, lock, topic=topic, group=group)
        until(lambda: read_ours() or (len(ours.assignment()) == 3 and len(theirs.owned) == 3),
              "a 3/3 split", 60)
        # incremental: three partitions revoked, none assigned again, the rest kept reading
        assert [kind for kind, _ in listener.calls] == ["assigned", "revoked"]
        assert listener.calls[1][1] == theirs.owned
        assert {tp.partition for tp in ours.assignment()} | theirs.owned == set(range(PARTITIONS))
        produced = produce(cluster, 0, 60, topic)
        until(lambda: read_ours() or sum(seen.values()) >= 60, "60 records read", 60)
        ours.close()  # commits what it read, revokes, leaves
        until(lambda: len(theirs.owned) == PARTITIONS, "the librdkafka member owning all", 10)
        produced += produce(cluster, 60, 30, topic)
        until(lambda: sum(seen.values()) >= 90, "90 records read", 60)
        with lock:
            assert set(seen) == set(produced)
            assert max(seen.values()) == 1, [v for v, n in seen.items() if n > 1][:5]
    finally:
        ours.close()
        if theirs is not None:
            theirs.close()


def test_a_regex_subscription_is_evaluated_by_the_broker(cluster: EmbeddedCluster) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for topic in ("kip848-rx-a", "kip848-other"):
        admin.create_topics([NewTopic(topic, 2, 1)])[topic].result(30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "group.id": "kip848-regex", "group.protocol": "consumer",
                         "topic.metadata.refresh.interval.ms": 500})
    owned: set[tuple[str, int]] = set()
    consumer.subscribe(["^kip848-rx-.*"], on_assign=lambda _c, tps: owned.update(
        (tp.topic, tp.partition) for tp in tps))

    def polled_until(wanted: set[tuple[str, int]]) -> bool:
        consumer.poll(0.1)
        return owned == wanted

    try:
        until(lambda: polled_until({("kip848-rx-a", 0), ("kip848-rx-a", 1)}),
              "the matching topic's partitions", 60)
        admin.create_topics([NewTopic("kip848-rx-b", 1, 1)])["kip848-rx-b"].result(30)
        until(lambda: polled_until({("kip848-rx-a", 0), ("kip848-rx-a", 1),
                                    ("kip848-rx-b", 0)}), "a new matching topic's partition", 60)
        with KafkaliteAdmin(bootstrap_servers=cluster.bootstrap_servers) as ours:
            [member] = ours.describe_consumer_groups(["kip848-regex"])["kip848-regex"].members
        assert member.subscribed_topics == ()
    finally:
        consumer.close()


def test_a_regex_is_resolved_after_the_named_topics_as_kafka_4_does(
        cluster: EmbeddedCluster) -> None:
    """librdkafka's 0045 "resubscribe with regex": a member subscribing to a regex and a
    topic name gets the named topic in its first assignment, the matched topics in a later
    one (the broker resolves regexes apart from the heartbeats)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    for topic, partitions in (("kip848-async-1", 2), ("kip848-named", 1)):
        admin.create_topics([NewTopic(topic, partitions, 1)])[topic].result(30)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap_servers,
                         "group.id": "kip848-async-regex", "group.protocol": "consumer"})
    assignments: list[set[tuple[str, int]]] = []
    consumer.subscribe(["^kip848-async-.*", "kip848-named"], on_assign=lambda _c, tps: (
        assignments.append({(tp.topic, tp.partition) for tp in tps})))

    def polled_until_both() -> bool:
        consumer.poll(0.1)
        return len(assignments) >= 2

    try:
        until(polled_until_both, "two assignments", 30)
        assert assignments[:2] == [{("kip848-named", 0)},
                                   {("kip848-async-1", 0), ("kip848-async-1", 1)}]
    finally:
        consumer.close()


class LostRecorder(Recorder):
    def on_partitions_lost(self, lost: set[KafkaliteTopicPartition]) -> None:
        self.calls.append(("lost", {tp.partition for tp in lost}))


def test_a_kafkalite_member_not_polled_in_time_leaves_and_comes_back(
        cluster: EmbeddedCluster) -> None:
    topic, group = "kip848-stuck", "kip848-stuck"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap_servers})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    settings = {"bootstrap_servers": cluster.bootstrap_servers, "group_id": group,
                "group_protocol": "consumer", "max_poll_interval_ms": 1500}
    stuck, live = KafkaliteConsumer(**settings), KafkaliteConsumer(**settings)
    listener = LostRecorder()
    stuck.subscribe([topic], listener=listener)
    live.subscribe([topic])
    try:
        until(lambda: stuck.poll(timeout_ms=50) is not None and live.poll(timeout_ms=50)
              is not None and len(stuck.assignment()) == len(live.assignment()) == 3,
              "a 3/3 split", 60)
        held = {tp.partition for tp in stuck.assignment()}
        # only the live member polls: the other leaves after max_poll_interval_ms
        until(lambda: live.poll(timeout_ms=50) is not None
              and len(live.assignment()) == PARTITIONS, "the live member owning all", 30)
        until(lambda: stuck.poll(timeout_ms=50) is not None and live.poll(timeout_ms=50)
              is not None and len(stuck.assignment()) == len(live.assignment()) == 3,
              "a 3/3 split again", 60)
        assert ("lost", held) in listener.calls
    finally:
        stuck.close()
        live.close()
