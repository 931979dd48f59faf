"""Connection limits: ``queued.max.request.bytes`` bounds the request bytes a broker holds
while other clients are still served; idle and slow half-received connections are closed."""

from __future__ import annotations

import socket
import struct
import time
from pathlib import Path

from kafkalite.protocol import ApiKey
from tests.conftest import BrokerProcess

_FRAME = 60 * 1024 * 1024
_CHUNK = 1024 * 1024


def _rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise AssertionError("no VmRSS")


def _send_half_frame(bootstrap: str) -> socket.socket:
    """Open a connection and push half of a 60 MB Produce frame, as far as the broker takes
    it (a stalled connection stops taking bytes: give up after a second without progress)."""
    host, port = bootstrap.rsplit(":", 1)
    sock = socket.create_connection((host, int(port)))
    sock.settimeout(0.2)
    header = struct.pack(">hhih", ApiKey.PRODUCE, 8, 1, 1) + b"x"
    sock.sendall(struct.pack(">i", _FRAME) + header)
    chunk = b"\0" * _CHUNK
    sent = 0
    progress_at = time.monotonic()
    while sent < _FRAME // 2 and time.monotonic() < progress_at + 1:
        try:
            sent += sock.send(chunk)
            progress_at = time.monotonic()
        except TimeoutError:
            continue
    return sock


def test_half_sent_large_frames_stay_within_the_bound(tmp_path, wire):
    bound = 64 * 1024 * 1024
    broker = BrokerProcess(tmp_path / "data", ["--set", f"queued.max.request.bytes={bound}"])
    broker.start()
    try:
        assert broker.process is not None
        pid = broker.process.pid
        # Settle the broker's baseline (first requests import and allocate lazily).
        assert wire(broker.bootstrap_servers).call(ApiKey.METADATA, 1, {"topics": []})
        before = _rss_bytes(pid)
        senders = [_send_half_frame(broker.bootstrap_servers) for _ in range(4)]
        small = wire(broker.bootstrap_servers)
        assert small.call(ApiKey.METADATA, 1, {"topics": []})["brokers"] != []
        grown = _rss_bytes(pid) - before
        # Unbounded, the four half frames hold 4 x 30 MB = 120 MB; bounded, one frame (the
        # first, admitted alone) is received and the others stall after one socket read.
        assert grown < bound + 8 * 1024 * 1024, f"broker RSS grew by {grown} bytes"
        for sock in senders:
            sock.close()
        assert small.call(ApiKey.METADATA, 1, {"topics": []})["brokers"] != []
    finally:
        broker.kill()


def test_small_requests_are_served_while_the_bound_is_reached(cluster_factory, wire):
    cluster = cluster_factory(queued_max_request_bytes=str(1024 * 1024),
                              kafkalite_request_receive_timeout_ms="3000")
    budget = cluster.brokers[0].connection_limits.budget
    big = [wire(cluster.bootstrap_servers) for _ in range(3)]
    for client in big:  # three 4 MB frames, 512 KB of each sent
        client.send_raw(struct.pack(">i", 4 * 1024 * 1024) + b"\0" * (512 * 1024))
    deadline = time.monotonic() + 10
    while budget.holders < 3 and time.monotonic() < deadline:
        time.sleep(0.05)
    # One frame is admitted (charged whole); the others hold at most a socket read each.
    assert budget.total <= 4 * 1024 * 1024 + 4 + 2 * 256 * 1024 + 8
    small = wire(cluster.bootstrap_servers)
    assert small.call(ApiKey.METADATA, 1, {"topics": []})["brokers"] != []
    for client in big:  # stalled ones are closed by the receive timeout, the rest at once
        client.close()
    deadline = time.monotonic() + 20
    while budget.total and time.monotonic() < deadline:
        time.sleep(0.05)
    assert budget.total == 0


def test_idle_connection_is_closed(cluster_factory, wire):
    cluster = cluster_factory(connections_max_idle_ms="300")
    active = wire(cluster.bootstrap_servers)
    assert active.call(ApiKey.METADATA, 1, {"topics": []})["brokers"] != []
    idle = wire(cluster.bootstrap_servers)
    assert idle.is_closed_by_peer()
    assert active.is_closed_by_peer()  # answered, then idle too


def test_slow_half_request_is_closed(cluster_factory, wire):
    cluster = cluster_factory(kafkalite_request_receive_timeout_ms="500",
                              connections_max_idle_ms="600000")
    slow = wire(cluster.bootstrap_servers)
    slow.sock.settimeout(0.1)
    payload = struct.pack(">hhih", ApiKey.METADATA, 1, 5, 1) + b"x" + struct.pack(">i", 0)
    slow.send_raw(struct.pack(">i", len(payload)))
    closed = False
    deadline = time.monotonic() + 10
    for byte in payload[:-1]:  # one byte every 100 ms: never completes in 500 ms
        try:
            slow.send_raw(bytes([byte]))
            closed = slow.sock.recv(1) == b""
        except TimeoutError:
            continue
        except (ConnectionResetError, BrokenPipeError):
            closed = True
        if closed or time.monotonic() > deadline:
            break
    assert closed
    prompt = wire(cluster.bootstrap_servers)
    assert prompt.call(ApiKey.METADATA, 1, {"topics": []})["brokers"] != []
