"""A fault-injection cluster: 3 or 5 ``kafkalite-server`` processes on loopback over a real
ZooKeeper (Debian's package, started by ``tests/cluster/zookeeper_server.py``), with every
broker-broker and broker-ZooKeeper link running through a :class:`~proxy.LinkProxy`.

Each broker gets two listeners when the broker supports them (``listeners``,
``advertised.listeners``, ``inter.broker.listener.name``): ``CLIENT`` on its own port,
which clients reach directly, and ``INTERNAL``, advertised at the proxy's port, which the
other brokers use. A broker without separate listeners advertises the proxy's port for
everything; clients then cross the proxy too, where they are recognised and never faulted.
Each broker's ``zookeeper.connect`` names its own proxy port, so its ZooKeeper link can be
cut alone.

Process faults: :meth:`FaultCluster.kill` (SIGKILL), :meth:`pause`/:meth:`resume`
(SIGSTOP/SIGCONT), :meth:`stop` (SIGTERM, a clean stop), :meth:`start` (again on the same
data dir and ports). Disk faults: :meth:`tear_tail`. Observation goes straight to
ZooKeeper (not through the proxy): the controller, each partition's leader, epoch and ISR.
"""

from __future__ import annotations

import functools
import json
import os
import random
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

import polling
from kazoo.exceptions import KazooException
from proxy import LinkProxy, broker_source

REPO_ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(REPO_ROOT / "tests" / "cluster"))
from zookeeper_server import (  # noqa: E402
    ZooKeeperServer,
    chrooted_client,
    zookeeper_available,
)

__all__ = ["FaultCluster", "ZooKeeperServer", "until", "zookeeper_available"]

SESSION_MS = 3000
"""ZooKeeper session timeout of the brokers: a dead or cut broker is noticed in seconds."""
START_TIMEOUT_S = 60.0
BASE_CONFIG: dict[str, str] = {
    "zookeeper.session.timeout.ms": str(SESSION_MS),
    "zookeeper.connection.timeout.ms": "20000",
    "controlled.shutdown.retry.backoff.ms": "200",
    "replica.lag.time.max.ms": "2000",
    "replica.fetch.wait.max.ms": "200",
    "replica.fetch.backoff.ms": "200",
    "replica.socket.timeout.ms": "3000",
    "controller.socket.timeout.ms": "3000",
    "replica.high.watermark.checkpoint.interval.ms": "500",
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "2",
    "group.initial.rebalance.delay.ms": "0",
    "group.min.session.timeout.ms": "1000",
    "auto.leader.rebalance.enable": "false",
    "auto.create.topics.enable": "false",
}
"""Durable settings (RF=3, min.insync.replicas=2, unclean election off) with short timers."""

until = functools.partial(polling.until, tolerate=(
    OSError, KeyError, LookupError, ValueError, AssertionError, KazooException))
"""Polls a condition until it returns something true; fails naming what it waited for."""


def _separate_listeners() -> bool:
    from kafkalite_server.config import BROKER_CONFIG_KEYS
    return "inter.broker.listener.name" in BROKER_CONFIG_KEYS


def _read_exactly(sock: socket.socket, size: int) -> bytes:
    data = bytearray()
    while len(data) < size:
        chunk = sock.recv(size - len(data))
        if not chunk:
            raise ConnectionError("the broker closed the connection")
        data += chunk
    return bytes(data)


