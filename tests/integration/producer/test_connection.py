"""KafkaClient / BrokerConnection against scripted brokers: negotiation, strict response
matching, request timeouts, close."""

from __future__ import annotations

import contextlib
import dataclasses
import socket
import struct
import threading
from collections.abc import Callable, Iterator

import pytest

from kafkalite.client.client import KafkaClient
from kafkalite.client.connection import pick_version
from kafkalite.errors import (
    ConfigError,
    IncompatibleBrokerVersionError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from kafkalite.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    RequestHeader,
    decode_request_header,
    encode_response,
    frame_bytes,
)

Script = Callable[[RequestHeader], bytes | None]
"""Given a non-ApiVersions request header: the reply frame, or None for no reply."""


def api_versions_reply(header: RequestHeader) -> bytes:
    body = {"error_code": 0, "api_keys": [
        {"api_key": k, "min_version": lo, "max_version": hi}
        for k, (lo, hi) in SUPPORTED_VERSIONS.items()]}
    return frame_bytes(encode_response(header, body))


def metadata_reply(header: RequestHeader) -> bytes:
    return frame_bytes(encode_response(header, {"brokers": [], "topics": []}))


@pytest.fixture
def scripted_broker() -> Iterator[Callable[[Script], str]]:
    listeners: list[socket.socket] = []

    def start(script: Script) -> str:
        listener = socket.create_server(("127.0.0.1", 0))
        listeners.append(listener)

        def accept() -> None:
            while True:
                try:
                    conn, _ = listener.accept()
                except OSError:
                    return
                threading.Thread(target=serve, args=(conn,), daemon=True).start()

        def serve(conn: socket.socket) -> None:
            with conn, contextlib.suppress(OSError):
                buffer = b""
                while True:
                    while len(buffer) < 4 or len(buffer) < 4 + struct.unpack(">i", buffer[:4])[0]:
                        chunk = conn.recv(65536)
                        if not chunk:
                            return
                        buffer += chunk
                    size = struct.unpack(">i", buffer[:4])[0]
                    frame, buffer = buffer[4:4 + size], buffer[4 + size:]
                    header, _ = decode_request_header(frame)
                    reply = (api_versions_reply(header) if header.api_key == ApiKey.API_VERSIONS
                             else script(header))
                    if reply is not None:
                        conn.sendall(reply)

        threading.Thread(target=accept, daemon=True).start()
        return f"127.0.0.1:{listener.getsockname()[1]}"

    yield start
    for listener in listeners:
        listener.close()


def test_negotiates_the_highest_common_version(scripted_broker: Callable[[Script], str]) -> None:
    versions: list[int] = []

    def script(header: RequestHeader) -> bytes:
        versions.append(header.api_version)
        return metadata_reply(header)

    client = KafkaClient(bootstrap_servers=scripted_broker(script))
    try:
        body = client.send(-1, ApiKey.METADATA, {"topics": []}).get(5)
        assert body["brokers"] == []
        assert set(versions) == {SUPPORTED_VERSIONS[ApiKey.METADATA][1]}
    finally:
        client.close()


def test_a_wrong_correlation_id_breaks_the_connection(
    scripted_broker: Callable[[Script], str]
) -> None:
    def script(header: RequestHeader) -> bytes:
        return metadata_reply(dataclasses.replace(header, correlation_id=header.correlation_id + 7))

    client = KafkaClient(bootstrap_servers=scripted_broker(script))
    try:
        with pytest.raises(KafkaConnectionError, match="correlation id"):
            client.send(-1, ApiKey.METADATA, {"topics": []}).get(5)
    finally:
        client.close()


def test_a_request_without_reply_times_out(scripted_broker: Callable[[Script], str]) -> None:
    client = KafkaClient(bootstrap_servers=scripted_broker(lambda header: None),
                         request_timeout_ms=200)
    try:
        with pytest.raises(KafkaTimeoutError, match="no response"):
            client.send(-1, ApiKey.METADATA, {"topics": []}).get(5)
    finally:
        client.close()


def test_close_fails_pending_requests(scripted_broker: Callable[[Script], str]) -> None:
    client = KafkaClient(bootstrap_servers=scripted_broker(lambda header: None))
    future = client.send(-1, ApiKey.METADATA, {"topics": []})
    client.close()
    with pytest.raises(KafkaError, match="closed"):
        future.get(5)


