"""librdkafka (confluent-kafka) as an oracle for the flexible path: a socket stub built only
on our codec answers its ApiVersions v3 handshake and a Metadata request, and librdkafka
must accept both; it must also recover from our "unsupported ApiVersions" reply."""

from __future__ import annotations

import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    FrameDecoder,
    RequestHeader,
    api_versions_unsupported_response,
    decode_request_body,
    decode_request_header,
    encode_response,
    frame_bytes,
)

admin = pytest.importorskip("confluent_kafka.admin")
pytestmark = pytest.mark.compat


class StubBroker:
    """Answers ApiVersions and Metadata from our codec; records every request it reads."""

    def __init__(self, refuse_api_versions_above: int | None = None) -> None:
        self.requests: list[tuple[RequestHeader, dict[str, Any]]] = []
        self._refuse_above = refuse_api_versions_above
        self._server = socket.create_server(("127.0.0.1", 0))
        self.port = self._server.getsockname()[1]
        self._closed = False
        threading.Thread(target=self._accept, daemon=True).start()

    def close(self) -> None:
        self._closed = True
        self._server.close()

    def _accept(self) -> None:
        while not self._closed:
            try:
                conn, _ = self._server.accept()
            except OSError:
                return
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        decoder = FrameDecoder(1 << 20)
        with conn:
            while data := conn.recv(65536):
                for frame in decoder.feed(data):
                    reply = self._answer(frame)
                    if reply is not None:
                        conn.sendall(reply)

    def _answer(self, frame: bytearray) -> bytes | None:
        header, offset = decode_request_header(frame)
        if header.api_key == ApiKey.API_VERSIONS and self._refuse_above is not None \
                and header.api_version > self._refuse_above:
            self.requests.append((header, {}))
            return api_versions_unsupported_response(header.correlation_id)
        body = decode_request_body(header, frame, offset)
        self.requests.append((header, body))
        if header.api_key == ApiKey.API_VERSIONS:
            keys = [{"api_key": k, "min_version": lo, "max_version": hi}
                    for k, (lo, hi) in SUPPORTED_VERSIONS.items()]
            return frame_bytes(encode_response(header, {"api_keys": keys}))
        if header.api_key == ApiKey.METADATA:
            partition = {"partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}
            return frame_bytes(encode_response(header, {
                "brokers": [{"node_id": 1, "host": "127.0.0.1", "port": self.port}],
                "cluster_id": "stub", "controller_id": 1,
                "topics": [{"name": "orders", "partitions": [partition]}],
            }))
        return None


@pytest.fixture
def broker() -> Iterator[StubBroker]:
    stub = StubBroker()
    yield stub
    stub.close()


def _list_topics(port: int) -> Any:
    client = admin.AdminClient({"bootstrap.servers": f"127.0.0.1:{port}"})
    return client.list_topics(timeout=10)


def test_librdkafka_handshake_with_flexible_api_versions_and_metadata(broker: StubBroker) -> None:
    metadata = _list_topics(broker.port)
    assert "orders" in metadata.topics
    assert metadata.cluster_id == "stub"
    first_header, first_body = broker.requests[0]
    assert first_header.api_key == ApiKey.API_VERSIONS and first_header.api_version >= 3
    assert first_body["client_software_name"]  # compact string read from a v2 header frame
    metadata_versions = {h.api_version for h, _ in broker.requests if h.api_key == ApiKey.METADATA}
    assert metadata_versions == {SUPPORTED_VERSIONS[ApiKey.METADATA][1]}


def test_librdkafka_falls_back_after_our_unsupported_api_versions_reply() -> None:
    stub = StubBroker(refuse_api_versions_above=0)
    try:
        assert "orders" in _list_topics(stub.port).topics
    finally:
        stub.close()
    api_versions = [h.api_version for h, _ in stub.requests if h.api_key == ApiKey.API_VERSIONS]
    assert api_versions[0] >= 3 and 0 in api_versions