def _held_port(held: list[socket.socket]) -> int:
    """A free loopback port, kept bound (in ``held``) until the caller releases it."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    held.append(sock)
    return int(sock.getsockname()[1])


class BrokerNode:
    """One ``python -m kafkalite_server start`` process on fixed ports, restartable."""

    def __init__(self, broker_id: int, data_dir: Path, args: list[str]) -> None:
        self.broker_id = broker_id
        self.data_dir = data_dir
        self.args = args
        self.process: subprocess.Popen[str] | None = None
        self.paused = False
        self.starts = 0

    @property
    def log_path(self) -> Path:
        return self.data_dir.with_name(self.data_dir.name + ".log")

    @property
    def running(self) -> bool:
        return self.process is not None and self.process.poll() is None

    def start(self) -> None:
        env = {**os.environ, "PYTHONPATH": os.pathsep.join(
            filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
        command = [sys.executable, "-m", "kafkalite_server", "start",
                   "--data-dir", str(self.data_dir), *self.args]
        with self.log_path.open("a") as log_file:
            log_file.write(f"---- start {self.starts} at {time.time():.3f}\n")
            log_file.flush()
            self.process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=log_file,
                                            text=True, env=env)
        self.starts += 1
        self.paused = False
        ready = threading.Event()
        threading.Thread(target=self._drain, args=(self.process, ready), daemon=True).start()
        if not ready.wait(START_TIMEOUT_S) or not self.running:
            self.signal(signal.SIGKILL)
            raise RuntimeError(f"broker {self.broker_id} did not start: "
                               f"{self.log_path.read_text()[-3000:]}")

    @staticmethod
    def _drain(process: subprocess.Popen[str], ready: threading.Event) -> None:
        assert process.stdout is not None
        for line in process.stdout:
            if line.startswith("listening on "):
                ready.set()
        ready.set()

    def signal(self, signum: int) -> None:
        if self.process is None:
            return
        if signum in (signal.SIGKILL, signal.SIGTERM) and self.paused:
            self.process.send_signal(signal.SIGCONT)
        if self.process.poll() is None:
            self.process.send_signal(signum)
        if signum in (signal.SIGKILL, signal.SIGTERM):
            try:
                self.process.wait(30 if signum == signal.SIGTERM else 10)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)
            self.process = None
        self.paused = signum == signal.SIGSTOP


class FaultCluster:
    def __init__(self, root: Path, zookeeper: ZooKeeperServer, *, brokers: int = 3,
                 chroot: str = "/kafkalite", config: Mapping[str, str] | None = None) -> None:
        self.root = root
        root.mkdir(parents=True, exist_ok=True)
        self.zookeeper = zookeeper
        self.chroot = chroot
        self.ids = list(range(1, brokers + 1))
        self.config = {**BASE_CONFIG, **(config or {})}
        self.proxy = LinkProxy().start()
        self.client_ports: dict[int, int] = {}
        self.nodes: dict[int, BrokerNode] = {}
        separate = _separate_listeners()
        # The brokers' ports stay bound here until every proxy port is taken: a port only
        # picked, not held, can be handed to the proxy too, and that broker cannot start.
        held: list[socket.socket] = []
        for broker_id in self.ids:
            client_port = _held_port(held)
            internal_port = _held_port(held) if separate else client_port
            advertised = self.proxy.listen(internal_port, f"b{broker_id}", broker_source)
            zk_port = self.proxy.listen(zookeeper.port, "zk", f"b{broker_id}")
            settings = {**self.config, "broker.id": str(broker_id),
                        "zookeeper.connect": f"127.0.0.1:{zk_port}{chroot}"}
            if separate:
                settings.update({
                    "listeners": f"CLIENT://127.0.0.1:{client_port},"
                                 f"INTERNAL://127.0.0.1:{internal_port}",
                    "advertised.listeners": f"CLIENT://127.0.0.1:{client_port},"
                                            f"INTERNAL://127.0.0.1:{advertised}",
                    "listener.security.protocol.map": "CLIENT:PLAINTEXT,INTERNAL:PLAINTEXT",
                    "inter.broker.listener.name": "INTERNAL"})
                args = []
            else:
                settings["advertised.port"] = str(advertised)
                args = ["--host", "127.0.0.1", "--port", str(client_port)]
            for key, value in settings.items():
                args += ["--set", f"{key}={value}"]
            self.client_ports[broker_id] = client_port
            self.nodes[broker_id] = BrokerNode(broker_id, root / f"broker-{broker_id}", args)
        for sock in held:
            sock.close()
        self.zk = chrooted_client(zookeeper.connect + chroot, timeout_s=15)

    # ------------------------------------------------------------------ lifecycle

    def start_all(self) -> FaultCluster:
        for broker_id in self.ids:
            self.start(broker_id)
        until(lambda: len(self.zk.get_children("/brokers/ids")) == len(self.ids),
              "every broker registered")
        until(lambda: self.controller() in self.ids, "a controller")
        return self

    def close(self) -> None:
        for node in self.nodes.values():
            node.signal(signal.SIGKILL)
        self.proxy.stop()
        self.zk.stop()
        self.zk.close()

    def __enter__(self) -> FaultCluster:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def bootstrap(self) -> str:
        return ",".join(f"127.0.0.1:{self.client_ports[b]}" for b in self.ids)

    def running(self) -> list[int]:
        return [b for b, node in self.nodes.items() if node.running and not node.paused]

    # ------------------------------------------------------------------ process faults

    def start(self, broker_id: int) -> None:
        """Starts the broker once ZooKeeper has dropped its previous session (a broker id
        still registered cannot start)."""
        until(lambda: not self.zk.exists(f"/brokers/ids/{broker_id}"),
              f"broker {broker_id}'s old session to expire", 4 * SESSION_MS / 1000 + 10)
        self.nodes[broker_id].start()

    def kill(self, broker_id: int) -> None:
        self.nodes[broker_id].signal(signal.SIGKILL)

    def stop(self, broker_id: int) -> None:
        self.nodes[broker_id].signal(signal.SIGTERM)

    def pause(self, broker_id: int) -> None:
        self.nodes[broker_id].signal(signal.SIGSTOP)

    def resume(self, broker_id: int) -> None:
        self.nodes[broker_id].signal(signal.SIGCONT)

    def restart(self, broker_id: int) -> None:
        if self.nodes[broker_id].running:
            self.kill(broker_id)
        self.start(broker_id)

    # ------------------------------------------------------------------ network faults

    def links_between(self, group: Iterable[int], others: Iterable[int]
                      ) -> list[tuple[str, str]]:
        """Both directions of every broker link between the two groups."""
        others = list(others)
        return [link for a in group for b in others if a != b
                for link in ((f"b{a}", f"b{b}"), (f"b{b}", f"b{a}"))]

    def isolate(self, group: Iterable[int], others: Iterable[int] | None = None) -> None:
        group = list(group)
        others = [b for b in self.ids if b not in group] if others is None else list(others)
        self.proxy.cut(self.links_between(group, others))

    def cut_zookeeper(self, broker_id: int) -> None:
        self.proxy.cut([(f"b{broker_id}", "zk")])
        self.proxy.reset([(f"b{broker_id}", "zk")])

    def heal(self) -> None:
        self.proxy.heal()

    def restart_zookeeper(self, down_s: float) -> None:
        """Stops the ZooKeeper server, waits ``down_s``, starts it again on the same port
        and data: sessions whose clients reconnect within their timeout survive."""
        self.zookeeper.stop()
        time.sleep(down_s)
        self.zookeeper.start()

    # ------------------------------------------------------------------ disk faults

    def segments(self, broker_id: int, topic: str, partition: int) -> list[Path]:
        directory = self.nodes[broker_id].data_dir / f"{topic}-{partition}"
        return sorted(directory.glob("*.log"))

    def tear_tail(self, broker_id: int, topic: str, partition: int, rng: random.Random
                  ) -> str:
        """On a stopped broker: cut the active segment at a random byte of its last quarter,
        then maybe append garbage. Returns what was done."""
        assert not self.nodes[broker_id].running, "tear the tail of a stopped broker only"
        segments = self.segments(broker_id, topic, partition)
        if not segments or segments[-1].stat().st_size == 0:
            return "empty"
        active = segments[-1]
        size = active.stat().st_size
        cut = rng.randint(size * 3 // 4, size - 1)
        with active.open("r+b") as file:
            file.truncate(cut)
            garbage = rng.random() < 0.5
            if garbage:
                file.seek(cut)
                file.write(rng.randbytes(rng.randint(1, 200)))
        return f"{active.name}: {size} -> {cut} bytes" + (" + garbage" if garbage else "")

    # ------------------------------------------------------------------ observation

    def controller(self) -> int:
        data, _ = self.zk.get("/controller")
        return int(json.loads(data)["brokerid"])

    def state(self, topic: str, partition: int) -> dict[str, Any]:
        """The partition state node: leader, leader_epoch, isr."""
        data, _ = self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")
        return dict(json.loads(data))

    def leader(self, topic: str, partition: int = 0) -> int:
        return int(self.state(topic, partition)["leader"])

    def wait_leader(self, topic: str, partition: int = 0, *, not_in: Iterable[int] = (),
                    timeout: float = 40.0) -> int:
        excluded = {-1, *not_in}
        return until(lambda: (leader := self.leader(topic, partition)) not in excluded
                     and leader, f"a leader of {topic}-{partition} outside {excluded}",
                     timeout)

    def wait_full_isr(self, topic: str, partitions: int, timeout: float = 60.0) -> None:
        until(lambda: all(sorted(self.state(topic, p)["isr"]) == self.ids
                          and self.state(topic, p)["leader"] in self.running()
                          for p in range(partitions)),
              f"every replica of {topic} in sync", timeout)

    def create_topic(self, topic: str, partitions: int = 1, replication: int = 3,
                     config: Mapping[str, str] | None = None) -> None:
        """Created as a client creates one: a retriable refusal (a controller between two
        ZooKeeper sessions answers REQUEST_TIMED_OUT) is asked again, within 60 s; a topic
        that an earlier attempt created counts."""
        from confluent_kafka import KafkaError, KafkaException
        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": self.bootstrap})
        deadline, retried = time.monotonic() + 60, False
        while True:
            futures = admin.create_topics([NewTopic(topic, partitions, replication,
                                                    config=dict(config or {}))],
                                          operation_timeout=10)
            try:
                futures[topic].result(30)
                break
            except KafkaException as exc:
                error = exc.args[0]
                if retried and error.code() == KafkaError.TOPIC_ALREADY_EXISTS:
                    break
                if not error.retriable() or time.monotonic() > deadline:
                    raise
                retried = True
                time.sleep(1)
        until(lambda: all(len(self.state(topic, p)["isr"]) == replication
                          for p in range(partitions)), f"{topic} created", 30)

    def request(self, broker_id: int, api_key: int, version: int, body: dict[str, Any],
                timeout: float = 5.0) -> dict[str, Any]:
        """One request on a fresh connection to the broker's client listener; its answer
        (an OSError, ``TimeoutError`` included, if none comes within ``timeout``)."""
        from kafkalite.protocol import decode_response, encode_request

        with socket.create_connection(("127.0.0.1", self.client_ports[broker_id]),
                                      timeout) as sock:
            sock.sendall(encode_request(api_key, version, 1, "fault-observer", body))
            size = int.from_bytes(_read_exactly(sock, 4), "big")
            _correlation, answer = decode_response(api_key, version, _read_exactly(sock, size))
        return answer

    def metadata_leaders(self, broker_id: int, topic: str) -> dict[int, int]:
        """Each partition's leader as broker ``broker_id`` answers Metadata (its own view,
        fed by the controller's UpdateMetadata)."""
        from kafkalite.protocol import ApiKey

        answer = self.request(broker_id, ApiKey.METADATA, 8, {
            "topics": [{"name": topic}], "allow_auto_topic_creation": False})
        found = answer["topics"][0]
        if found["error_code"]:
            return {}
        return {p["partition_index"]: p["leader_id"] for p in found["partitions"]}

    def log_tail(self, broker_id: int, lines: int = 30) -> str:
        text = self.nodes[broker_id].log_path.read_text(errors="replace")
        return "\n".join(text.splitlines()[-lines:])
