"""Broker fixtures shared by the whole suite.

- ``cluster``: a function-scoped one-broker EmbeddedCluster with test-friendly settings;
  ``cluster_factory(num_brokers=1, data_dir=None, **settings)`` for other shapes.
- ``broker_process``: a real ``python -m kafkalite_server start --port 0`` subprocess in
  a tmp dir with ``.bootstrap_servers``, ``.data_dir``, ``.kill()``, ``.terminate()``,
  ``.restart()``.
- ``wire``: ``wire(bootstrap) -> WireClient``, a tiny synchronous raw-protocol client.
- ``make_batch(values, ...)``: a v2 record batch built by kafka-python (an independent
  implementation), and ``read_records(data)`` to decode fetched bytes the same way.
"""

from __future__ import annotations

import os
import resource
import signal
import socket
import struct
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite.protocol import ApiKey, decode_response, encode_request
from kafkalite.protocol.errors import CoordinatorNotAvailableError
from kafkalite_server import EmbeddedCluster
from tests.cluster.zookeeper_server import ZooKeeperServer, zookeeper_available

REPO_ROOT = Path(__file__).resolve().parent.parent

TEST_BROKER_CONFIG: dict[str, str] = {
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "4",
}
"""Settings every test broker gets: no rebalance delay, a small offsets topic."""


# ------------------------------------------------------------------ ZooKeeper


@pytest.fixture(scope="module")
def zookeeper(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ZooKeeperServer]:
    """A real ZooKeeper server (Debian's package) on a free loopback port, one per test
    module; each test works under its own :func:`chroot`."""
    if not zookeeper_available():
        pytest.fail("Debian's zookeeper package and java are needed (.ci/run installs them)")
    server = ZooKeeperServer(tmp_path_factory.mktemp("zookeeper")).start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def chroot(request: pytest.FixtureRequest) -> str:
    """A fresh chroot per test, so tests sharing a server never see each other's nodes."""
    return "/" + "".join(c if c.isalnum() else "_" for c in request.node.name)[:80]


@pytest.fixture
def broker_process_type() -> type[BrokerProcess]:
    """The ``BrokerProcess`` helper, for test modules that cannot import this conftest."""
    return BrokerProcess


# ------------------------------------------------------------------ embedded clusters


@pytest.fixture
def cluster_factory() -> Iterator[Callable[..., EmbeddedCluster]]:
    started: list[EmbeddedCluster] = []

    def make(num_brokers: int = 1, data_dir: str | Path | None = None,
             **settings: str) -> EmbeddedCluster:
        config = {**TEST_BROKER_CONFIG, **{k.replace("_", "."): v for k, v in settings.items()}}
        cluster = EmbeddedCluster(num_brokers, data_dir=data_dir, config=config).start()
        started.append(cluster)
        return cluster

    yield make
    for cluster in started:
        cluster.stop()


@pytest.fixture
def cluster(cluster_factory: Callable[..., EmbeddedCluster]) -> EmbeddedCluster:
    return cluster_factory()


# ------------------------------------------------------------------ broker subprocess


class BrokerProcess:
    """``python -m kafkalite_server start`` on a free port, restartable on its data dir."""

    def __init__(self, data_dir: Path, extra_args: list[str] | None = None, *,
                 open_files_limit: int | None = None) -> None:
        """``open_files_limit``: the process's RLIMIT_NOFILE, soft and hard (it cannot
        raise it)."""
        self.data_dir = data_dir
        self.extra_args = extra_args or []
        self.open_files_limit = open_files_limit
        self.process: subprocess.Popen[str] | None = None
        self.port = 0
        self.output: list[str] = []

    @property
    def bootstrap_servers(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self, timeout: float = 30.0) -> BrokerProcess:
        """Start and wait for ``listening on``. The broker's log goes to :attr:`log_path`, not
        a pipe: a long or noisy test would fill an unread pipe and block the broker."""
        args = [sys.executable, "-m", "kafkalite_server", "start", "--data-dir",
                str(self.data_dir), "--port", str(self.port), *TEST_SET_ARGS, *self.extra_args]
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        limit = self.open_files_limit
        with self.log_path.open("a") as log_file:
            self.process = subprocess.Popen(
                args, stdout=subprocess.PIPE, stderr=log_file, text=True, env=env,
                preexec_fn=None if limit is None else lambda: resource.setrlimit(
                    resource.RLIMIT_NOFILE, (limit, limit)))
        deadline = time.monotonic() + timeout
        assert self.process.stdout is not None
        while time.monotonic() < deadline:
            line = self.process.stdout.readline()
            if not line:
                break
            self.output.append(line)
            if line.startswith("listening on "):
                address = line.split()[2]
                self.port = int(address.rsplit(":", 1)[1])
                threading.Thread(target=self._drain_stdout, args=(self.process.stdout,),
                                 daemon=True).start()
                return self
        self.process.kill()
        self.process.communicate()
        raise RuntimeError(f"broker did not start: {''.join(self.output)}{self.log_text()}")

    @property
    def log_path(self) -> Path:
        return self.data_dir.with_name(self.data_dir.name + "-broker.log")

    def log_text(self) -> str:
        """Everything the broker logged (stderr) across its starts."""
        return self.log_path.read_text() if self.log_path.exists() else ""

    def _drain_stdout(self, stdout: Any) -> None:
        for line in stdout:
            self.output.append(line)

    def terminate(self, timeout: float = 30.0) -> int:
        """SIGTERM (clean shutdown); returns the exit code."""
        return self._stop(signal.SIGTERM, timeout)

    def kill(self) -> int:
        """SIGKILL: no clean shutdown, the next start must recover."""
        return self._stop(signal.SIGKILL, 30.0)

    def _stop(self, signum: int, timeout: float) -> int:
        if self.process is None:
            return 0
        process, self.process = self.process, None
        if process.poll() is None:
            process.send_signal(signum)
        try:
            process.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            process.kill()
            process.communicate()
        return process.returncode

    def restart(self) -> BrokerProcess:
        """Terminates if running, then starts again on the same data dir and port."""
        self.terminate()
        return self.start()


