"""A standalone ZooKeeper server from Debian's ``zookeeper`` package, for tests and benchmarks.

It writes a ``zoo.cfg`` into a fresh directory (loopback address, a free port, no admin
server), runs ``java`` with the package's jar (its manifest carries the classpath), waits
until the server says it is serving (``srvr`` names its mode: ``ruok`` answers ``imok``
before the database is loaded), and stops it with SIGTERM (SIGKILL after a bound).
"""

from __future__ import annotations

import shutil
import socket
import subprocess
import time
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kazoo.client import KazooClient

ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
MAIN_CLASS = "org.apache.zookeeper.server.ZooKeeperServerMain"
START_TIMEOUT_S = 30.0


def zookeeper_available() -> bool:
    return ZOOKEEPER_JAR.exists() and shutil.which("java") is not None


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ZooKeeperServer:
    def __init__(self, directory: Path, tick_ms: int = 500) -> None:
        self.directory = directory
        self.tick_ms = tick_ms
        self.port = 0
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> ZooKeeperServer:
        self.directory.mkdir(parents=True, exist_ok=True)
        (self.directory / "data").mkdir(exist_ok=True)
        self.port = self.port or free_port()
        config = self.directory / "zoo.cfg"
        config.write_text("\n".join([
            f"tickTime={self.tick_ms}",
            f"dataDir={self.directory / 'data'}",
            f"clientPort={self.port}",
            "clientPortAddress=127.0.0.1",
            "maxSessionTimeout=60000",
            "admin.enableServer=false",
            "4lw.commands.whitelist=srvr",
            "",
        ]))
        log_file = (self.directory / "zookeeper.log").open("ab")
        self.process = subprocess.Popen(
            ["java", "-Xmx128m", "-Dzookeeper.log.dir=" + str(self.directory),
             "-cp", str(ZOOKEEPER_JAR), MAIN_CLASS, str(config)],
            stdout=log_file, stderr=subprocess.STDOUT)
        log_file.close()
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            if self.process.poll() is not None:
                raise RuntimeError(f"ZooKeeper exited: {self.log_text()}")
            if self._serving():
                return self
            time.sleep(0.1)
        self.stop()
        raise RuntimeError(f"ZooKeeper did not start within {START_TIMEOUT_S}s: "
                           f"{self.log_text()}")

    def _serving(self) -> bool:
        try:
            with socket.create_connection(("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"srvr")
                reply = b""
                while chunk := sock.recv(4096):
                    reply += chunk
                return b"Mode:" in reply
        except OSError:
            return False

    def log_text(self) -> str:
        path = self.directory / "zookeeper.log"
        return path.read_text(errors="replace")[-4000:] if path.exists() else ""

    def stop(self) -> None:
        if self.process is None:
            return
        self.process.terminate()
        try:
            self.process.wait(10)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait(10)
        self.process = None


def chrooted_client(connect: str, timeout_s: float) -> KazooClient:
    """A started kazoo client rooted at ``connect``'s chroot (``host:port/chroot``), which
    it creates first: kazoo warns when it connects to a chroot that does not exist yet, as
    a test's client does before the brokers have made theirs."""
    from kazoo.client import KazooClient  # only the tests that talk to ZooKeeper need kazoo

    hosts, slash, chroot = connect.partition("/")
    client = KazooClient(hosts=hosts)
    client.start(timeout=timeout_s)
    if slash and chroot.strip("/"):
        client.ensure_path("/" + chroot.strip("/"))
        client.chroot = "/" + chroot.strip("/")
    return client
