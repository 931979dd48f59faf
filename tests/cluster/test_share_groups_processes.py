"""Share groups across three ``kafkalite-server`` processes over a real ZooKeeper: two
members of one share group, confluent-kafka's ShareConsumer and kafkalite's, accept records
while the share coordinator's broker is SIGKILLed, and later the partition leader's.

The broker confirms the acceptance of each record once: were an accepted record handed out
again, the member it went to could have it accepted a second time. (A member may still
show a record it was handed before another member accepted it: a client's buffer does not
know that a lock expired or a leader died; that member's acceptance is then refused.) What
was in flight at the dead leader comes back; in the end every record is accepted."""

from __future__ import annotations

import functools
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import AcknowledgeType, Producer, ShareConsumer
from confluent_kafka.admin import AdminClient, NewTopic
from polling import until

from kafkalite import ShareConsumer as KafkaliteShareConsumer
from kafkalite.protocol import ApiKey
from kafkalite_server.coordinator.hashing import partition_for
from kafkalite_server.share.config import SHARE_STATE_TOPIC
from kafkalite_server.share.coordinator import coordinator_key
from kafkalite_server.share.records import StateKey
from tests.cluster.group_processes import running, started_brokers
from tests.conftest import WireClient
from tests.integration.share.helpers import set_group_configs, start_offset

pytestmark = pytest.mark.slow
BROKERS = (1, 2, 3)
STATE_PARTITIONS = 3
SETTINGS = {"zookeeper.session.timeout.ms": "6000", "replica.lag.time.max.ms": "3000",
            "replica.fetch.backoff.ms": "200", "controlled.shutdown.retry.backoff.ms": "200",
            "offsets.topic.num.partitions": "3",
            "share.coordinator.state.topic.num.partitions": str(STATE_PARTITIONS),
            "share.coordinator.write.timeout.ms": "30000",
            "group.share.min.record.lock.duration.ms": "1000",
            "group.share.heartbeat.interval.ms": "1000",
            "group.share.session.timeout.ms": "10000"}
TOPIC, GROUP, RECORDS = "work", "failover", 300

_until = functools.partial(until, timeout=90.0, interval=0.2,
                           tolerate=(OSError, KeyError, AssertionError, IndexError))


@pytest.fixture(scope="module")
def brokers(tmp_path_factory: pytest.TempPathFactory, zookeeper: Any,
            request: pytest.FixtureRequest) -> Iterator[dict[int, Any]]:
    with started_brokers(request, tmp_path_factory.mktemp("share-cluster"), zookeeper.connect,
                         "/share_groups_processes", SETTINGS, BROKERS) as started:
        yield started


def _metadata(brokers: dict[int, Any], *topics: str) -> dict[str, Any]:
    via = next(b for b in brokers.values() if b.process)
    client = WireClient(via.bootstrap_servers)
    try:
        return client.call(ApiKey.METADATA, 10, {
            "topics": [{"name": t} for t in topics], "allow_auto_topic_creation": False})
    finally:
        client.close()


def _leader(brokers: dict[int, Any], topic: str, partition: int) -> int:
    answer = _metadata(brokers, topic)
    found = answer["topics"][0]["partitions"][partition]
    assert found["error_code"] == 0 and found["leader_id"] in BROKERS, found
    return int(found["leader_id"])


def _in_sync(brokers: dict[int, Any], topic: str, replicas: int) -> bool:
    answer = _metadata(brokers, topic)
    return all(len(p["isr_nodes"]) == replicas for p in answer["topics"][0]["partitions"])


def _share_coordinator(brokers: dict[int, Any]) -> int:
    """The broker leading the ``__share_group_state`` partition of GROUP's share partition."""
    key = StateKey(GROUP, _metadata(brokers, TOPIC)["topics"][0]["topic_id"], 0)
    return _leader(brokers, SHARE_STATE_TOPIC,
                   partition_for(coordinator_key(key), STATE_PARTITIONS))


