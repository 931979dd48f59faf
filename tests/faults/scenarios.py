"""The fault scenarios (F1-F17 of the reliability notes, and the Jepsen-2013 negative
control), each a short schedule over a :class:`~cluster.FaultCluster` under the
:class:`~workload.Workload`, shared by the CI tests and ``benchmarks.faults``.

:func:`run_scenario` does the common part: start the cluster, create the topic, start the
writers, run the schedule, heal everything (links, paused and stopped brokers), let the
writers make progress once more, stop them, read everything back, wait for every replica to
reach the high watermark, and run the checker. A schedule asserts its own extra invariants
(the ISR shrank, the controller epoch grew, ...); ``rounds`` repeats its fault, and ``rng``
picks victims and timings, so the long runner randomizes what CI runs once.
"""

from __future__ import annotations

import json
import random
import struct
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from checker import History, Report, check
from cluster import FaultCluster, ZooKeeperServer, until
from workload import (
    DELIVERY_TIMEOUT_MS,
    Workload,
    high_watermarks,
    read_back,
    replica_batches,
)

TOPIC = "faults"
PARTITIONS = 2


@dataclass
class Run:
    cluster: FaultCluster
    workload: Workload
    rng: random.Random
    rounds: int
    history: History = field(default_factory=History)
    notes: list[str] = field(default_factory=list)

    def note(self, text: str) -> None:
        self.notes.append(text)


@dataclass(frozen=True)
class Scenario:
    name: str
    title: str
    schedule: Callable[[Run], None]
    config: dict[str, str] = field(default_factory=dict)
    topic_config: dict[str, str] = field(default_factory=dict)
    expect_loss: bool = False
    """The negative control: the checker must report lost writes."""


@dataclass
class Outcome:
    scenario: str
    report: Report
    notes: list[str]
    seconds: float
    writer_errors: list[str]
    """Errors that ended a writer early (librdkafka's fatal idempotence errors)."""


def run_scenario(scenario: Scenario, root: Path, zookeeper: ZooKeeperServer, *,
                 seed: int = 0, rounds: int = 1,
                 delivery_timeout_ms: int = DELIVERY_TIMEOUT_MS) -> Outcome:
    started = time.monotonic()
    chroot = f"/{scenario.name.lower()}-{seed}-{int(time.time() * 1000) % 10**8}"
    with FaultCluster(root, zookeeper, chroot=chroot, config=scenario.config) as cluster:
        cluster.start_all()
        cluster.create_topic(TOPIC, PARTITIONS, config=scenario.topic_config)
        workload = Workload(cluster.bootstrap, TOPIC, PARTITIONS,
                            delivery_timeout_ms=delivery_timeout_ms).start()
        run = Run(cluster, workload, random.Random(seed), rounds)
        try:
            workload.wait_acked(100)
            scenario.schedule(run)
            _heal(cluster)
            workload.wait_acked(100, timeout=60)
        finally:
            run.history.sends = workload.finish()
        _collect(run)
    report = check(run.history)
    return Outcome(scenario.name, report, run.notes, time.monotonic() - started,
                   workload.errors())


def _heal(cluster: FaultCluster) -> None:
    cluster.heal()
    for broker_id, node in cluster.nodes.items():
        if node.paused:
            cluster.resume(broker_id)
        elif not node.running:
            cluster.start(broker_id)
    cluster.wait_full_isr(TOPIC, PARTITIONS)


def _collect(run: Run) -> None:
    cluster = run.cluster
    reads, log_start = read_back(cluster.bootstrap, TOPIC, PARTITIONS)
    run.history.reads, run.history.log_start = reads, log_start
    marks = high_watermarks(cluster.bootstrap, TOPIC, PARTITIONS)
    for partition, hw in marks.items():
        def caught_up(p: int = partition, hw: int = hw) -> dict[int, list] | None:
            logs = {b: replica_batches(cluster.nodes[b].data_dir / f"{TOPIC}-{p}", hw)
                    for b in cluster.ids}
            done = all(log and log[-1].last_offset == hw - 1 for log in logs.values())
            return logs if done or hw == 0 else None
        try:
            logs = until(caught_up, f"every replica of partition {partition} at HW {hw}", 30)
        except AssertionError:
            logs = {b: replica_batches(cluster.nodes[b].data_dir / f"{TOPIC}-{partition}", hw)
                    for b in cluster.ids}
        run.history.replicas[partition] = (hw, logs)


