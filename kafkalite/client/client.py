"""The network client: one background I/O thread serving every broker connection.

User threads hand work to the I/O thread (:meth:`KafkaClient.send`, :meth:`call_soon`) and get
:class:`~kafkalite.client.future.Future` s back; the I/O thread runs a selector loop over the
connections, keeps metadata fresh (:mod:`kafkalite.client.metadata`) and calls poll hooks that
components such as the producer's sender register, so a producer needs one thread, not two.
The Producer, Consumer and AdminClient each own one :class:`KafkaClient`.
"""

from __future__ import annotations

import contextlib
import logging
import random
import selectors
import socket
import threading
import time
from collections import Counter, deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.connection import BrokerConnection, ConnectionState, Response
from kafkalite.client.failures import ConnectionFailures
from kafkalite.client.future import Future
from kafkalite.client.metadata import MetadataRefresher
from kafkalite.client.security import AUTHENTICATION_ERRORS, client_security
from kafkalite.client.settings import (
    IGNORED_CLIENT_DEFAULTS,
    SECURITY_DEFAULTS,
    check_security,
    socket_options,
)
from kafkalite.errors import (
    BrokerUnreachableError,
    ConfigError,
    KafkaConnectionError,
    KafkaError,
    KafkaTimeoutError,
)
from kafkalite.properties import unknown_config

_random = random.Random()
"""Not the global generator: that one is the application's (it may seed it)."""

log = logging.getLogger(__name__)

PollHook = Callable[[], float | None]
"""Runs on the I/O thread each loop; returns the monotonic time it next wants to run, or None."""

CLIENT_DEFAULTS: Mapping[str, Any] = {
    "bootstrap_servers": "localhost:9092",
    "client_id": "kafkalite",
    "request_timeout_ms": 30000,
    "metadata_max_age_ms": 300000,
    "retry_backoff_ms": 100,
    "reconnect_backoff_ms": 50,
    "reconnect_backoff_max_ms": 1000,
    "max_in_flight_requests_per_connection": 5,
    "allow_auto_create_topics": True,
    "receive_message_max_bytes": 100 * 1024 * 1024,
    "retry_backoff_max_ms": 1000,
    "connections_max_idle_ms": 540000,
    "send_buffer_bytes": None,
    "receive_buffer_bytes": None,
    "socket_options": ((socket.IPPROTO_TCP, socket.TCP_NODELAY, 1),),
    "metrics_enabled": True,
    **SECURITY_DEFAULTS,
    **IGNORED_CLIENT_DEFAULTS,
}
"""Client-level settings, kafka-python's names and the Java client's defaults.

The keys of :data:`~kafkalite.client.settings.IGNORED_CLIENT_DEFAULTS` are accepted so that
kafka-python programs run unchanged, and have no effect (each with its documented reason).
"""

_MAX_IDLE_WAIT = 1.0


def parse_bootstrap_servers(value: str | Iterable[str]) -> list[tuple[str, int]]:
    """``"host:port,host:port"`` or a list of ``"host:port"`` into (host, port) pairs.

    The port defaults to 9092; IPv6 literals are written ``[::1]:9092``.
    """
    items = value.split(",") if isinstance(value, str) else list(value)
    servers = []
    for raw in items:
        item = raw.strip()
        if not item:
            continue
        host, sep, port = item.rpartition(":")
        if not sep or (host.endswith(":") and not host.startswith("[")):
            host, port = item, "9092"
        host = host.strip("[]")
        if not host or not port.isdigit() or not 0 < int(port) < 65536:
            raise ConfigError("bootstrap_servers", f"{item!r} is not host:port")
        servers.append((host, int(port)))
    if not servers:
        raise ConfigError("bootstrap_servers", "no broker address given")
    return servers


def validate_client_config(config: Mapping[str, Any]) -> dict[str, Any]:
    """``config`` merged over :data:`CLIENT_DEFAULTS`; unknown keys raise ConfigError."""
    for key in config:
        if key not in CLIENT_DEFAULTS:
            raise unknown_config(key, CLIENT_DEFAULTS, "client config")
    merged = {**CLIENT_DEFAULTS, **config}
    for key in ("request_timeout_ms", "metadata_max_age_ms", "retry_backoff_ms",
                "reconnect_backoff_ms", "reconnect_backoff_max_ms",
                "max_in_flight_requests_per_connection", "receive_message_max_bytes",
                "retry_backoff_max_ms", "connections_max_idle_ms"):
        value = merged[key]
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ConfigError(key, f"must be a non-negative integer, not {value!r}")
    for key in ("send_buffer_bytes", "receive_buffer_bytes"):
        value = merged[key]
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)
                                  or value < 1):
            raise ConfigError(key, f"must be a positive integer or None, not {value!r}")
    if not isinstance(merged["metrics_enabled"], bool):
        raise ConfigError("metrics_enabled", f"must be True or False, not "
                          f"{merged['metrics_enabled']!r}")
    socket_options(merged)  # checks the entries' shape
    check_security(merged)
    if merged["max_in_flight_requests_per_connection"] < 1:
        raise ConfigError("max_in_flight_requests_per_connection", "must be at least 1")
    if merged["client_id"] is not None and not isinstance(merged["client_id"], str):
        raise ConfigError("client_id", "must be a string")
    parse_bootstrap_servers(merged["bootstrap_servers"])
    return merged


