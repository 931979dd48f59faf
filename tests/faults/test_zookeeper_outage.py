"""While ZooKeeper is unreachable, a broker answers every request that does not need it,
even as its leaders try to change ISRs (which do need it): three ``kafkalite-server``
processes, one follower paused so the leaders shrink their ISRs, ZooKeeper stopped.
ApiVersions, Metadata, Produce with acks=1 and Fetch must be answered throughout (each
within a bound far below the session timeout: a broker whose event loop waited on
ZooKeeper answered nothing). When ZooKeeper is back, a topic created through a broker gets
leaders and the cluster is whole again; the note says how long the topic took."""

from __future__ import annotations

import time

import pytest
from cluster import FaultCluster, until

from kafkalite.protocol import ApiKey
from tests.conftest import build_batch

TOPIC = "outage"
ANSWER_WITHIN_S = 5.0
"""A bound on each answer, far below the outage: a frozen broker answers nothing."""
PROBE_S = 4.0


def _fetch_body(partition: int) -> dict[str, object]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": TOPIC, "partitions": [
                {"partition": partition, "current_leader_epoch": -1, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""}


def _produce_body(partition: int) -> dict[str, object]:
    return {"transactional_id": None, "acks": 1, "timeout_ms": 5000, "topic_data": [
        {"name": TOPIC, "partition_data": [
            {"index": partition, "records": build_batch([b"during the outage"])}]}]}


@pytest.mark.faults
@pytest.mark.slow
def test_requests_are_answered_while_zookeeper_is_down(tmp_path, zookeeper):
    with FaultCluster(tmp_path, zookeeper, chroot=f"/outage-{int(time.time() * 1000)}",
                      config={"zookeeper.session.timeout.ms": "30000"}) as cluster:
        cluster.start_all()
        cluster.create_topic(TOPIC, 3)
        leaders = {p: cluster.leader(TOPIC, p) for p in range(3)}
        for broker_id in cluster.ids:
            until(lambda b=broker_id: cluster.metadata_leaders(b, TOPIC) == leaders,
                  f"broker {broker_id} to know the leaders")
        paused = next(b for b in cluster.ids if list(leaders.values()).count(b) <= 1)
        serving = [b for b in cluster.ids if b != paused]
        led = {b: [p for p, leader in leaders.items() if leader == b] for b in serving}
        cluster.pause(paused)  # its leaders' ISRs shrink: a write to ZooKeeper each
        zookeeper.stop()
        try:
            answered = 0
            deadline = time.monotonic() + PROBE_S + 3.0  # past replica.lag.time.max.ms
            while time.monotonic() < deadline:
                for broker_id in serving:
                    ask = cluster.request
                    assert ask(broker_id, ApiKey.API_VERSIONS, 0, {},
                               ANSWER_WITHIN_S)["error_code"] == 0
                    metadata = ask(broker_id, ApiKey.METADATA, 8, {
                        "topics": [{"name": TOPIC}], "allow_auto_topic_creation": False},
                        ANSWER_WITHIN_S)
                    assert metadata["topics"][0]["error_code"] == 0
                    for partition in led[broker_id]:
                        produced = ask(broker_id, ApiKey.PRODUCE, 7, _produce_body(partition),
                                       ANSWER_WITHIN_S)
                        assert produced["responses"][0]["partition_responses"][0][
                            "error_code"] == 0
                        fetched = ask(broker_id, ApiKey.FETCH, 11, _fetch_body(partition),
                                      ANSWER_WITHIN_S)
                        assert fetched["responses"][0]["partitions"][0]["error_code"] == 0
                    answered += 1
                time.sleep(0.2)
            assert answered
        finally:
            zookeeper.start()
            back = time.monotonic()
            cluster.resume(paused)
        cluster.create_topic("after-outage", 3)
        created = until(lambda: all(-1 not in leaders.values() and len(leaders) == 3
                                    for leaders in (cluster.metadata_leaders(b, "after-outage")
                                                    for b in cluster.ids))
                        and time.monotonic(), "leaders of a topic created afterwards", 30)
        cluster.wait_full_isr(TOPIC, 3)
        print(f"a topic created {created - back:.2f} s after ZooKeeper answered again had "
              f"leaders on every broker; {answered} rounds of requests answered during the "
              "outage")
        assert cluster.zk.exists(f"/brokers/ids/{paused}")