# ------------------------------------------------------------------ schedules


def _others(cluster: FaultCluster, broker_id: int) -> list[int]:
    return [b for b in cluster.ids if b != broker_id]


def leader_kill(run: Run) -> None:
    """F1: SIGKILL the leader of partition 0, wait for a new leader, restart; repeated."""
    cluster = run.cluster
    for _ in range(run.rounds):
        state = cluster.state(TOPIC, 0)
        victim = state["leader"]
        cluster.kill(victim)
        new = cluster.wait_leader(TOPIC, 0, not_in=[victim])
        after = cluster.state(TOPIC, 0)
        assert new in state["isr"], f"leader {new} was not in the ISR {state['isr']}"
        assert after["leader_epoch"] > state["leader_epoch"]
        run.workload.wait_acked(50)
        cluster.start(victim)
        cluster.wait_full_isr(TOPIC, PARTITIONS)
        run.note(f"killed leader {victim}, {new} took over at epoch {after['leader_epoch']}")


def controller_kill(run: Run) -> None:
    """F2: SIGKILL the controller; a new one is elected with a higher epoch and every
    partition keeps a live leader."""
    cluster = run.cluster
    for _ in range(run.rounds):
        victim = cluster.controller()
        epoch = int(cluster.zk.get("/controller_epoch")[0])
        cluster.kill(victim)
        until(lambda v=victim: cluster.controller() not in (v, -1), "a new controller")
        new_epoch = int(cluster.zk.get("/controller_epoch")[0])
        assert new_epoch > epoch, (epoch, new_epoch)
        for p in range(PARTITIONS):
            cluster.wait_leader(TOPIC, p, not_in=[victim])
        run.workload.wait_acked(50)
        cluster.start(victim)
        cluster.wait_full_isr(TOPIC, PARTITIONS)
        run.note(f"killed controller {victim}; epoch {epoch} -> {new_epoch}")


def _isolate_followers_then_kill_leader(run: Run) -> int:
    """The Jepsen-2013 schedule: cut the followers of partition 0 from its leader, wait
    for the ISR to shrink to the leader, keep producing, then kill the leader."""
    cluster = run.cluster
    leader = cluster.leader(TOPIC, 0)
    cluster.isolate([leader])
    until(lambda: cluster.state(TOPIC, 0)["isr"] == [leader], "the ISR to shrink to the leader")
    time.sleep(2.0)  # writers keep sending to the lone leader
    cluster.kill(leader)
    return leader


def jepsen_2013(run: Run) -> None:
    """F3: with min.insync.replicas=2 the lone leader refuses acks=all writes; once it dies
    the partition waits for it (no unclean election), and nothing acknowledged is lost."""
    cluster = run.cluster
    for _ in range(run.rounds):
        before = run.workload.acked()
        leader = _isolate_followers_then_kill_leader(run)
        time.sleep(1.0)
        assert cluster.state(TOPIC, 0)["leader"] in (-1, leader), "an unclean election"
        cluster.heal()
        cluster.start(leader)
        cluster.wait_full_isr(TOPIC, PARTITIONS)
        run.note(f"isolated and killed leader {leader}; {run.workload.acked() - before} acks "
                 "across the fault")


def unclean_control(run: Run) -> None:
    """Negative control: unclean election on, min.insync.replicas=1, the same schedule. The
    lone leader acknowledges writes, a follower outside the ISR takes over, and the old
    leader truncates them away when it returns: the checker must see lost writes."""
    cluster = run.cluster
    leader = _isolate_followers_then_kill_leader(run)
    new = cluster.wait_leader(TOPIC, 0, not_in=[leader])
    cluster.heal()
    run.workload.wait_acked(50)
    cluster.start(leader)
    cluster.wait_full_isr(TOPIC, PARTITIONS)
    run.note(f"leader {leader} isolated and killed; {new} elected uncleanly")