class KafkaClient:
    """Connections by node id, request routing, metadata refresh; see the module docstring.

    Methods marked "I/O thread" must only be called from the I/O thread (poll hooks and
    future callbacks run there); the others are safe from any thread.
    """

    def __init__(self, **config: Any) -> None:
        self.config = validate_client_config(config)
        self._bootstrap = parse_bootstrap_servers(self.config["bootstrap_servers"])
        self._socket_options = socket_options(self.config)
        self._security = client_security(self.config)
        self.request_counts: Counter[int] = Counter()
        """Requests sent to any broker, by api key (``metrics()`` reads it)."""
        self.started_at = time.monotonic()
        self.cluster = ClusterMetadata()
        self.metadata = MetadataRefresher(
            self,
            self.cluster,
            metadata_max_age_ms=self.config["metadata_max_age_ms"],
            retry_backoff_ms=self.config["retry_backoff_ms"],
            retry_backoff_max_ms=self.config["retry_backoff_max_ms"],
            allow_auto_topic_creation=self.config["allow_auto_create_topics"],
        )
        self._selector = selectors.DefaultSelector()
        self._wake_reader, self._wake_writer = socket.socketpair()
        self._wake_reader.setblocking(False)
        self._wake_writer.setblocking(False)
        self._selector.register(self._wake_reader, selectors.EVENT_READ, None)
        self._wakeup_pending = False
        self._tasks: deque[Callable[[], None]] = deque()
        self._hooks: list[PollHook] = []
        self.ready_listeners: list[Callable[[BrokerConnection], None]] = []
        """Called on the I/O thread each time a connection finishes version negotiation."""
        self._connections: dict[int, BrokerConnection] = {}
        self._unflushed: set[BrokerConnection] = set()
        """Connections with requests queued this loop round, written before the select."""
        self._failures: dict[int, int] = {}
        self.connection_failures = ConnectionFailures()
        """The last error of each broker address failing to connect (see timeout_error)."""
        self._ever_ready = False
        self._first_failure_at: float | None = None
        self._backoff_until: dict[int, float] = {}
        self._closed = False
        self._thread = threading.Thread(target=self._run, name="kafkalite-io", daemon=True)

    def start(self) -> None:
        """Start the I/O thread (once); register hooks and listeners before, to miss nothing."""
        if not self._thread.is_alive() and not self._closed:
            self._thread.start()

    # -- any thread ------------------------------------------------------------------------

    def in_io_thread(self) -> bool:
        return threading.current_thread() is self._thread

    def wakeup(self) -> None:
        """Interrupt the selector wait so the loop looks at new work (coalesced)."""
        if self._wakeup_pending or self.in_io_thread():
            return
        self._wakeup_pending = True
        with contextlib.suppress(OSError):  # a full pipe already means "wake up"
            self._wake_writer.send(b"\0")

    def call_soon(self, task: Callable[[], None]) -> None:
        """Run ``task`` on the I/O thread (now, if called from it)."""
        if self.in_io_thread():
            task()
            return
        if self._closed:
            raise KafkaError("the client is closed")
        self._tasks.append(task)
        self.start()
        self.wakeup()

    def send(self, node_id: int, api_key: int, body: Mapping[str, Any], *,
             expect_response: bool = True) -> Future[Response]:
        """Send a request to ``node_id`` (connecting if needed); the future gets the body."""
        future: Future[Response] = Future()

        def dispatch() -> None:
            try:
                result = self._connection_for(node_id).send(
                    api_key, body, expect_response=expect_response)
            except KafkaError as exc:
                future.failure(exc)
                return
            result.add_callback(future.success)
            result.add_errback(future.failure)

        self.call_soon(dispatch)
        return future

    def timeout_error(self, message: str) -> KafkaTimeoutError:
        """The error for a wait that timed out, naming the cause when connections failed.

        Addresses that failed to connect and have not connected since are named with their
        last error ("connection refused at localhost:39099"); when no connection is ready
        at all the error is a :class:`~kafkalite.errors.BrokerUnreachableError`. Without
        connection failures it is a plain KafkaTimeoutError with ``message``.
        """
        trouble = self.connection_failures.describe()
        if trouble is None:
            return KafkaTimeoutError(message)
        kind = BrokerUnreachableError if self.ready_connection_count() == 0 \
            else KafkaTimeoutError
        error = kind(f"{message}: {trouble}")
        error.__cause__ = self.connection_failures.last_error()
        return error

    def unreachable_since(self) -> float | None:
        """When (monotonic) the first connection attempt failed, if no connection has ever
        become ready; None once one has, or before anything failed."""
        return None if self._ever_ready else self._first_failure_at

    def add_poll_hook(self, hook: PollHook) -> None:
        if self._thread.is_alive():
            self.call_soon(lambda: self._hooks.append(hook))
        else:
            self._hooks.append(hook)

    def remove_poll_hook(self, hook: PollHook) -> None:
        self.call_soon(lambda: self._hooks.remove(hook))

    def close(self, timeout: float | None = 5.0) -> None:
        """Close every connection (pending requests fail) and stop the I/O thread."""
        if self._closed:
            return
        self._closed = True
        if not self._thread.is_alive():
            self._shutdown()
            return
        self.wakeup()
        if not self.in_io_thread():
            self._thread.join(timeout)

    # -- I/O thread ------------------------------------------------------------------------

    def _address(self, node_id: int) -> tuple[str, int]:
        if node_id < 0:
            return self._bootstrap[-node_id - 1]
        broker = self.cluster.broker(node_id)
        if broker is None:
            raise KafkaConnectionError(f"node {node_id} is not in the cluster metadata")
        return broker.host, broker.port

    def _connection_for(self, node_id: int) -> BrokerConnection:
        conn = self._connections.get(node_id)
        host, port = self._address(node_id)
        if conn is not None and (conn.host, conn.port) != (host, port):
            conn.close(KafkaConnectionError(f"node {node_id} moved to {host}:{port}"))
            conn = None
        if conn is None:
            conn = BrokerConnection(
                node_id, host, port,
                client_id=self.config["client_id"],
                request_timeout_ms=self.config["request_timeout_ms"],
                max_frame_bytes=self.config["receive_message_max_bytes"],
                socket_options=self._socket_options,
                request_counts=self.request_counts,
                selector=self._selector,
                security=self._security,
            )
            conn.on_state_change = self._on_state_change
            conn.on_output = self._unflushed.add
            self._connections[node_id] = conn
        if conn.state is ConnectionState.DISCONNECTED:
            conn.connect()
        return conn

    def _on_state_change(self, conn: BrokerConnection) -> None:
        if conn.state is ConnectionState.READY:
            self.connection_failures.connected(conn.address)
            self._ever_ready = True
            self.metadata.authentication_failed(None)
            self._failures.pop(conn.node_id, None)
            self._backoff_until.pop(conn.node_id, None)
            for listener in self.ready_listeners:
                listener(conn)
        elif conn.state is ConnectionState.DISCONNECTED and not self._closed:
            if isinstance(conn.last_error, AUTHENTICATION_ERRORS):
                self.metadata.authentication_failed(conn.last_error)
            if conn.setup_failed and conn.last_error is not None:
                self.connection_failures.failed(conn.address, conn.last_error)
                if self._first_failure_at is None:
                    self._first_failure_at = time.monotonic()
            failures = self._failures.get(conn.node_id, 0) + 1
            self._failures[conn.node_id] = failures
            base = self.config["reconnect_backoff_ms"] * 2 ** min(failures - 1, 16)
            delay = min(base, self.config["reconnect_backoff_max_ms"]) / 1000
            self._backoff_until[conn.node_id] = time.monotonic() + delay * _random.uniform(0.8, 1.2)
            self.cluster.request_update()

    def is_connecting_blocked(self, node_id: int) -> bool:
        """I/O thread: the node failed recently and is in reconnect backoff."""
        return time.monotonic() < self._backoff_until.get(node_id, 0.0)

    def ready(self, node_id: int) -> bool:
        """I/O thread: True when a request can go to ``node_id`` now; else start connecting."""
        conn = self._connections.get(node_id)
        if conn is not None and conn.is_ready():
            return conn.in_flight_count < self.config["max_in_flight_requests_per_connection"]
        if self.is_connecting_blocked(node_id):
            return False
        try:
            self._connection_for(node_id)
        except KafkaError as exc:
            log.debug("cannot connect to node %s: %s", node_id, exc)
        return False

    def ready_connection_count(self) -> int:
        return sum(1 for conn in list(self._connections.values()) if conn.is_ready())

    def in_flight_request_count(self) -> int:
        """Requests sent and not answered yet, over every connection (for ``metrics()``)."""
        return sum(conn.in_flight_count for conn in list(self._connections.values()))

    def connection(self, node_id: int) -> BrokerConnection | None:
        return self._connections.get(node_id)

    def api_version(self, node_id: int, api_key: int) -> int:
        """I/O thread: the version negotiated with a READY node."""
        return self._connections[node_id].api_version(api_key)

    def least_loaded_node(self) -> int | None:
        """I/O thread: a ready node with the fewest requests in flight, else one to connect to.

        Brokers from metadata come first; the bootstrap addresses are the fallback.
        """
        candidates = [b.node_id for b in self.cluster.brokers()]
        _random.shuffle(candidates)
        candidates += [-i - 1 for i in range(len(self._bootstrap))]
        best, best_load = None, None
        for node in candidates:
            conn = self._connections.get(node)
            if conn is not None and conn.is_ready():
                load = conn.in_flight_count
                if best_load is None or load < best_load:
                    best, best_load = node, load
        if best is not None:
            return best
        for node in candidates:
            conn = self._connections.get(node)
            if conn is not None and conn.state is not ConnectionState.DISCONNECTED:
                return node  # already connecting
        for node in candidates:
            if not self.is_connecting_blocked(node):
                return node
        return None

    def _run(self) -> None:
        try:
            while not self._closed:
                self._poll_once()
        except Exception:
            log.exception("kafkalite I/O thread crashed")
        finally:
            self._shutdown()

    def _poll_once(self) -> None:
        while self._tasks:
            task = self._tasks.popleft()
            try:
                task()
            except Exception:
                log.exception("I/O task %r failed", task)
        wake_at: list[float] = []
        for conn in list(self._connections.values()):
            deadline = conn.check_timeouts()
            if deadline is not None:
                wake_at.append(deadline)
        idle_check = self._close_idle_connections()
        if idle_check is not None:
            wake_at.append(idle_check)
        refresh_at = self.metadata.maybe_refresh()
        if refresh_at is not None:
            wake_at.append(refresh_at)
        for hook in list(self._hooks):
            try:
                at = hook()
            except Exception:
                log.exception("poll hook %r failed", hook)
                at = None
            if at is not None:
                wake_at.append(at)
        self._flush_output()
        if self._tasks:
            timeout = 0.0
        else:
            timeout = min(max(min(wake_at, default=0) - time.monotonic(), 0.0), _MAX_IDLE_WAIT) \
                if wake_at else _MAX_IDLE_WAIT
        for key, mask in self._selector.select(timeout):
            conn = key.data
            if conn is None:
                self._drain_wakeups()
                continue
            if mask & selectors.EVENT_WRITE:
                conn.handle_write()
            if mask & selectors.EVENT_READ:
                conn.handle_read()

    def _flush_output(self) -> None:
        """One write per connection for all the requests queued since the last one."""
        while self._unflushed:
            self._unflushed.pop().flush_output()

    def _close_idle_connections(self) -> float | None:
        """Close connections unused for ``connections_max_idle_ms`` (as brokers do, but first,
        so a request never races the broker's close); the next request reconnects. Returns
        when the next connection could become idle."""
        idle = self.config["connections_max_idle_ms"] / 1000
        if not idle:
            return None
        now = time.monotonic()
        next_check = None
        for node_id, conn in list(self._connections.items()):
            if not conn.is_ready() or conn.in_flight_count:
                continue
            idle_at = conn.last_activity + idle
            if now >= idle_at:
                conn.on_state_change = None  # an idle close is not a failure: no backoff
                del self._connections[node_id]
                conn.close()
                log.debug("closed idle connection to node %s", node_id)
            elif next_check is None or idle_at < next_check:
                next_check = idle_at
        return next_check

    def _drain_wakeups(self) -> None:
        # One read: wakeups are coalesced to a byte or so, and a leftover byte only makes
        # the next select return at once. Reading until EAGAIN cost a second socket call,
        # and each one hands the GIL over to a busy application thread.
        with contextlib.suppress(OSError):
            self._wake_reader.recv(4096)
        self._wakeup_pending = False  # after draining: a racing wakeup's task still runs next

    def _shutdown(self) -> None:
        self._closed = True
        while self._tasks:  # requests queued after the last loop fail below, not hang
            try:
                self._tasks.popleft()()
            except Exception:
                log.debug("task failed during shutdown", exc_info=True)
        self._flush_output()  # what the last tasks sent still leaves, as it did at once
        error = KafkaError("the client is closed")
        for conn in list(self._connections.values()):
            conn.close(error)
        self._selector.close()
        self._wake_reader.close()
        self._wake_writer.close()
