"""Consumer-group schedules: F11 (group churn with a zombie's commit) and F12 (the group
coordinator dies; committed offsets survive).

Group members are kafkalite Consumers in threads that commit synchronously after
processing what they polled. A sampler reads the group's committed offsets (OffsetFetch
through librdkafka) every 200 ms into the history, where the checker looks for an offset
going backwards. The zombie's commit is sent raw (OffsetCommit v7) with the generation and
member id it had before the group moved on.
"""

from __future__ import annotations

import socket
import struct
import threading
import time
from typing import Any

from cluster import until
from scenarios import PARTITIONS, TOPIC, Run, java_hash

from kafkalite.protocol import ApiKey, decode_response, encode_request
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    NotCoordinatorError,
)

FENCING_ERRORS = {22, 25, 27, 82}
"""ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, REBALANCE_IN_PROGRESS, FENCED_INSTANCE_ID."""


def call(address: str, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
    """One request on a fresh connection (a client of no consequence to the proxy)."""
    host, port = address.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(encode_request(api_key, version, 1, "fault-probe", body))
        size = struct.unpack(">i", _exactly(sock, 4))[0]
        return decode_response(api_key, version, _exactly(sock, size))[1]


def _exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("closed")
        data += chunk
    return bytes(data)


def coordinator_address(run: Run, group: str) -> str:
    for address in run.cluster.bootstrap.split(","):
        try:
            found = call(address, ApiKey.FIND_COORDINATOR, 2, {"key": group, "key_type": 0})
        except OSError:
            continue
        if found["error_code"] == 0:
            return f"{found['host']}:{found['port']}"
    raise LookupError("no coordinator")


def zombie_commit(run: Run, group: str, generation: int, member_id: str) -> int:
    body = {"group_id": group, "generation_id_or_member_epoch": generation,
            "member_id": member_id, "group_instance_id": None,
            "topics": [{"name": TOPIC, "partitions": [
                {"partition_index": p, "committed_offset": 0, "committed_leader_epoch": -1,
                 "committed_metadata": "zombie"} for p in range(PARTITIONS)]}]}
    answer = call(coordinator_address(run, group), ApiKey.OFFSET_COMMIT, 7, body)
    return int(answer["topics"][0]["partitions"][0]["error_code"])


class Member(threading.Thread):
    """A group member: poll, process, commit synchronously; records acknowledged commits."""

    def __init__(self, run: Run, group: str, name: str) -> None:
        super().__init__(name=f"member-{name}", daemon=True)
        from kafkalite import Consumer

        self.consumer = Consumer(TOPIC, bootstrap_servers=run.cluster.bootstrap,
                                 group_id=group, client_id=f"member-{name}",
                                 enable_auto_commit=False, auto_offset_reset="earliest",
                                 session_timeout_ms=6000, heartbeat_interval_ms=500,
                                 request_timeout_ms=10000)
        self.stopping = threading.Event()
        self.processed = 0
        self.commits: list[tuple[float, dict[int, int]]] = []
        self.joined = threading.Event()

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                polled = self.consumer.poll(200)
                if self.consumer.generation_id >= 0:
                    self.joined.set()
                positions = {tp.partition: records[-1].offset + 1
                             for tp, records in polled.items() if records}
                self.processed += sum(len(r) for r in polled.values())
                if positions:
                    self.consumer.commit()
                    self.commits.append((time.monotonic(), positions))
            except Exception:  # a coordinator or leader change: poll again
                time.sleep(0.2)

    def finish(self, leave: bool = True) -> None:
        self.stopping.set()
        self.join(30)
        self.consumer.close(autocommit=False) if leave else None


COORDINATOR_MOVING = frozenset(error.errno for error in (
    CoordinatorLoadInProgressError, CoordinatorNotAvailableError, NotCoordinatorError))
"""The Kafka error codes of a group whose coordinator is still moving."""


class CommitSampler(threading.Thread):
    """Reads a group's committed offsets every 200 ms into ``run.history.commits``."""

    def __init__(self, run: Run, group: str) -> None:
        super().__init__(name="commit-sampler", daemon=True)
        from confluent_kafka import Consumer

        self.run_ = run
        self.group = group
        self.reader = Consumer({"bootstrap.servers": run.cluster.bootstrap, "group.id": group,
                                "enable.auto.commit": False})
        self.stopping = threading.Event()

    def run(self) -> None:
        from confluent_kafka import TopicPartition

        while not self.stopping.wait(0.2):
            try:
                found = self.reader.committed(
                    [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=5)
            except Exception:
                continue
            now = time.monotonic()
            self.run_.history.commits.extend(
                (now, self.group, tp.partition, tp.offset) for tp in found if tp.offset >= 0)

    def latest(self) -> dict[int, int] | None:
        """The group's committed offsets; None while its coordinator is moving (a broker
        answers NOT_COORDINATOR or COORDINATOR_NOT_AVAILABLE / LOAD_IN_PROGRESS until the
        new one has loaded the group), so a caller polling with ``until`` asks again."""
        from confluent_kafka import KafkaException, TopicPartition

        try:
            found = self.reader.committed(
                [TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=10)
        except KafkaException as exc:
            if exc.args[0].code() in COORDINATOR_MOVING:
                return None
            raise
        return {tp.partition: tp.offset for tp in found}

    def finish(self) -> None:
        self.stopping.set()
        self.join(10)
        self.reader.close()


def group_churn(run: Run) -> None:
    """F11: members come and go (clean leaves and abandoned members that time out); a
    zombie of an old generation commits offset 0 and must be refused; committed offsets
    never go backwards."""
    group = "churn"
    sampler = CommitSampler(run, group)
    members = [Member(run, group, f"m{i}") for i in range(2)]
    for member in members:
        member.start()
    sampler.start()
    try:
        until(lambda: all(m.joined.is_set() for m in members) and
              any(m.commits for m in members), "the group to form and commit", 60)
        zombie = members[0]
        generation, member_id = zombie.consumer.generation_id, zombie.consumer.member_id
        serial = 2
        for _ in range(run.rounds + 1):
            newcomer = Member(run, group, f"m{serial}")
            serial += 1
            newcomer.start()
            members.append(newcomer)
            until(lambda n=newcomer: n.joined.is_set(), "a newcomer to join", 60)
            leaving = members.pop(1)
            leaving.finish(leave=run.rng.random() < 0.5)
        until(lambda: zombie.consumer.generation_id != generation, "a new generation", 60)
        code = zombie_commit(run, group, generation, member_id)
        assert code in FENCING_ERRORS, f"zombie commit of generation {generation}: {code}"
        run.note(f"zombie of generation {generation} refused with error {code}; "
                 f"now generation {zombie.consumer.generation_id}")
        time.sleep(1.0)
    finally:
        for member in members:
            member.finish()
        sampler.finish()


def coordinator_failover(run: Run) -> None:
    """F12: SIGKILL the leader of the group's ``__consumer_offsets`` partition while a
    member commits: the coordinator moves and the committed offsets read back equal to the
    last acknowledged commit."""
    group = "durable"
    cluster = run.cluster
    partitions = int(cluster.config["offsets.topic.num.partitions"])
    offsets_partition = abs(java_hash(group)) % partitions
    sampler = CommitSampler(run, group)
    member = Member(run, group, "solo")
    member.start()
    sampler.start()
    try:
        for _ in range(run.rounds):
            until(lambda: member.commits, "a commit", 60)
            victim = cluster.leader("__consumer_offsets", offsets_partition)
            cluster.kill(victim)
            cluster.wait_leader("__consumer_offsets", offsets_partition, not_in=[victim])
            count = len(member.commits)
            until(lambda c=count: len(member.commits) > c + 5,
                  "commits through the new coordinator", 60)
            cluster.start(victim)
            run.note(f"killed coordinator {victim}")
    finally:
        member.finish()
    try:
        last: dict[int, int] = {}
        for _t, positions in member.commits:
            last.update(positions)
        latest = until(lambda: (found := sampler.latest()) and found, "committed offsets")
        assert all(latest.get(p) == o for p, o in last.items()), (last, latest)
    finally:
        sampler.finish()