class Member:
    """One share consumer, confluent-kafka's or kafkalite's, in explicit mode."""

    def __init__(self, bootstrap: str, kind: str) -> None:
        self.kind = kind
        if kind == "confluent":
            self._confluent = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": GROUP,
                                             "share.acknowledgement.mode": "explicit",
                                             "max.poll.records": "10"})
            self._confluent.subscribe([TOPIC])
        else:
            self._ours = KafkaliteShareConsumer(TOPIC, bootstrap_servers=bootstrap,
                                                group_id=GROUP, max_poll_records=10,
                                                share_acknowledgement_mode="explicit")

    def poll(self) -> list[Any]:
        if self.kind == "confluent":
            return [m for m in self._confluent.poll(0.5) if m.error() is None]
        return self._ours.poll(500)

    def accept(self, handed: list[Any]) -> bool:
        """True once the broker confirmed the acceptance of every record of ``handed``."""
        try:
            if self.kind == "confluent":
                for message in handed:
                    self._confluent.acknowledge(message, AcknowledgeType.ACCEPT)
                results = self._confluent.commit_sync(30)
            else:
                for record in handed:
                    self._ours.acknowledge(record)
                results = self._ours.commit_sync(30_000)
        except Exception:  # a broker gone: not confirmed, so it may come back
            return False
        return bool(results) and all(error is None for error in results.values())

    def close(self) -> None:
        if self.kind == "confluent":
            self._confluent.close()
        else:
            self._ours.close()


def _offset(record: Any) -> int:
    return int(record.offset() if callable(record.offset) else record.offset)


class Ledger:
    """What the members were handed, and which acceptances the broker confirmed."""

    def __init__(self, members: list[Member]) -> None:
        self.members = members
        self.confirmed: Counter[int] = Counter()
        self.handed: Counter[int] = Counter()

    @property
    def accepted(self) -> set[int]:
        return set(self.confirmed)

    def poll(self, member: Member) -> list[Any]:
        handed = member.poll()
        self.handed.update(_offset(record) for record in handed)
        return handed

    def accept(self, member: Member, handed: list[Any]) -> None:
        if handed and member.accept(handed):
            self.confirmed.update(_offset(record) for record in handed)

    def consume(self, until_accepted: int, timeout: float) -> None:
        deadline = time.monotonic() + timeout
        while len(self.confirmed) < until_accepted:
            assert time.monotonic() < deadline, f"{len(self.confirmed)} accepted in {timeout} s"
            for member in self.members:
                self.accept(member, self.poll(member))

    def hold(self, member: Member, timeout: float = 60) -> list[Any]:
        """Polls records and keeps them unacknowledged (in flight)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            handed = self.poll(member)
            if handed:
                return handed
        raise AssertionError(f"no record handed out in {timeout} s")


def test_no_accepted_record_is_redelivered_across_broker_kills(
        brokers: dict[int, Any]) -> None:
    bootstrap = running(brokers)
    admin = AdminClient({"bootstrap.servers": bootstrap})
    _until(lambda: len(admin.list_topics(timeout=10).brokers) == 3, "three live brokers")
    admin.create_topics([NewTopic(TOPIC, 1, 3, config={"min.insync.replicas": "2"})]
                        )[TOPIC].result(30)
    _until(lambda: _leader(brokers, TOPIC, 0), "a leader for the topic")
    # locks outlast each phase: a record comes back because a leader died, not because a
    # member was slow on a busy machine
    set_group_configs(bootstrap, GROUP, share_auto_offset_reset="earliest",
                      share_record_lock_duration_ms="10000")
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    for i in range(RECORDS):
        producer.produce(TOPIC, f"record-{i}".encode())
    assert producer.flush(60) == 0

    confluent, ours = Member(bootstrap, "confluent"), Member(bootstrap, "kafkalite")
    ledger = Ledger([confluent, ours])
    try:
        ledger.consume(RECORDS // 3, 120)
        coordinator = _share_coordinator(brokers)
        held = ledger.hold(confluent)
        brokers[coordinator].kill()  # the leader lives: the acceptance waits for the new
        ledger.accept(confluent, held)  # coordinator and is then confirmed
        ledger.consume(2 * RECORDS // 3, 180)

        brokers[coordinator].start()
        _until(lambda: _in_sync(brokers, TOPIC, 3) and _in_sync(brokers, SHARE_STATE_TOPIC, 3),
               "the restarted broker back in every ISR")
        leader = _leader(brokers, TOPIC, 0)
        in_flight = ledger.hold(ours)
        brokers[leader].kill()  # what it handed out and was not acknowledged comes back
        ledger.accept(ours, in_flight)
        ledger.consume(RECORDS, 180)
    finally:
        confluent.close()
        ours.close()
    assert {_offset(m) for m in held} <= ledger.accepted
    # the new leader never saw the records in flight at the old one (acquisition is not
    # written): it hands them out again, as records not delivered yet
    assert all(ledger.handed[_offset(r)] >= 2 for r in in_flight)
    assert ledger.accepted == set(range(RECORDS))
    twice = [offset for offset, times in ledger.confirmed.items() if times > 1]
    assert twice == []
    _until(lambda: start_offset(running(brokers), GROUP, TOPIC) == RECORDS,
           "the share-partition start offset at the end of the log")
