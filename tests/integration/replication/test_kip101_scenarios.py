"""KIP-101's two failures of truncating a returning replica to its high watermark,
reproduced on an in-process cluster: with truncation by leader epoch both end with no
lost acknowledged record and no divergence between the replicas."""

from __future__ import annotations

from replication_helpers import leader_of, log_bytes, replica, until

from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster
from kafkalite_server.log.checkpoint import OffsetCheckpointFile
from kafkalite_server.replication.partition import Partition
from kafkalite_server.replication.replica_manager import HIGH_WATERMARK_CHECKPOINT

A, B = 1, 2


def create_on(wire, cluster: EmbeddedCluster, topic: str, replicas: list[int]) -> None:
    body = {"topics": [{"name": topic, "num_partitions": -1, "replication_factor": -1,
                        "assignments": [{"partition_index": 0, "broker_ids": replicas}],
                        "configs": []}], "timeout_ms": 5000, "validate_only": False}
    answer = wire(cluster.bootstrap_servers).call(ApiKey.CREATE_TOPICS, 4, body)
    assert answer["topics"][0]["error_code"] == 0, answer
    until(lambda: leader_of(cluster, topic) == replicas[0], "the preferred leader")


def send(wire, cluster: EmbeddedCluster, make_batch, topic: str, value: bytes,
         acks: int) -> dict:
    address = cluster.broker(leader_of(cluster, topic)).endpoint
    body = {"transactional_id": None, "acks": acks, "timeout_ms": 10000, "topic_data": [
        {"name": topic, "partition_data": [{"index": 0, "records": make_batch([value])}]}]}
    answer = wire(f"{address.host}:{address.port}").call(ApiKey.PRODUCE, 8, body)
    return answer["responses"][0]["partition_responses"][0]


def values_of(partition: Partition, read_records, up_to: int) -> list[bytes]:
    return [value for _o, _k, value, _t in read_records(log_bytes(partition, up_to))]


def test_scenario_1_a_follower_with_a_stale_high_watermark_keeps_committed_data(
        memory_cluster, wire, make_batch, read_records, monkeypatch):
    """B holds m1, m2 but its checkpointed HW says 1 (the HW reaches followers one fetch
    late). HW truncation would cut m2 on B's restart; if A then died, the acknowledged m2
    would be gone. By epoch, B asks A where its epoch ends (offset 2) and keeps m2."""
    cluster = memory_cluster(3)
    create_on(wire, cluster, "kip101a", [A, B])
    for value in (b"m1", b"m2"):
        assert send(wire, cluster, make_batch, "kip101a", value, -1)["error_code"] == 0
    until(lambda: replica(cluster, B, "kip101a").log.log_end_offset == 2, "B has m2")
    b_dir = replica(cluster, B, "kip101a").log.directory.parent
    cluster.kill_broker(B)
    OffsetCheckpointFile(b_dir / HIGH_WATERMARK_CHECKPOINT).write({("kip101a", 0): 1})

    cuts: list[tuple[int, int]] = []
    original = Partition.truncate_to

    def recording(self: Partition, offset: int) -> None:
        cuts.append((self.local_id, offset))
        original(self, offset)
    monkeypatch.setattr(Partition, "truncate_to", recording)

    cluster.restart_broker(B)
    until(lambda: B in replica(cluster, A, "kip101a").isr, "B back in the ISR")
    assert [cut for cut in cuts if cut[0] == B and cut[1] < 2] == []
    cluster.kill_broker(A)
    until(lambda: leader_of(cluster, "kip101a") == B, "B leads")
    b = replica(cluster, B, "kip101a")
    until(lambda: b.high_watermark == 2, "B's HW covers m2 once it leads alone")
    assert values_of(b, read_records, 2) == [b"m1", b"m2"]


def test_scenario_2_replicas_do_not_diverge_after_both_fail(
        memory_cluster, wire, make_batch, read_records):
    """A leads and writes m2 at offset 1 that B never got; both fail; B returns first and
    leads (here through unclean election: the controller had already dropped B from the
    ISR), writing m3 at offset 1. A returns with HW 2: HW truncation would keep m2 at
    offset 1 next to B's m3 forever. By epoch, A learns its epoch ended at 1 on B, cuts m2
    and fetches m3."""
    cluster = memory_cluster(3, **{"unclean.leader.election.enable": "true"})
    create_on(wire, cluster, "kip101b", [A, B])
    assert send(wire, cluster, make_batch, "kip101b", b"m1", -1)["error_code"] == 0
    until(lambda: replica(cluster, B, "kip101b").log.log_end_offset == 1, "B has m1")
    cluster.kill_broker(B)
    until(lambda: replica(cluster, A, "kip101b").isr == (A,), "B out of the ISR")
    assert send(wire, cluster, make_batch, "kip101b", b"m2", 1)["error_code"] == 0
    a = replica(cluster, A, "kip101b")
    assert a.high_watermark == 2
    a_dir = a.log.directory.parent
    cluster.kill_broker(A)
    assert OffsetCheckpointFile(a_dir / HIGH_WATERMARK_CHECKPOINT).read()[("kip101b", 0)] == 2

    cluster.restart_broker(B)
    until(lambda: leader_of(cluster, "kip101b") == B, "B leads (unclean)")
    assert send(wire, cluster, make_batch, "kip101b", b"m3", 1)["error_code"] == 0
    cluster.restart_broker(A)
    until(lambda: A in replica(cluster, B, "kip101b").isr, "A back in the ISR")
    b, a = replica(cluster, B, "kip101b"), replica(cluster, A, "kip101b")
    until(lambda: a.log.log_end_offset == 2 and b.high_watermark == 2, "A caught up")
    assert values_of(b, read_records, 2) == [b"m1", b"m3"]
    assert log_bytes(a, 2) == log_bytes(b, 2)
    assert a.log.leader_epoch_cache.entries == b.log.leader_epoch_cache.entries
