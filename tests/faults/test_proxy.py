"""The link proxy on loopback sockets: a request's client_id names the source broker, a cut
link holds bytes until it heals, other links and clients keep flowing, reset closes."""

from __future__ import annotations

import socket
import socketserver
import threading
from collections.abc import Iterator

import pytest
from proxy import CLIENT, LinkProxy, broker_source, request_client_id

from kafkalite.protocol import ApiKey, encode_request


class _Echo(socketserver.BaseRequestHandler):
    def handle(self) -> None:
        while data := self.request.recv(65536):
            self.request.sendall(data)


@pytest.fixture
def echo_port() -> Iterator[int]:
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), _Echo)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, daemon=True).start()
    yield server.server_address[1]
    server.shutdown()
    server.server_close()


@pytest.fixture
def proxy() -> Iterator[LinkProxy]:
    started = LinkProxy().start()
    yield started
    started.stop()


def _frame(client_id: str) -> bytes:
    return encode_request(ApiKey.API_VERSIONS, 0, 7, client_id, {})


def _exchange(port: int, payload: bytes, timeout: float = 5.0) -> bytes:
    with socket.create_connection(("127.0.0.1", port), timeout=timeout) as sock:
        sock.sendall(payload)
        data = b""
        while len(data) < len(payload):
            data += sock.recv(65536)
        return data


def test_client_ids_name_the_source_broker():
    assert request_client_id(_frame("replica-fetcher-2")) == "replica-fetcher-2"
    assert broker_source("replica-fetcher-2") == "b2"
    assert broker_source("controller-13") == "b13"
    assert broker_source("broker-1") == "b1"
    assert broker_source("rdkafka") == CLIENT
    assert broker_source("my-app-3") == CLIENT
    assert request_client_id(b"\x00\x00") is None


def test_a_cut_link_holds_bytes_until_healed_while_others_flow(proxy, echo_port):
    port = proxy.listen(echo_port, "b2", broker_source)
    fetcher, client = _frame("replica-fetcher-1"), _frame("rdkafka")
    assert _exchange(port, fetcher) == fetcher
    proxy.cut([("b1", "b2")])
    assert _exchange(port, client) == client
    assert _exchange(port, _frame("controller-3")) == _frame("controller-3")
    with socket.create_connection(("127.0.0.1", port), timeout=1.0) as sock:
        sock.sendall(fetcher)
        with pytest.raises(TimeoutError):
            sock.recv(1)
        proxy.heal()
        sock.settimeout(5.0)
        data = b""
        while len(data) < len(fetcher):
            data += sock.recv(65536)
        assert data == fetcher
    assert {("b1", "b2"), (CLIENT, "b2"), ("b3", "b2")} <= proxy.seen


def test_a_fixed_source_port_and_reset(proxy, echo_port):
    port = proxy.listen(echo_port, "zk", "b4")
    with socket.create_connection(("127.0.0.1", port), timeout=5.0) as sock:
        sock.sendall(b"ping")
        assert sock.recv(4) == b"ping"
        proxy.reset([("b4", "zk")])
        assert sock.recv(4) == b""
    assert ("b4", "zk") in proxy.seen
