"""kafkalite's ShareConsumer against one broker: consumers (kafkalite's, and kafkalite's
beside confluent-kafka's) share a partition and accept each record once; a member joining
mid-stream takes half of four partitions and nothing is lost; release, reject,
archiving after five deliveries, a killed consumer's records after its locks expire; the
iterator, implicit and explicit acknowledgement, commit callbacks, and bad settings."""

from __future__ import annotations

import subprocess
import sys
import textwrap
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from kafkalite import AcknowledgeType, Producer, ShareConsumer
from kafkalite.admin import AdminClient, NewTopic
from kafkalite.errors import ConfigError, IllegalStateError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import GroupIdNotFoundError, NonEmptyGroupError
from kafkalite_server import EmbeddedCluster
from tests.integration.share.helpers import (
    ClientAssignments,
    at_coordinator,
    set_group_configs,
    start_offset,
    wait_assigned,
)
from tests.polling import until

BROKER_CONFIG = {
    "group.share.min.record.lock.duration.ms": "1000",
    "group.share.record.lock.duration.ms": "1000",
    "group.share.heartbeat.interval.ms": "500",
    "num.partitions": "1",
}


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=BROKER_CONFIG) as cluster:
        yield cluster


@pytest.fixture
def share_consumers(cluster: EmbeddedCluster) -> Iterator[Callable[..., ShareConsumer]]:
    made: list[ShareConsumer] = []

    def make(group: str, topic: str, **config: Any) -> ShareConsumer:
        consumer = ShareConsumer(topic, bootstrap_servers=cluster.bootstrap_servers,
                                 group_id=group, **config)
        made.append(consumer)
        return consumer

    yield make
    for consumer in made:
        consumer.close()


def _topic(cluster: EmbeddedCluster, name: str, group: str, partitions: int = 1) -> str:
    with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
        admin.create_topics([NewTopic(name, partitions, 1)])
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest")
    return name


def _produce(cluster: EmbeddedCluster, topic: str, values: list[bytes],
             partitions: int = 1) -> None:
    with Producer(bootstrap_servers=cluster.bootstrap_servers, linger_ms=5) as producer:
        for index, value in enumerate(values):
            producer.send(topic, value, partition=index % partitions)
        producer.flush(30)


def _poll_some(consumer: ShareConsumer, timeout_ms: int = 30_000) -> list[Any]:
    records = consumer.poll(timeout_ms)
    assert records, f"no record within {timeout_ms} ms"
    return records


def _consume_together(polls: list[Callable[[], list[bytes]]], total: int) -> list[Counter[bytes]]:
    """Each poll function in its own thread until ``total`` records came in all."""
    received: list[Counter[bytes]] = [Counter() for _ in polls]
    stop = threading.Event()

    def run(index: int) -> None:
        while not stop.is_set():
            received[index].update(polls[index]())

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(polls))]
    for thread in threads:
        thread.start()
    try:
        until(lambda: sum(sum(c.values()) for c in received) >= total,
              f"{total} records received", 120)
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    return received


def _check_once(received: list[Counter[bytes]], values: list[bytes]) -> None:
    both = sum(received, Counter())
    assert set(both) == set(values)
    assert max(both.values()) == 1, [v for v, n in both.items() if n > 1][:5]
    assert all(sum(counts.values()) > 0 for counts in received), [len(c) for c in received]


def test_two_share_consumers_accept_each_record_once(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    group = "sdk-once"
    topic = _topic(cluster, "sdk-once", group)
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="15000")
    consumers = [share_consumers(group, topic, max_poll_records=20) for _ in range(2)]
    polls = [lambda c=c: [r.value for r in c.poll(200)] for c in consumers]
    for consumer in consumers:
        consumer.poll(0)  # joins
    wait_assigned(cluster.bootstrap_servers, group, 2)
    until(lambda: all(c.assignment() for c in consumers),
          "both consumers holding the partition (each learns it at its next heartbeat)", 60)
    values = [f"record-{i}".encode() for i in range(1000)]
    _produce(cluster, topic, values)
    received = _consume_together(polls, len(values))
    for consumer in consumers:
        consumer.commit_sync()
    _check_once(received, values)
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 1000,
          "every record accepted")


