"""Consumer groups on an EmbeddedCluster: sharing, rebalances, generations, fencing."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from collections import Counter
from collections.abc import Callable
from pathlib import Path

import pytest

from kafkalite.consumer import CommitFailedError, Consumer, ConsumerRebalanceListener
from kafkalite.structs import ConsumerRecord, TopicPartition
from tests.integration.consumer.helpers import poll_until, produce

REPO_ROOT = Path(__file__).resolve().parents[3]


def read_set(records: list[ConsumerRecord]) -> Counter[tuple[int, bytes]]:
    return Counter((r.partition, r.value) for r in records)


def test_three_members_share_six_partitions_and_read_each_record_once(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    sent = produce(bootstrap, "shared", 6, 20)
    members = [consumers("shared", group_id="g3", max_poll_records=3) for _ in range(3)]
    read: list[ConsumerRecord] = []
    poll_until(members, lambda: len(read) >= len(sent)
               and all(len(m.assignment()) == 2 for m in members), sink=read)
    assignments = [m.assignment() for m in members]
    assert set().union(*assignments) == {TopicPartition("shared", p) for p in range(6)}
    assert len({m.generation_id for m in members}) == 1
    counts = read_set(read)
    assert set(counts) == sent
    assert max(counts.values()) == 1


class Recorder(ConsumerRebalanceListener):
    def __init__(self) -> None:
        self.events: list[tuple[str, set[TopicPartition]]] = []

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self.events.append(("revoked", revoked))

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.events.append(("assigned", assigned))


def test_leaving_member_triggers_a_rebalance_with_a_higher_generation(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    produce(bootstrap, "leave", 6, 1)
    first, second = consumers(group_id="gl"), consumers("leave", group_id="gl")
    listener = Recorder()
    first.subscribe(["leave"], listener=listener)
    poll_until([first, second], lambda: len(first.assignment()) == 3
               and len(second.assignment()) == 3)
    generation = first.generation_id
    assert generation == second.generation_id > 0
    second.close()
    poll_until([first], lambda: len(first.assignment()) == 6)
    assert first.generation_id > generation
    assert listener.events[-2][0] == "revoked"
    assert listener.events[-1] == ("assigned", {TopicPartition("leave", p) for p in range(6)})


def test_member_polled_too_rarely_is_fenced_on_commit(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    produce(bootstrap, "fence", 6, 1)
    stale = consumers("fence", group_id="gf", max_poll_interval_ms=1000,
                      enable_auto_commit=False)
    poll_until([stale], lambda: len(stale.assignment()) == 6)
    old_generation = stale.generation_id
    live = consumers("fence", group_id="gf", max_poll_interval_ms=1000,
                     enable_auto_commit=False)
    poll_until([live], lambda: len(live.assignment()) == 6)  # `stale` does not poll
    assert live.generation_id > old_generation
    tp = TopicPartition("fence", 0)
    with pytest.raises(CommitFailedError, match="another member"):
        stale.commit({tp: 1})
    assert live.committed(tp) is None


def test_auto_commit_commits_consumed_positions(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    sent = produce(bootstrap, "auto", 6, 2)
    consumer = consumers("auto", group_id="ga", auto_commit_interval_ms=50)
    read: list[ConsumerRecord] = []
    tps = [TopicPartition("auto", p) for p in range(6)]
    poll_until([consumer], lambda: len(read) >= len(sent)
               and all(consumer.committed(tp) == 2 for tp in tps), sink=read)
    consumer.close()
    produce(bootstrap, "auto", 6, 1, prefix="late-")
    successor = consumers("auto", group_id="ga")
    late: list[ConsumerRecord] = []
    poll_until([successor], lambda: len(late) >= 6, sink=late)
    assert all(r.value.startswith(b"late-") and r.offset == 2 for r in late)


def test_commit_sync_and_async_with_callback(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    produce(bootstrap, "manual", 6, 1)
    consumer = consumers("manual", group_id="gm", enable_auto_commit=False)
    poll_until([consumer], lambda: len(consumer.assignment()) == 6)
    tp0, tp1 = TopicPartition("manual", 0), TopicPartition("manual", 1)
    consumer.commit({tp0: 1})
    assert consumer.committed(tp0) == 1
    results: list[object] = []
    consumer.commit_async({tp1: 1}, callback=lambda offsets, error: results.append(
        (dict(offsets), error)))
    poll_until([consumer], lambda: bool(results))
    assert results == [({tp1: (1, "", -1)}, None)]
    assert consumer.committed(tp1, metadata=True).offset == 1


def test_pattern_subscription_reads_every_matching_topic(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    sent = produce(bootstrap, "pat-a", 1, 2) | produce(bootstrap, "pat-b", 1, 2)
    produce(bootstrap, "other", 1, 1)
    consumer = consumers(group_id="gp")
    consumer.subscribe(pattern=r"pat-.*")
    read: list[ConsumerRecord] = []
    poll_until([consumer], lambda: len(read) >= len(sent), sink=read)
    assert {r.topic for r in read} == {"pat-a", "pat-b"}
    assert consumer.subscription() == {"pat-a", "pat-b"}


MEMBER_SCRIPT = textwrap.dedent("""
    import sys, time
    from kafkalite.consumer import Consumer
    consumer = Consumer("killed", bootstrap_servers=sys.argv[1], group_id="gk",
                        session_timeout_ms=6000, heartbeat_interval_ms=300)
    while True:
        consumer.poll(100)
        if len(consumer.assignment()) == 3:
            print("ready", flush=True)
""")


@pytest.mark.slow
def test_killed_member_is_replaced_after_its_session_timeout(
        bootstrap: str, consumers: Callable[..., Consumer]) -> None:
    produce(bootstrap, "killed", 6, 1)
    survivor = consumers("killed", group_id="gk")
    poll_until([survivor], lambda: len(survivor.assignment()) == 6)
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
    process = subprocess.Popen([sys.executable, "-c", MEMBER_SCRIPT, bootstrap],
                               stdout=subprocess.PIPE, text=True, env=env)
    try:
        assert process.stdout is not None
        poll_until([survivor], lambda: len(survivor.assignment()) == 3)
        assert process.stdout.readline().strip() == "ready"
        generation = survivor.generation_id
        process.send_signal(signal.SIGKILL)
        process.wait()
        poll_until([survivor], lambda: len(survivor.assignment()) == 6, timeout=20)
        assert survivor.generation_id > generation
    finally:
        process.kill()
        process.wait()