def leader_pause(run: Run) -> None:
    """F4: SIGSTOP the leader past the ZooKeeper session timeout; a new leader is elected,
    then the old one resumes and must rejoin as a follower without acknowledging anything
    in between (an acknowledgement of the paused leader would be lost or inconsistent)."""
    cluster = run.cluster
    for _ in range(run.rounds):
        victim = cluster.leader(TOPIC, 0)
        cluster.pause(victim)
        new = cluster.wait_leader(TOPIC, 0, not_in=[victim])
        run.workload.wait_acked(50)
        time.sleep(run.rng.uniform(0, 1))
        cluster.resume(victim)
        cluster.wait_full_isr(TOPIC, PARTITIONS)
        run.note(f"paused leader {victim}; {new} took over")


def follower_partition(run: Run) -> None:
    """F5: cut (or slow down) one follower's links to the leader: the ISR shrinks without
    it, the high watermark keeps moving with the other two, and it rejoins after heal."""
    cluster = run.cluster
    for _ in range(run.rounds):
        leader = cluster.leader(TOPIC, 0)
        follower = run.rng.choice(_others(cluster, leader))
        links = cluster.links_between([follower], [leader])
        slow = run.rng.random() < 0.5 and run.rounds > 1
        if slow:
            cluster.proxy.delay(links, 3.0)
        else:
            cluster.proxy.cut(links)
        until(lambda f=follower: f not in cluster.state(TOPIC, 0)["isr"],
              f"follower {follower} out of the ISR")
        run.workload.wait_acked(100)
        cluster.heal()
        until(lambda f=follower: f in cluster.state(TOPIC, 0)["isr"],
              f"follower {follower} back in the ISR")
        run.note(f"{'slowed' if slow else 'cut'} follower {follower} from leader {leader}")


def torn_tail(run: Run) -> None:
    """F6: SIGKILL a broker under load, tear its active segments' tails (truncate at a
    random byte, sometimes append garbage), restart: recovery cuts at the last valid batch
    and the replica refills from the leader."""
    cluster = run.cluster
    for _ in range(run.rounds):
        victim = run.rng.choice(cluster.ids)
        cluster.kill(victim)
        for p in range(PARTITIONS):
            cluster.wait_leader(TOPIC, p, not_in=[victim])
            run.note(f"broker {victim} partition {p}: "
                     f"{cluster.tear_tail(victim, TOPIC, p, run.rng)}")
        cluster.start(victim)
        cluster.wait_full_isr(TOPIC, PARTITIONS)


def whole_cluster_crash(run: Run) -> None:
    """F8: SIGKILL every broker together, restart them in random order (fsync per message:
    nothing acknowledged may be lost)."""
    cluster = run.cluster
    for _ in range(run.rounds):
        for broker_id in cluster.ids:
            cluster.kill(broker_id)
        order = run.rng.sample(cluster.ids, len(cluster.ids))
        for broker_id in order:
            cluster.start(broker_id)
        cluster.wait_full_isr(TOPIC, PARTITIONS, timeout=90)
        run.workload.wait_acked(50, timeout=60)
        run.note(f"killed all, restarted in order {order}")


def leader_cut_from_zookeeper(run: Run) -> None:
    """F9: the leader loses ZooKeeper but keeps its clients and peers: its session expires,
    another broker leads, and the old leader must not acknowledge anything more."""
    cluster = run.cluster
    for _ in range(run.rounds):
        victim = cluster.leader(TOPIC, 0)
        cluster.cut_zookeeper(victim)
        new = cluster.wait_leader(TOPIC, 0, not_in=[victim])
        run.workload.wait_acked(50)
        cluster.heal()
        until(lambda v=victim: cluster.zk.exists(f"/brokers/ids/{v}"),
              f"broker {victim} registered again")
        cluster.wait_full_isr(TOPIC, PARTITIONS)
        run.note(f"cut leader {victim} from ZooKeeper; {new} took over")