def test_a_member_joining_mid_stream_takes_half_the_partitions_and_nothing_is_lost(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    group = "sdk-split"
    topic = _topic(cluster, "sdk-split", group, partitions=4)
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="15000")
    values = [f"split-{i}".encode() for i in range(2000)]
    _produce(cluster, topic, values, partitions=4)
    first = share_consumers(group, topic, max_poll_records=20)
    received: list[Counter[bytes]] = [Counter(), Counter()]
    second: list[ShareConsumer] = []
    stop, reading = threading.Event(), [threading.Event(), threading.Event()]
    reading[0].set()

    def run(index: int) -> None:
        while not stop.is_set():
            if reading[index].wait(0.1):
                consumer = first if index == 0 else second[0]
                received[index].update(r.value for r in consumer.poll(200))
                if not second and sum(received[0].values()) >= 200:
                    reading[0].clear()  # holds what it polled last; cannot read all alone

    def halves() -> bool:
        return [len(c.assignment()) for c in (first, *second)] == [2, 2]

    def every_record_accepted() -> bool:
        return [start_offset(cluster.bootstrap_servers, group, topic, p)
                for p in range(4)] == [500] * 4

    threads = [threading.Thread(target=run, args=(i,)) for i in range(2)]
    for thread in threads:
        thread.start()
    try:
        until(lambda: not reading[0].is_set(), "the first member reading", 60)
        second.append(share_consumers(group, topic, max_poll_records=20))
        second[0].poll(0)  # joins, and takes two partitions from the first
        until(halves, "both members with two partitions", 60)
        for event in reading:
            event.set()
        until(every_record_accepted, "every record accepted", 120, tolerate=(AssertionError,))
    finally:
        stop.set()
        for thread in threads:
            thread.join(30)
    both = received[0] + received[1]
    assert set(both) == set(values)  # a moved partition loses nothing
    # ... and hands nothing twice: the first member drops what it buffered of the partitions
    # it gave up, whose locks the new owner's session gets
    assert max(both.values()) == 1, [v for v, n in both.items() if n > 1][:5]
    assert sum(received[1].values()) > 0
    assigned = [{tp.partition for tp in c.assignment()} for c in (first, second[0])]
    assert sorted(map(len, assigned)) == [2, 2] and assigned[0] | assigned[1] == {0, 1, 2, 3}


def test_kafkalite_and_confluent_members_share_one_partition(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    confluent_kafka = pytest.importorskip("confluent_kafka")
    group = "mixed"
    topic = _topic(cluster, "mixed", group)
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="15000")
    ours = share_consumers(group, topic, max_poll_records=20)
    holding = ClientAssignments(1)
    theirs = confluent_kafka.ShareConsumer({"bootstrap.servers": cluster.bootstrap_servers,
                                            "group.id": group, "max.poll.records": "20",
                                            **holding.config(0)})
    theirs.subscribe([topic])
    try:
        ours.poll(0)
        theirs.poll(0.1)
        wait_assigned(cluster.bootstrap_servers, group, 2)
        def holding_it() -> bool:
            """Both took the assignment (a consumer learns it at its next heartbeat)."""
            ours.poll(0)
            theirs.poll(0.1)  # serves its statistics
            return bool(ours.assignment()) and holding.sizes == [1]

        until(holding_it, "both consumers holding the partition", 60)
        values = [f"mixed-{i}".encode() for i in range(1000)]
        _produce(cluster, topic, values)
        received = _consume_together([
            lambda: [r.value for r in ours.poll(200)],
            lambda: [m.value() for m in theirs.poll(0.2) if m.error() is None]], len(values))
        ours.commit_sync()
        theirs.commit_sync(30)
    finally:
        theirs.close()
    _check_once(received, values)
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 1000,
          "every record accepted")


def test_release_comes_back_reject_does_not_and_five_deliveries_archive(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    group = "sdk-acks"
    topic = _topic(cluster, "sdk-acks", group)
    _produce(cluster, topic, [b"poison", b"rejected"])
    consumer = share_consumers(group, topic, share_acknowledgement_mode="explicit")
    first = _poll_some(consumer)
    assert [(r.value, r.delivery_count) for r in first] == [(b"poison", 1), (b"rejected", 1)]
    consumer.acknowledge(first[0], AcknowledgeType.RELEASE)
    consumer.acknowledge(first[1], AcknowledgeType.REJECT)
    assert consumer.commit_sync() == {first[0].topic_partition: None}
    counts = [1]
    for _delivery in range(4):
        [record] = _poll_some(consumer)
        assert record.value == b"poison"
        counts.append(record.delivery_count)
        consumer.acknowledge(record, AcknowledgeType.RELEASE)
        consumer.commit_sync()
    assert counts == [1, 2, 3, 4, 5]
    _produce(cluster, topic, [b"after"])
    [record] = _poll_some(consumer)
    assert (record.value, record.offset, record.delivery_count) == (b"after", 2, 1)
    consumer.acknowledge(record)
    consumer.commit_sync()
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 3,
          "the archived, rejected and accepted records done with")