def test_unreachable_broker_fails_the_request() -> None:
    client = KafkaClient(bootstrap_servers="127.0.0.1:1")
    try:
        with pytest.raises(KafkaConnectionError):
            client.send(-1, ApiKey.METADATA, {"topics": []}).get(5)
    finally:
        client.close()


def test_disjoint_version_ranges_are_a_typed_error() -> None:
    assert pick_version(ApiKey.PRODUCE, (0, 12)) == SUPPORTED_VERSIONS[ApiKey.PRODUCE][1]
    with pytest.raises(IncompatibleBrokerVersionError, match="api key 1"):
        pick_version(ApiKey.FETCH, (SUPPORTED_VERSIONS[ApiKey.FETCH][1] + 1, 17))
    with pytest.raises(IncompatibleBrokerVersionError):
        pick_version(ApiKey.FETCH, None)


def test_unknown_client_config_is_named() -> None:
    with pytest.raises(ConfigError) as info:
        KafkaClient(bootstrap_servers="a:1", linger_ms=5)
    assert info.value.key == "linger_ms"


def test_requests_queued_in_one_loop_round_leave_in_one_write(
    scripted_broker: Callable[[Script], str]
) -> None:
    """Each socket call hands the GIL over, so a round's requests share one write: the
    socket gets all five in its first send call."""
    frames_per_write: list[int] = []

    def script(header: RequestHeader) -> bytes:
        return metadata_reply(header)

    address = scripted_broker(script)
    client = KafkaClient(bootstrap_servers=address)
    try:
        client.send(-1, ApiKey.METADATA, {"topics": []}).get(5)  # connected and negotiated
        conn = client.connection(-1)
        assert conn is not None
        sock = conn._sock
        assert sock is not None
        real_send = sock.send

        def counting_send(data: bytes | bytearray | memoryview) -> int:
            frames, view, offset = 0, bytes(data), 0
            while offset + 4 <= len(view):
                frames += 1
                offset += 4 + struct.unpack_from(">i", view, offset)[0]
            frames_per_write.append(frames)
            return real_send(data)

        futures: list = []
        done = threading.Event()

        def queue_five() -> None:
            conn._sock = _Wrapped(sock, counting_send)  # type: ignore[assignment]
            futures.extend(client.send(-1, ApiKey.METADATA, {"topics": []}) for _ in range(5))
            done.set()

        client.call_soon(queue_five)
        assert done.wait(5)
        for future in futures:
            assert future.get(5)["brokers"] == []
        assert frames_per_write[0] == 5
    finally:
        client.close()


class _Wrapped:
    """A socket whose ``send`` is observed; everything else is the socket's."""

    def __init__(self, sock: socket.socket, send: Callable[..., int]) -> None:
        self._sock = sock
        self.send = send

    def __getattr__(self, name: str) -> object:
        return getattr(self._sock, name)


def test_replies_larger_than_the_receive_buffer_arrive_whole(
    scripted_broker: Callable[[Script], str]
) -> None:
    """A reply bigger than one read (256 KiB) is read in several ``recv_into`` calls into the
    connection's one buffer; every reply still decodes, in order."""
    names = [f"topic-{i:05d}-" + "x" * 180 for i in range(2_000)]  # about 400 KB a reply

    def script(header: RequestHeader) -> bytes:
        topics = [{"error_code": 0, "name": name, "partitions": []} for name in names]
        return frame_bytes(encode_response(header, {"brokers": [], "topics": topics}))

    client = KafkaClient(bootstrap_servers=scripted_broker(script))
    try:
        futures = [client.send(-1, ApiKey.METADATA, {"topics": []}) for _ in range(3)]
        for future in futures:
            assert [topic["name"] for topic in future.get(10)["topics"]] == names
    finally:
        client.close()


@pytest.mark.parametrize(("prefix", "problem"), [
    (struct.pack(">i", -2), "frame size -2 is outside"),
    (struct.pack(">i", 2**31 - 1), "frame size 2147483647 is outside"),
])
def test_a_garbage_frame_size_fails_the_request_with_a_named_error(
    scripted_broker: Callable[[Script], str], prefix: bytes, problem: str
) -> None:
    address = scripted_broker(lambda header: prefix + b"\x00" * 16)
    client = KafkaClient(bootstrap_servers=address, request_timeout_ms=5_000)
    try:
        with pytest.raises(KafkaConnectionError, match=problem):
            client.send(-1, ApiKey.METADATA, {"topics": []}).get(5)
    finally:
        client.close()
