"""Against a broker that only knows Produce v0-2 (Kafka 0.10): the producer negotiates down,
writes magic-1 messages (one compressed wrapper per batch) and the records read back with
kafka-python's reader, an independent implementation."""

from __future__ import annotations

import dataclasses
import socket
import socketserver
import struct
import threading
from collections.abc import Iterator
from typing import Any

import pytest
from kafka.record import MemoryRecords

from kafkalite import Producer
from kafkalite.protocol import (
    ApiKey,
    decode_request_body,
    decode_request_header,
    encode_response,
    frame_bytes,
)

TOPIC = "old"
ADVERTISED = {ApiKey.API_VERSIONS: (0, 0), ApiKey.METADATA: (0, 1), ApiKey.PRODUCE: (0, 2)}


class LegacyBroker(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), LegacyHandler)
        self.produced: list[bytes] = []
        self.next_offset = 0
        self.api_versions_seen: list[int] = []


class LegacyHandler(socketserver.BaseRequestHandler):
    server: LegacyBroker

    def handle(self) -> None:
        sock: socket.socket = self.request
        while True:
            head = _read(sock, 4)
            if head is None:
                return
            frame = _read(sock, struct.unpack(">i", head)[0])
            assert frame is not None
            header, offset = decode_request_header(frame)
            if header.api_key == ApiKey.API_VERSIONS:
                self.server.api_versions_seen.append(header.api_version)
                reply_header = dataclasses.replace(header, api_version=0)
                body = {"error_code": 35 if header.api_version > 0 else 0, "api_keys": [
                    {"api_key": k, "min_version": lo, "max_version": hi}
                    for k, (lo, hi) in ADVERTISED.items()]}
                sock.sendall(frame_bytes(encode_response(reply_header, body)))
                continue
            request = decode_request_body(header, frame, offset)
            sock.sendall(frame_bytes(encode_response(header, self._answer(header, request))))

    def _answer(self, header: Any, request: dict[str, Any]) -> dict[str, Any]:
        host, port = self.server.server_address[:2]
        if header.api_key == ApiKey.METADATA:
            return {"brokers": [{"node_id": 0, "host": host, "port": port}], "controller_id": 0,
                    "topics": [{"error_code": 0, "name": TOPIC, "partitions": [
                        {"error_code": 0, "partition_index": 0, "leader_id": 0,
                         "replica_nodes": [0], "isr_nodes": [0]}]}]}
        assert header.api_key == ApiKey.PRODUCE and header.api_version == 2
        responses = []
        for topic in request["topic_data"]:
            parts = []
            for part in topic["partition_data"]:
                records = bytes(part["records"])
                self.server.produced.append(records)
                count = sum(1 for _ in _records(records))
                parts.append({"index": part["index"], "error_code": 0,
                              "base_offset": self.server.next_offset})
                self.server.next_offset += count
            responses.append({"name": topic["name"], "partition_responses": parts})
        return {"responses": responses}


def _read(sock: socket.socket, size: int) -> bytes | None:
    data = b""
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            return None
        data += chunk
    return data


def _records(data: bytes) -> Iterator[Any]:
    batches = MemoryRecords(data)
    while batches.has_next():
        batch = batches.next_batch()
        yield from batch


@pytest.fixture
def legacy_broker() -> Iterator[LegacyBroker]:
    server = LegacyBroker()
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4"])
def test_magic_1_wrapper_messages_for_produce_v2(legacy_broker: LegacyBroker,
                                                 codec: str | None) -> None:
    host, port = legacy_broker.server_address[:2]
    with Producer(f"{host}:{port}", acks=1, compression_type=codec, linger_ms=50) as producer:
        futures = [producer.send(TOPIC, b"v%d" % i, key=b"k", timestamp_ms=1000 + i)
                   for i in range(50)]
        producer.flush(10)
        assert [f.get(0).offset for f in futures] == list(range(50))
    assert legacy_broker.api_versions_seen[:2] == [4, 0]  # ours first, then the broker's max
    batches = [MemoryRecords(data).next_batch() for data in legacy_broker.produced]
    assert {batch.magic for batch in batches} == {1}
    if codec is not None:
        assert len(legacy_broker.produced) == 1  # one wrapper message for the whole batch
        assert batches[0].compression_type != 0
    records = [r for data in legacy_broker.produced for r in _records(data)]
    assert [(r.key, r.value, r.timestamp) for r in records] == [
        (b"k", b"v%d" % i, 1000 + i) for i in range(50)]