HOLDER = textwrap.dedent("""
    import sys, time
    from kafkalite import ShareConsumer
    consumer = ShareConsumer(sys.argv[3], bootstrap_servers=sys.argv[1], group_id=sys.argv[2],
                             share_acknowledgement_mode="explicit")
    while True:
        held = [r.offset for r in consumer.poll(500)]
        if held:
            print(" ".join(map(str, held)), flush=True)
            time.sleep(3600)  # holds the records, never acknowledging them
""")


def test_a_killed_consumers_records_come_back_after_their_locks_expire(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    group = "sdk-held"
    topic = _topic(cluster, "sdk-held", group)
    _produce(cluster, topic, [f"held-{i}".encode() for i in range(5)])
    holder = subprocess.Popen([sys.executable, "-c", HOLDER, cluster.bootstrap_servers, group,
                               topic], stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout is not None
        held = [int(offset) for offset in holder.stdout.readline().split()]
    finally:
        holder.kill()
        holder.wait(30)
    assert held == [0, 1, 2, 3, 4]
    survivor = share_consumers(group, topic)
    redelivered: dict[int, int] = {}
    while len(redelivered) < 5:
        redelivered.update((r.offset, r.delivery_count) for r in _poll_some(survivor, 60_000))
    assert redelivered == dict.fromkeys(held, 2)


def test_iteration_implicit_acceptance_and_commit_callbacks(
        cluster: EmbeddedCluster) -> None:
    group = "sdk-iterate"
    topic = _topic(cluster, "sdk-iterate", group)
    _produce(cluster, topic, [b"a", b"b", b"c"])
    outcomes: list[tuple[dict[Any, set[int]], Any]] = []
    with ShareConsumer(topic, bootstrap_servers=cluster.bootstrap_servers, group_id=group,
                       consumer_timeout_ms=20_000, value_deserializer=bytes.decode) as consumer:
        consumer.set_acknowledgement_commit_callback(
            lambda offsets, error: outcomes.append((offsets, error)))
        seen = []
        for record in consumer:
            seen.append(record.value)
            if len(seen) == 3:
                break
        assert seen == ["a", "b", "c"]
        with pytest.raises(IllegalStateError, match="explicit"):
            consumer.acknowledge(record)
        consumer.commit_async()
        until(lambda: consumer.poll(100) == [] and outcomes, "the commit callback", 30)
        assert consumer.assignment() == {record.topic_partition}
    [(offsets, error)] = outcomes
    assert offsets == {record.topic_partition: {0, 1, 2}} and error is None
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 3, "all accepted")


def test_explicit_mode_wants_every_record_acknowledged(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    group = "sdk-explicit"
    topic = _topic(cluster, "sdk-explicit", group)
    _produce(cluster, topic, [b"one", b"two"])
    consumer = share_consumers(group, topic, share_acknowledgement_mode="explicit")
    records = _poll_some(consumer)
    while len(records) < 2:
        consumer.acknowledge(records[-1], AcknowledgeType.RELEASE)
        records = _poll_some(consumer)
    consumer.acknowledge(records[0])
    with pytest.raises(IllegalStateError, match="not acknowledged"):
        consumer.poll(0)
    with pytest.raises(IllegalStateError, match="not a record of the last poll"):
        consumer.acknowledge(records[0])
    consumer.acknowledge(records[1])
    consumer.commit_sync()


def test_bad_settings_name_their_key(cluster: EmbeddedCluster) -> None:
    with pytest.raises(ConfigError, match="group_id"):
        ShareConsumer(bootstrap_servers=cluster.bootstrap_servers)
    with pytest.raises(ConfigError, match="share_acknowledgement_mode"):
        ShareConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="g",
                      share_acknowledgement_mode="sometimes")
    with pytest.raises(ConfigError, match="auto_offset_reset"):
        ShareConsumer(bootstrap_servers=cluster.bootstrap_servers, group_id="g",
                      auto_offset_reset="earliest")


def test_an_empty_groups_offsets_can_be_reset(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    group = "sdk-reset"
    topic = _topic(cluster, "sdk-reset", group)
    _produce(cluster, topic, [f"r{i}".encode() for i in range(10)])
    first = share_consumers(group, topic)
    seen: list[int] = []
    until(lambda: seen.extend(r.offset for r in first.poll(500)) or len(seen) == 10, "ten")
    first.commit_sync()

    def alter(offset: int) -> int:
        client = at_coordinator(cluster.bootstrap_servers, group)
        try:
            answer = client.call(ApiKey.ALTER_SHARE_GROUP_OFFSETS, 0, {
                "group_id": group, "topics": [{"topic_name": topic, "partitions": [
                    {"partition_index": 0, "start_offset": offset}]}]})
        finally:
            client.close()
        return int(answer["responses"][0]["partitions"][0]["error_code"])

    assert alter(5) == NonEmptyGroupError.errno
    first.close()
    until(lambda: alter(5) == 0, "the reset of the group's start offset, once it is empty")
    assert start_offset(cluster.bootstrap_servers, group, topic) == 5
    second = share_consumers(group, topic)
    again: list[int] = []
    until(lambda: again.extend(r.offset for r in second.poll(500)) or len(again) >= 5,
          "the records from the new start offset")
    assert again == [5, 6, 7, 8, 9]


def test_read_committed_hands_out_committed_records_only(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    group = "sdk-committed"
    topic = _topic(cluster, "sdk-committed", group)
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest",
                      share_isolation_level="read_committed")
    with Producer(bootstrap_servers=cluster.bootstrap_servers,
                  transactional_id="share-txn") as producer:
        producer.init_transactions()
        for values, commit in (([b"aborted-1", b"aborted-2"], False), ([b"kept"], True)):
            producer.begin_transaction()
            for value in values:
                producer.send(topic, value)
            producer.flush()
            if commit:
                producer.commit_transaction()
            else:
                producer.abort_transaction()
    _produce(cluster, topic, [b"plain"])
    consumer = share_consumers(group, topic)
    seen: list[bytes] = []
    until(lambda: seen.extend(r.value for r in consumer.poll(500)) or b"plain" in seen,
          "the records after the transactions")
    assert seen == [b"kept", b"plain"]
    consumer.commit_sync()
    # the aborted records and both markers are archived: done with, like accepted ones
    until(lambda: start_offset(cluster.bootstrap_servers, group, topic) == 6, "all done with")


def test_an_empty_share_group_can_be_deleted_with_its_state(
        cluster: EmbeddedCluster, share_consumers: Callable[..., ShareConsumer]) -> None:
    group = "sdk-deleted"
    topic = _topic(cluster, "sdk-deleted", group)
    _produce(cluster, topic, [b"a", b"b"])
    first = share_consumers(group, topic)
    seen: list[int] = []
    until(lambda: seen.extend(r.offset for r in first.poll(500)) or len(seen) == 2, "two")

    def delete() -> int:
        client = at_coordinator(cluster.bootstrap_servers, group)
        try:
            answer = client.call(ApiKey.DELETE_GROUPS, 1, {"groups_names": [group]})
        finally:
            client.close()
        return int(answer["results"][0]["error_code"])

    assert delete() == NonEmptyGroupError.errno
    first.close()
    until(lambda: delete() == 0, "the group deleted once empty")
    assert delete() == GroupIdNotFoundError.errno
    # a group of that name starts afresh: its configs went with the old group
    client = at_coordinator(cluster.bootstrap_servers, group)
    try:
        [entry] = client.call(ApiKey.DESCRIBE_CONFIGS, 1, {"include_synonyms": False,
                                                           "resources": [{
            "resource_type": 32, "resource_name": group,
            "configuration_keys": ["share.auto.offset.reset"]}]})["results"][0]["configs"]
    finally:
        client.close()
    assert (entry["value"], entry["config_source"]) == ("latest", 5)  # the default
    set_group_configs(cluster.bootstrap_servers, group, share_auto_offset_reset="earliest")
    again = share_consumers(group, topic)
    offsets: list[int] = []
    until(lambda: offsets.extend(r.offset for r in again.poll(500)) or len(offsets) == 2,
          "the records again, for the new group")
    assert offsets == [0, 1]
