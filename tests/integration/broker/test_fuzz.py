"""Bad input against a running broker process: random frames and mutated valid requests.

Each hypothesis example is a burst of frames over a few connections: raw random bytes,
valid requests with bytes flipped, inserted or deleted, wrong or huge size prefixes, and
unknown api keys or versions. After every burst the process must be alive and a separate
well-behaved connection must still get correct ApiVersions, Metadata, Produce and Fetch
answers.
"""

from __future__ import annotations

import socket
import struct
import time
from typing import Any

import crc32c
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.protocol import ApiKey, encode_request

HEALTH_TOPIC = "fuzz-health"
FUZZ_TOPIC = "fuzz-target"
BURST_CONNECTIONS = 3
READ_TIMEOUT_S = 0.05


def _produce_body(topic: str, records: bytes, acks: int = -1) -> dict[str, Any]:
    return {"transactional_id": None, "acks": acks, "timeout_ms": 5000,
            "topic_data": [{"name": topic, "partition_data": [{"index": 0,
                                                               "records": records}]}]}


def _fetch_body(topic: str, offset: int) -> dict[str, Any]:
    return {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "forgotten_topics_data": [], "rack_id": "",
            "topics": [{"topic": topic, "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}]}


def _valid_requests(batch: bytes) -> list[bytes]:
    """One valid frame per API the broker serves, to mutate."""
    topic = FUZZ_TOPIC
    requests: list[tuple[int, int, dict[str, Any]]] = [
        (ApiKey.API_VERSIONS, 3, {"client_software_name": "fuzz",
                                  "client_software_version": "1"}),
        (ApiKey.API_VERSIONS, 0, {}),
        (ApiKey.METADATA, 8, {"topics": [{"name": topic}], "allow_auto_topic_creation": True,
                              "include_cluster_authorized_operations": False,
                              "include_topic_authorized_operations": False}),
        (ApiKey.METADATA, 0, {"topics": []}),
        (ApiKey.PRODUCE, 8, _produce_body(topic, batch)),
        (ApiKey.PRODUCE, 3, _produce_body(topic, batch, acks=0)),
        (ApiKey.FETCH, 11, _fetch_body(topic, 0)),
        (ApiKey.LIST_OFFSETS, 5, {"replica_id": -1, "isolation_level": 0, "topics": [
            {"name": topic, "partitions": [{"partition_index": 0, "current_leader_epoch": -1,
                                            "timestamp": -2}]}]}),
        (ApiKey.CREATE_TOPICS, 4, {"topics": [{"name": "fuzz-created", "num_partitions": 1,
                                               "replication_factor": 1, "assignments": [],
                                               "configs": []}],
                                   "timeout_ms": 1000, "validate_only": True}),
        (ApiKey.INIT_PRODUCER_ID, 1, {"transactional_id": None,
                                      "transaction_timeout_ms": 1000}),
        (ApiKey.FIND_COORDINATOR, 2, {"key": "fuzz-group", "key_type": 0}),
        (ApiKey.OFFSET_FETCH, 5, {"group_id": "fuzz-group", "topics": None}),
        (ApiKey.DESCRIBE_CONFIGS, 3, {"resources": [{"resource_type": 2,
                                                     "resource_name": topic,
                                                     "configuration_keys": None}],
                                      "include_synonyms": False,
                                      "include_documentation": False}),
    ]
    return [encode_request(key, version, 7, "fuzz", body) for key, version, body in requests]


def _mutations(valid: list[bytes]) -> st.SearchStrategy[bytes]:
    """Frames derived from valid ones: flipped, inserted or deleted bytes, a rewritten
    size prefix, or an unknown api key or version in an otherwise valid frame."""
    frame = st.sampled_from(valid)

    @st.composite
    def flipped(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(frame))
        for _ in range(draw(st.integers(1, 8))):
            position = draw(st.integers(4, len(data) - 1))
            data[position] ^= draw(st.integers(1, 255))
        return bytes(data)

    @st.composite
    def inserted_or_deleted(draw: st.DrawFn) -> bytes:
        data = draw(frame)
        start = draw(st.integers(4, len(data)))
        end = draw(st.integers(start, min(len(data), start + 16)))
        middle = draw(st.binary(max_size=16))
        body = data[4:start] + middle + data[end:]
        return struct.pack(">i", len(body)) + body  # consistent size, broken content

    @st.composite
    def wrong_size(draw: st.DrawFn) -> bytes:
        data = draw(frame)
        size = draw(st.one_of(st.integers(-(2**31), 2**31 - 1),
                              st.integers(len(data) - 40, len(data) + 40)))
        return struct.pack(">i", size) + data[4:]

    @st.composite
    def unknown_api(draw: st.DrawFn) -> bytes:
        data = bytearray(draw(frame))
        data[4:8] = struct.pack(">hh", draw(st.integers(-(2**15), 2**15 - 1)),
                                draw(st.integers(-(2**15), 2**15 - 1)))
        return bytes(data)

    return st.one_of(flipped(), inserted_or_deleted(), wrong_size(), unknown_api())


def _damaged_batches(batch: bytes) -> st.SearchStrategy[bytes]:
    """Valid Produce requests carrying a record batch with bytes changed, its CRC-32C
    recomputed half of the time, so the broker's batch validation (not only the frame
    decoder) meets the damage."""

    @st.composite
    def produce(draw: st.DrawFn) -> bytes:
        data = bytearray(batch)
        for _ in range(draw(st.integers(1, 6))):
            data[draw(st.integers(0, len(data) - 1))] ^= draw(st.integers(1, 255))
        if draw(st.booleans()):
            data[17:21] = struct.pack(">I", crc32c.crc32c(bytes(data[21:])))
        acks = draw(st.sampled_from([-1, 0, 1]))
        return encode_request(ApiKey.PRODUCE, draw(st.integers(3, 8)), 9, "fuzz",
                              _produce_body(FUZZ_TOPIC, bytes(data), acks))
    return produce()


def _random_frames() -> st.SearchStrategy[bytes]:
    sized = st.binary(max_size=200).map(lambda body: struct.pack(">i", len(body)) + body)
    return st.one_of(st.binary(min_size=1, max_size=200), sized)


def _send_burst(address: tuple[str, int], bursts: list[list[bytes]]) -> None:
    """Each list of frames on its own connection; whatever comes back is drained."""
    connections = []
    for frames in bursts:
        sock = socket.create_connection(address, timeout=5)
        try:
            sock.sendall(b"".join(frames))
        except OSError:  # the broker closed it early: allowed
            sock.close()
            continue
        connections.append(sock)
    for sock in connections:
        sock.settimeout(READ_TIMEOUT_S)
        try:
            while sock.recv(65536):
                pass
        except OSError:
            pass
        sock.close()


class HealthCheckClient:
    """A well-behaved client: ApiVersions, Metadata, Produce then Fetch of its own record."""

    def __init__(self, wire: Any, bootstrap: str, make_batch: Any, read_records: Any) -> None:
        self.wire, self.bootstrap = wire, bootstrap
        self.make_batch, self.read_records = make_batch, read_records
        self.round = 0

    def check(self, topic: str = HEALTH_TOPIC) -> None:
        client = self.wire(self.bootstrap)
        versions = client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "health",
                                                         "client_software_version": "1"})
        assert versions["error_code"] == 0
        assert {e["api_key"] for e in versions["api_keys"]} >= {ApiKey.PRODUCE, ApiKey.FETCH}
        # The first answer may be LEADER_NOT_AVAILABLE while the topic is created; a
        # client asks again, as Kafka's do.
        deadline = time.monotonic() + 30
        while True:
            metadata = client.call(ApiKey.METADATA, 8, {
                "topics": [{"name": topic}], "allow_auto_topic_creation": True,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False})
            assert metadata["brokers"] and metadata["topics"][0]["name"] == topic
            if metadata["topics"][0]["error_code"] == 0 or time.monotonic() > deadline:
                break
            time.sleep(0.05)
        value = b"health-%d" % self.round
        self.round += 1
        produced = client.call(ApiKey.PRODUCE, 8, _produce_body(
            topic, self.make_batch([value])))["responses"][0]["partition_responses"][0]
        assert produced["error_code"] == 0, produced
        fetched = client.call(ApiKey.FETCH, 11, _fetch_body(topic, produced["base_offset"]))
        partition = fetched["responses"][0]["partitions"][0]
        assert partition["error_code"] == 0
        assert next(v for _o, _k, v, _t in self.read_records(partition["records"])) == value
        client.close()


@pytest.mark.slow
def test_random_and_mutated_frames_never_break_the_broker(broker_process, wire, make_batch,
                                                          read_records):
    host, port = broker_process.bootstrap_servers.rsplit(":", 1)
    address = (host, int(port))
    health = HealthCheckClient(wire, broker_process.bootstrap_servers, make_batch,
                               read_records)
    health.check()  # creates the health topic
    health.check(FUZZ_TOPIC)  # and the one the fuzzed requests aim at
    batch = make_batch([b"v" * 30, b"w" * 5], keys=[b"k" * 10, None])
    frames = st.one_of(_mutations(_valid_requests(batch)), _damaged_batches(batch),
                       _random_frames())
    bursts = st.lists(st.lists(frames, min_size=1, max_size=6), min_size=1,
                      max_size=BURST_CONNECTIONS)

    @settings(max_examples=300, deadline=None, database=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
    @given(bursts)
    def burst_then_check(burst: list[list[bytes]]) -> None:
        _send_burst(address, burst)
        assert broker_process.process.poll() is None, broker_process.log_text()
        health.check()

    burst_then_check()
    assert broker_process.process.poll() is None
    broker_log = broker_process.log_text()
    failures = [line for line in broker_log.splitlines()
                if "Traceback" in line or "failed (client" in line]
    assert failures == [], "a handler raised on bad input:\n" + broker_log