def preferred_leader_returns(run: Run) -> None:
    """F13: kill the preferred leader (first replica) of partition 0; after it returns the
    controller's imbalance check hands leadership back to it."""
    import json

    cluster = run.cluster
    assignment = json.loads(cluster.zk.get(f"/brokers/topics/{TOPIC}")[0])["partitions"]
    preferred = assignment["0"][0]
    for _ in range(run.rounds):
        until(lambda: cluster.leader(TOPIC, 0) == preferred, "the preferred leader", 30)
        cluster.kill(preferred)
        cluster.wait_leader(TOPIC, 0, not_in=[preferred])
        run.workload.wait_acked(50)
        cluster.start(preferred)
        until(lambda: cluster.leader(TOPIC, 0) == preferred,
              f"leadership back on preferred replica {preferred}", 40)
        run.note(f"preferred leader {preferred} killed and returned to leadership")


def retention_under_load(run: Run) -> None:
    """F14: tiny segments and short retention while a follower is cut away: deletion never
    passes the high watermark. Each sample reads every replica's first segment, then the
    high watermark (which only grows), so a first segment above it is a deletion past it."""
    cluster = run.cluster
    samples: list[tuple[int, int, int, int]] = []
    stop = threading.Event()

    def sample() -> None:
        from confluent_kafka import Consumer, TopicPartition

        reader = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "sampler"})
        try:
            while not stop.wait(0.2):
                for p in range(PARTITIONS):
                    starts = {b: int(s[0].name[:20]) for b in cluster.ids
                              if (s := cluster.segments(b, TOPIC, p))}
                    try:
                        hw = reader.get_watermark_offsets(TopicPartition(TOPIC, p), 5)[1]
                    except Exception:  # a leader change: sample again next time
                        continue
                    samples.extend((b, p, start, hw) for b, start in starts.items())
        finally:
            reader.close()
    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    try:
        for _ in range(run.rounds):
            leader = cluster.leader(TOPIC, 0)
            follower = run.rng.choice(_others(cluster, leader))
            cluster.proxy.cut(cluster.links_between([follower], [leader]))
            run.workload.wait_acked(400)
            cluster.heal()
            cluster.wait_full_isr(TOPIC, PARTITIONS)
            run.workload.wait_acked(400)
    finally:
        stop.set()
        sampler.join(5)
    moved = [s for s in samples if s[2] > 0]
    assert moved, "retention never deleted a segment"
    above = [s for s in samples if s[2] > s[3]]
    assert not above, f"segments deleted above the high watermark: {above[:5]}"
    run.note(f"{len(samples)} samples, log start reached {max(s[2] for s in samples)}")


def clean_stop_during_announcement(run: Run) -> None:
    """F15: SIGKILL the controller, and while the new one announces the cluster (its
    LeaderAndIsr and UpdateMetadata to every broker, slowed on the way to the victim), stop
    another broker cleanly and restart it at once; then restart the old controller. The
    restarted broker must be back in every ISR within a bound: a request meant for its
    previous incarnation (KIP-380's broker epoch) must not reach the new one, and the
    channel to the previous one must be gone."""
    cluster = run.cluster
    for _ in range(run.rounds):
        old_controller = cluster.controller()
        victim = run.rng.choice(_others(cluster, old_controller))
        into_victim = [(f"b{b}", f"b{victim}") for b in _others(cluster, victim)]
        cluster.proxy.delay(into_victim, run.rng.uniform(0.5, 1.5))
        cluster.kill(old_controller)
        until(lambda o=old_controller: cluster.controller() not in (o, -1), "a new controller")
        cluster.stop(victim)
        cluster.start(victim)
        cluster.proxy.heal(into_victim)
        cluster.start(old_controller)
        cluster.wait_full_isr(TOPIC, PARTITIONS, timeout=60)
        run.note(f"killed controller {old_controller}, stopped and restarted {victim} "
                 "during the announcement")