TEST_SET_ARGS = [arg for key, value in TEST_BROKER_CONFIG.items()
                 for arg in ("--set", f"{key}={value}")]


@pytest.fixture
def broker_process(tmp_path: Path) -> Iterator[BrokerProcess]:
    broker = BrokerProcess(tmp_path / "data").start()
    yield broker
    broker.kill()


@pytest.fixture
def broker_process_factory(tmp_path: Path) -> Iterator[Callable[..., BrokerProcess]]:
    """``make(open_files_limit=None)``: a started ``BrokerProcess`` in a tmp dir, killed at
    the end of the test."""
    started: list[BrokerProcess] = []

    def make(open_files_limit: int | None = None) -> BrokerProcess:
        broker = BrokerProcess(tmp_path / f"data-{len(started)}",
                               open_files_limit=open_files_limit).start()
        started.append(broker)
        return broker

    yield make
    for broker in started:
        broker.kill()


# ------------------------------------------------------------------ raw protocol client


class WireClient:
    """One socket speaking the Kafka protocol synchronously, for broker tests."""

    def __init__(self, bootstrap: str, timeout: float = 15.0) -> None:
        host, port = bootstrap.split(",")[0].rsplit(":", 1)
        self.sock = socket.create_connection((host, int(port)), timeout=timeout)
        self._next_correlation = 1

    def send(self, api_key: int, version: int, body: dict[str, Any]) -> int:
        correlation_id = self._next_correlation
        self._next_correlation += 1
        self.sock.sendall(encode_request(api_key, version, correlation_id, "wire-test", body))
        return correlation_id

    def send_raw(self, frame: bytes) -> None:
        self.sock.sendall(frame)

    def receive_frame(self) -> bytes:
        size = struct.unpack(">i", self._read_exactly(4))[0]
        return self._read_exactly(size)

    def receive(self, api_key: int, version: int) -> tuple[int, dict[str, Any]]:
        return decode_response(api_key, version, self.receive_frame())

    def call(self, api_key: int, version: int, body: dict[str, Any]) -> dict[str, Any]:
        correlation_id = self.send(api_key, version, body)
        received, response = self.receive(api_key, version)
        assert received == correlation_id
        return response

    def find_coordinator(self, key: str, key_type: int = 0, version: int = 1
                         ) -> dict[str, Any]:
        """FindCoordinator (v0-3), asked again while the answer is COORDINATOR_NOT_AVAILABLE
        (at most 20 s), as clients do: the first request creates the internal topic, whose
        leaders the controller elects a moment later."""
        body = {"key": key, "key_type": key_type}
        for _attempt in range(200):
            found = self.call(ApiKey.FIND_COORDINATOR, version, body)
            if found["error_code"] != CoordinatorNotAvailableError.errno:
                break
            time.sleep(0.1)
        return found

    def is_closed_by_peer(self) -> bool:
        """True when the broker closed the connection (EOF or reset within the timeout)."""
        try:
            return self.sock.recv(1) == b""
        except ConnectionResetError:
            return True

    def _read_exactly(self, size: int) -> bytes:
        data = bytearray()
        while len(data) < size:
            chunk = self.sock.recv(size - len(data))
            if not chunk:
                raise ConnectionError("broker closed the connection")
            data += chunk
        return bytes(data)

    def close(self) -> None:
        self.sock.close()


@pytest.fixture
def wire() -> Iterator[Callable[[str], WireClient]]:
    clients: list[WireClient] = []

    def connect(bootstrap: str) -> WireClient:
        client = WireClient(bootstrap)
        clients.append(client)
        return client

    yield connect
    for client in clients:
        client.close()


# ------------------------------------------------------------------ record batches


def build_batch(values: list[bytes], *, keys: list[bytes | None] | None = None,
               timestamps: list[int] | None = None, producer_id: int = -1,
               producer_epoch: int = -1, base_sequence: int = -1) -> bytes:
    """A v2 record batch (base offset 0) built by kafka-python."""
    from kafka.record.default_records import DefaultRecordBatchBuilder

    builder = DefaultRecordBatchBuilder(
        magic=2, compression_type=0, is_transactional=False, producer_id=producer_id,
        producer_epoch=producer_epoch, base_sequence=base_sequence, batch_size=1 << 30)
    for i, value in enumerate(values):
        builder.append(i, timestamp=timestamps[i] if timestamps else None,
                       key=keys[i] if keys else None, value=value, headers=[])
    return bytes(builder.build())


def decode_records(data: bytes) -> list[tuple[int, bytes | None, bytes | None, int]]:
    """(offset, key, value, timestamp) of every record in fetched bytes, via kafka-python."""
    from kafka.record import MemoryRecords

    records = MemoryRecords(bytes(data))
    out = []
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        out.extend((r.offset, r.key, r.value, r.timestamp) for r in batch)
    return out


@pytest.fixture(name="make_batch")
def make_batch_fixture() -> Callable[..., bytes]:
    return build_batch


@pytest.fixture(name="read_records")
def read_records_fixture() -> Callable[[bytes], list[tuple[int, bytes | None, bytes | None, int]]]:
    return decode_records
