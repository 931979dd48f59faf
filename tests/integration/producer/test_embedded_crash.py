"""A broker killed inside an EmbeddedCluster (the demo's failover step) drops every client
connection at once, as a SIGKILLed process does: none is left open by a stopped broker,
so a producer's requests to it fail on the connection error and go to the new leader,
instead of waiting out ``request_timeout_ms`` (30 s) on a connection nobody serves."""

from __future__ import annotations

import selectors
import socket
import threading
import time

import pytest

from kafkalite import Producer
from kafkalite.admin import AdminClient, NewTopic
from kafkalite_server import EmbeddedCluster

CONNECTING_THREADS = 4
CLOSE_BOUND_S = 10.0
"""How long a connection may stay open after its broker was killed: far below the 30 s
request timeout a leaked connection costs, far above a loaded machine's delay."""


def _connect_until_refused(address: tuple[str, int], opened: list[socket.socket],
                           stop: threading.Event) -> None:
    while not stop.is_set() and len(opened) < 3000:
        try:
            opened.append(socket.create_connection(address, timeout=5))
        except OSError:
            return


def _still_open_after(sockets: list[socket.socket], bound_s: float) -> int:
    """How many of ``sockets`` the peer has not closed (EOF or reset) within ``bound_s``.

    Each first sends a byte, as a client sends its first request: a connection the kernel
    completed just as the listening socket closed has no server end, and only learns so
    (a reset) when it sends.
    """
    selector = selectors.DefaultSelector()
    open_ones = set()
    for sock in sockets:
        try:
            sock.sendall(b"\0")
        except OSError:
            continue
        sock.setblocking(False)
        selector.register(sock, selectors.EVENT_READ)
        open_ones.add(sock)
    deadline = time.monotonic() + bound_s
    while open_ones and time.monotonic() < deadline:
        for key, _ in selector.select(max(deadline - time.monotonic(), 0)):
            sock = key.fileobj
            assert isinstance(sock, socket.socket)
            try:
                data = sock.recv(1)
            except BlockingIOError:
                continue
            except OSError:
                data = b""
            assert data == b"", "a broker spoke first on a connection"
            selector.unregister(sock)
            open_ones.discard(sock)
    selector.close()
    return len(open_ones)


@pytest.mark.parametrize("attempt", range(8))
def test_a_killed_broker_leaves_no_connection_open(attempt: int) -> None:
    """Connections arrive while the broker is killed: the ones accepted just before its
    listener closed reach it after it dropped its connections, and must be closed too."""
    with EmbeddedCluster(3) as cluster:
        victim = cluster.brokers[1]
        address = ("127.0.0.1", victim.port)
        opened: list[socket.socket] = []
        stop = threading.Event()
        threads = [threading.Thread(target=_connect_until_refused, args=(address, opened, stop))
                   for _ in range(CONNECTING_THREADS)]
        for thread in threads:
            thread.start()
        try:
            time.sleep(0.05)  # let connections stream in
            cluster.kill_broker(victim.node_id)
        finally:
            stop.set()
            for thread in threads:
                thread.join(30)
        try:
            assert opened, "no connection reached the broker before it was killed"
            assert _still_open_after(opened, CLOSE_BOUND_S) == 0
        finally:
            for sock in opened:
                sock.close()


def test_a_producer_moves_on_from_a_killed_leader_within_a_failover() -> None:
    """The demo's failover step: an idempotent acks=all stream, the leader of orders-0
    killed half-way; every record is acknowledged well within the request timeout."""
    config = {"default.replication.factor": "3", "min.insync.replicas": "2"}
    with EmbeddedCluster(3, config=config) as cluster:
        with AdminClient(bootstrap_servers=cluster.bootstrap_servers) as admin:
            admin.create_topics([NewTopic("orders", 6, 3)])
            victim = admin.describe_topics(["orders"])["orders"].partitions[0].leader
        with Producer(bootstrap_servers=cluster.bootstrap_servers, acks="all",
                      enable_idempotence=True, linger_ms=5, request_timeout_ms=30_000) as p:
            futures = []
            for i in range(20_000):
                futures.append(p.send("orders", b"order-%d" % i, key=b"customer-%d" % (i % 101)))
                if i == 10_000:
                    cluster.kill_broker(victim)
            for future in futures:
                future.get(CLOSE_BOUND_S)  # a request stuck on a dead connection fails this