def zookeeper_blip(run: Run) -> None:
    """F16: restart ZooKeeper for about 3 s; sessions survive (a session timeout of 10 s;
    the note says which did). Afterwards every broker must still hear of every change: a new topic gets
    leaders on every broker, a killed leader is replaced, a killed controller is replaced.
    (Watches are lost with the connection; they must be re-armed on reconnect, not only
    after a session expiry.)"""
    cluster = run.cluster
    for round_ in range(run.rounds):
        sessions = {b: cluster.zk.exists(f"/brokers/ids/{b}").ephemeralOwner
                    for b in cluster.ids}
        cluster.restart_zookeeper(run.rng.uniform(2.5, 3.5))
        # A broker whose reconnection hits the server's start-up can lose its session
        # (kazoo waits a session timeout for that handshake); it registers again.
        after = until(lambda: (owners := {
            b: (s := cluster.zk.exists(f"/brokers/ids/{b}")) and s.ephemeralOwner
            for b in cluster.ids}) and all(owners.values()) and owners,
            "every broker registered", 30)
        kept = sorted(b for b in cluster.ids if after[b] == sessions[b])
        topic = f"after-blip-{round_}"
        cluster.create_topic(topic, PARTITIONS)
        for broker_id in cluster.ids:
            until(lambda b=broker_id, t=topic: (leaders := cluster.metadata_leaders(b, t))
                  and len(leaders) == PARTITIONS and -1 not in leaders.values(),
                  f"broker {broker_id} to see leaders of {topic}", 30)
        controller = cluster.controller()
        victim = next((cluster.leader(TOPIC, p) for p in range(PARTITIONS)
                       if cluster.leader(TOPIC, p) != controller), None)
        if victim is not None:
            led = [p for p in range(PARTITIONS) if cluster.leader(TOPIC, p) == victim]
            cluster.kill(victim)
            for p in led:
                cluster.wait_leader(TOPIC, p, not_in=[victim])
            cluster.start(victim)
        cluster.kill(controller)
        until(lambda c=controller: cluster.controller() not in (c, -1), "a new controller",
              40)
        cluster.start(controller)
        cluster.wait_full_isr(TOPIC, PARTITIONS)
        run.note(f"ZooKeeper restarted (sessions of {kept} survived); then leader {victim} "
                 f"and controller {controller} killed and replaced")


def java_hash(text: str) -> int:
    """Java's String.hashCode (the group coordinator's partition choice)."""
    value = 0
    for unit in struct.unpack(f">{len(text.encode('utf-16-be')) // 2}H",
                              text.encode("utf-16-be")):
        value = (31 * value + unit) & 0xFFFFFFFF
    return value - (1 << 32) if value >= 1 << 31 else value



def _assignment(cluster: FaultCluster, topic: str) -> dict[str, Any]:
    data, _ = cluster.zk.get(f"/brokers/topics/{topic}")
    return dict(json.loads(data))


def _reassign(cluster: FaultCluster, partition: int, replicas: list[int]) -> None:
    """Through kafka-python's admin client, as an operator's tool would."""
    from kafka import TopicPartition
    from kafka.admin import KafkaAdminClient
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=20_000)
    try:
        key = TopicPartition(TOPIC, partition)
        assert admin.alter_partition_reassignments({key: replicas}) == {key: None}
    finally:
        admin.close()


def _moved(cluster: FaultCluster, partition: int, replicas: list[int]) -> bool:
    stored = _assignment(cluster, TOPIC)
    return (stored["partitions"][str(partition)] == replicas
            and not stored.get("adding_replicas"))


def reassignment_under_load(run: Run) -> None:
    """F17: partition 0 moves off its leader (that replica is deleted), then back onto it;
    the leader is SIGKILLed while the returning replica copies the log. The copy goes on
    from the next leader, the move completes once the killed broker returns, and nothing
    acknowledged is lost."""
    cluster = run.cluster
    for _ in range(run.rounds):
        replicas = _assignment(cluster, TOPIC)["partitions"]["0"]
        leaving = cluster.leader(TOPIC, 0)
        fewer = [b for b in replicas if b != leaving]
        _reassign(cluster, 0, fewer)
        until(lambda r=fewer: _moved(cluster, 0, r), "the move off the leader")
        run.workload.wait_acked(50)
        _reassign(cluster, 0, replicas)
        victim = cluster.leader(TOPIC, 0)
        cluster.kill(victim)
        cluster.wait_leader(TOPIC, 0, not_in=[victim])
        run.workload.wait_acked(50)
        cluster.start(victim)
        until(lambda r=replicas: _moved(cluster, 0, r), "the move back to complete")
        run.note(f"moved 0 off {leaving} and back; killed leader {victim} in the middle")
