"""Runs a peer client's own test suite (KafkaJS or librdkafka) against kafkalite brokers.

A report, not a gate: never run in CI nor by ``tox -e bench``. The peer's checkout is made
by the user (steps in ``--help`` and docs/compatibility.md); this script starts the cluster
that suite expects in a temporary directory, runs the suite bounded by a timeout, prints a
pass/fail/skip table and exits 0.

- ``kafkajs DIR``: three ``kafkalite-server`` processes over Debian's ZooKeeper on the ports
  KafkaJS's docker-compose.2_4.yml publishes (PLAINTEXT 9092/9095/9098, SSL 9093/9096/9099,
  SASL_SSL 9094/9097/9100, host ``localhost``), SASL users test, bob and alice (PLAIN) and
  testscram (SCRAM-SHA-256/512), a CA and broker certificate generated per run and put
  where the suite reads its CA (``testHelpers/certs/cert-signed``, restored afterwards).
  ``--oauthbearer`` runs KafkaJS's OAUTHBEARER CI job instead: the brokers of
  docker-compose.2_4_oauthbearer.yml (SASL_SSL offers only OAUTHBEARER, unsecured JWS,
  ``connections.max.reauth.ms=15000``, no authorizer) and, with ``OAUTHBEARER_ENABLED=1``,
  the six test files of its package.json's ``test:group:oauthbearer``.
- ``librdkafka DIR``: one broker (or ``--brokers 3``), a ``test.conf`` of the run's own
  naming it (``RDKAFKA_TEST_CONF``; the checkout's is never touched),
  ``TEST_KAFKA_VERSION`` (default 3.9.0, the release whose API versions kafkalite
  advertises; from 4.2 on the brokers also get the share-group settings librdkafka's own
  cluster tooling gives them, ``group.share.min.record.lock.duration.ms=1000``), ``TEST_CONSUMER_GROUP_PROTOCOL`` (``--group-protocol``) and a ``--tests``
  subset passed as ``TESTS=``. ``--sasl`` makes the clients' listener SASL_PLAINTEXT with
  PLAIN (user test) and ``connections.max.reauth.ms=10000``; ``--scenario noautocreate``
  runs the tests of that scenario against brokers that do not create topics on Metadata.
  ``--tests broker`` names every test that needs a broker, read
  from the checkout's ``tests/test.c`` (not the local or mock ones, nor those that call
  Kafka's shell tools); ``--tests groups`` the consumer-group ones among them. ``--chunk N``
  runs the ids N at a time, one run after another, each bounded by ``--timeout``, against
  the same brokers.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
ZOOKEEPER_MAIN = "org.apache.zookeeper.server.ZooKeeperServerMain"
START_TIMEOUT_S = 90.0

KAFKAJS_STEPS = ("git clone --branch v2.2.4 https://github.com/tulios/kafkajs DIR"
                 " && cd DIR && npx --yes yarn@1 install --frozen-lockfile")
LIBRDKAFKA_STEPS = ("git clone --branch v2.16.0 https://github.com/confluentinc/librdkafka DIR"
                    " && cd DIR && ./configure && make -j2 && make -C tests build")

KAFKAJS_PORTS = {0: (9092, 9093, 9094), 1: (9095, 9096, 9097), 2: (9098, 9099, 9100)}
"""Broker id -> (PLAINTEXT, SSL, SASL_SSL) ports, as docker-compose.2_4.yml numbers them (its
BrokerPool tests expect node ids 0, 1 and 2)."""
KAFKAJS_PLAIN_USERS = {"test": "testtest", "bob": "bobbob", "alice": "alicealice"}
"""The PLAIN users of testHelpers/kafka/server-jaas.conf (its ACL tests log in as bob and
alice)."""
KAFKAJS_OAUTHBEARER_TESTS = (
    "src/producer/index.spec.js", "src/broker/__tests__/connect.spec.js",
    "src/consumer/__tests__/connection.spec.js", "src/broker/__tests__/disconnect.spec.js",
    "src/admin/__tests__/connection.spec.js", "src/broker/__tests__/reauthenticate.spec.js")
"""package.json's ``test:group:oauthbearer``: the files its OAUTHBEARER CI job runs."""
KAFKAJS_SCRAM_USERS = (("testscram", "testtestscram=256", "SCRAM-SHA-256"),
                       ("testscram", "testtestscram=512", "SCRAM-SHA-512"))

KAFKAJS_SASL = {
    # docker-compose.2_4.yml's ACL authorizer, open to everyone until an ACL exists
    "authorizer.class.name": "kafka.security.auth.SimpleAclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
    "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
    "listener.name.sasl_ssl_host.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in KAFKAJS_PLAIN_USERS.items())
        + ";",
}
KAFKAJS_OAUTHBEARER_SASL = {
    # docker-compose.2_4_oauthbearer.yml: unsecured JWS, sessions re-authenticated every 15 s
    "sasl.enabled.mechanisms": "OAUTHBEARER",
    "listener.name.sasl_ssl_host.oauthbearer.sasl.jaas.config":
        "org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="admin";',
    "connections.max.reauth.ms": "15000",
}

LIBRDKAFKA_TEST = re.compile(r"_TEST\(\s*(\d{4})_(\w+)\s*,\s*([^,)]*)")
"""A test's entry in librdkafka's tests/test.c: ``_TEST(0001_multiobj, FLAGS, ...)``."""
LIBRDKAFKA_NO_BROKER_FLAGS = ("TEST_F_LOCAL", "TEST_F_MANUAL")
LIBRDKAFKA_SHELL_TOOL_TESTS = frozenset({"0052", "0077", "0109", "0115", "0119"})
"""They call kafka-topics.sh, kafka-configs.sh or kafka-acls.sh from a Kafka installation."""
LIBRDKAFKA_GROUP_TESTS = frozenset({
    "0018", "0019", "0020", "0026", "0029", "0030", "0033", "0034", "0040", "0044", "0045",
    "0050", "0051", "0056", "0060", "0061", "0069", "0083", "0089", "0091", "0093", "0098",
    "0099", "0102", "0112", "0113", "0118", "0122", "0130", "0132", "0137", "0140"})
"""The tests whose consumers join a group: what TEST_CONSUMER_GROUP_PROTOCOL changes."""
LIBRDKAFKA_ID_SETS = ("broker", "groups")
LIBRDKAFKA_BROKER_CONFIG = {
    "num.partitions": "4",
    # Kafka's default: 0113 expects two consumers subscribing together to share the first
    # generation, where a delay of 0 lets the first one form a generation alone.
    "group.initial.rebalance.delay.ms": "3000",
    # 0081 creates, describes and deletes ACLs; open to everyone until an ACL exists.
    "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
    "allow.everyone.if.no.acl.found": "true",
}
LIBRDKAFKA_SHARE_CONFIG = {
    # what librdkafka's own cluster tooling sets from Kafka 4.2 on: the share-consumer tests
    # (0173's lock-timeout redelivery) give their groups record locks of a few seconds
    "group.share.min.record.lock.duration.ms": "1000",
}
LIBRDKAFKA_SASL_USER = ("test", "testtest")
LIBRDKAFKA_SASL = {
    # what 0135 (SASL credentials) and 0142 (re-authentication, KIP-368) need of the broker
    "sasl.enabled.mechanisms": "PLAIN",
    "listener.name.sasl_plaintext.plain.sasl.jaas.config":
        "org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'user_{LIBRDKAFKA_SASL_USER[0]}="{LIBRDKAFKA_SASL_USER[1]}";',
    "connections.max.reauth.ms": "10000",
}

CLUSTER_CONFIG: dict[str, str] = {
    "zookeeper.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "0",
    "offsets.topic.num.partitions": "5",
}


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


class ZooKeeper:
    """Debian's ZooKeeper on a free loopback port, in a directory of its own."""

    def __init__(self, directory: Path) -> None:
        self.directory = directory
        self.port = free_port()
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def connect(self) -> str:
        return f"127.0.0.1:{self.port}"

    def start(self) -> None:
        if not ZOOKEEPER_JAR.exists() or shutil.which("java") is None:
            raise SystemExit("needs Debian's zookeeper package and java")
        (self.directory / "data").mkdir(parents=True)
        config = self.directory / "zoo.cfg"
        config.write_text(f"tickTime=500\ndataDir={self.directory / 'data'}\n"
                          f"clientPort={self.port}\nclientPortAddress=127.0.0.1\n"
                          "maxSessionTimeout=60000\nadmin.enableServer=false\n"
                          "4lw.commands.whitelist=ruok\n")
        with (self.directory / "zookeeper.log").open("ab") as log:
            self.process = subprocess.Popen(
                ["java", "-Xmx128m", "-cp", str(ZOOKEEPER_JAR), ZOOKEEPER_MAIN, str(config)],
                stdout=log, stderr=subprocess.STDOUT)
        deadline = time.monotonic() + START_TIMEOUT_S
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError), socket.create_connection(
                    ("127.0.0.1", self.port), timeout=1) as sock:
                sock.sendall(b"ruok")
                if sock.recv(4) == b"imok":
                    return
            time.sleep(0.2)
        raise SystemExit(f"ZooKeeper did not start; see {self.directory / 'zookeeper.log'}")

    def stop(self) -> None:
        if self.process is not None:
            self.process.terminate()
            self.process.wait(20)


def server_command(*args: str) -> list[str]:
    return [sys.executable, "-m", "kafkalite_server", *args]


def server_env() -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}


class Broker:
    """One ``kafkalite-server start`` process, its stderr in ``<data dir>.log``."""

    def __init__(self, data_dir: Path, settings: Mapping[str, str]) -> None:
        self.data_dir = data_dir
        self.settings = settings
        self.process: subprocess.Popen[str] | None = None

    @property
    def log_path(self) -> Path:
        return self.data_dir.with_name(self.data_dir.name + ".log")

    def start(self) -> None:
        args = ["start", "--data-dir", str(self.data_dir)]
        for key, value in self.settings.items():
            args += ["--set", f"{key}={value}"]
        with self.log_path.open("a") as log:
            self.process = subprocess.Popen(server_command(*args), stdout=subprocess.PIPE,
                                            stderr=log, text=True, env=server_env())
        ready = threading.Event()
        threading.Thread(target=self._drain, args=(ready,), daemon=True).start()
        if not ready.wait(START_TIMEOUT_S) or self.process.poll() is not None:
            raise SystemExit(f"broker did not start: {self.log_path.read_text()[-2000:]}")

    def _drain(self, ready: threading.Event) -> None:
        assert self.process is not None and self.process.stdout is not None
        for line in self.process.stdout:
            if line.startswith("listening on "):
                ready.set()
        ready.set()

    def stop(self) -> None:
        if self.process is not None and self.process.poll() is None:
            self.process.send_signal(signal.SIGTERM)
            try:
                self.process.wait(30)
            except subprocess.TimeoutExpired:
                self.process.kill()
                self.process.wait(10)


def make_certificates(directory: Path) -> tuple[Path, Path]:
    """A CA and a ``localhost`` broker certificate signed by it: (CA PEM, broker PEM+key)."""
    directory.mkdir(parents=True)
    ca_key, ca_pem = directory / "ca.key", directory / "ca.pem"
    key, csr, cert = directory / "broker.key", directory / "broker.csr", directory / "broker.pem"
    ext = directory / "san.ext"
    ext.write_text("subjectAltName=DNS:localhost,IP:127.0.0.1\n")
    commands = [
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
         "-subj", "/CN=peer-suites-ca", "-keyout", str(ca_key), "-out", str(ca_pem)],
        ["openssl", "req", "-newkey", "rsa:2048", "-nodes", "-subj", "/CN=localhost",
         "-keyout", str(key), "-out", str(csr)],
        ["openssl", "x509", "-req", "-in", str(csr), "-CA", str(ca_pem), "-CAkey", str(ca_key),
         "-CAcreateserial", "-days", "2", "-extfile", str(ext), "-out", str(cert)],
    ]
    for command in commands:
        subprocess.run(command, check=True, capture_output=True)
    keystore = directory / "broker-keystore.pem"
    keystore.write_text(cert.read_text() + key.read_text())
    return ca_pem, keystore


def kafkajs_settings(broker_id: int, zookeeper: str, keystore: Path, ca: Path,
                     oauthbearer: bool) -> dict[str, str]:
    plain, ssl_port, sasl = KAFKAJS_PORTS[broker_id]
    internal = free_port()
    return {
        **CLUSTER_CONFIG,
        "broker.id": str(broker_id),
        "zookeeper.connect": zookeeper,
        "listeners": (f"PLAINTEXT://127.0.0.1:{internal},PLAINTEXT_HOST://localhost:{plain},"
                      f"SSL_HOST://localhost:{ssl_port},SASL_SSL_HOST://localhost:{sasl}"),
        "advertised.listeners": (f"PLAINTEXT://127.0.0.1:{internal},"
                                 f"PLAINTEXT_HOST://localhost:{plain},"
                                 f"SSL_HOST://localhost:{ssl_port},"
                                 f"SASL_SSL_HOST://localhost:{sasl}"),
        "listener.security.protocol.map": ("PLAINTEXT:PLAINTEXT,PLAINTEXT_HOST:PLAINTEXT,"
                                           "SSL_HOST:SSL,SASL_SSL_HOST:SASL_SSL"),
        "inter.broker.listener.name": "PLAINTEXT",
        "auto.create.topics.enable": "true",
        "default.replication.factor": "2",
        "offsets.topic.replication.factor": "3",
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(keystore),
        "ssl.truststore.location": str(ca),
        **(KAFKAJS_OAUTHBEARER_SASL if oauthbearer else KAFKAJS_SASL),
    }



def _release(version: str) -> tuple[int, ...]:
    """``4.2.0`` as (4, 2, 0)."""
    return tuple(int(part) for part in re.findall(r"\d+", version)[:3])


def librdkafka_settings(broker_id: int, zookeeper: str, port: int, sasl: bool,
                        scenario: str, kafka_version: str = "3.9.0") -> dict[str, str]:
    settings = {**CLUSTER_CONFIG, **LIBRDKAFKA_BROKER_CONFIG, "broker.id": str(broker_id),
                "zookeeper.connect": zookeeper,
                "listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "advertised.listeners": f"PLAINTEXT://127.0.0.1:{port}",
                "auto.create.topics.enable": str(scenario != "noautocreate").lower()}
    if _release(kafka_version) >= (4, 2):
        settings.update(LIBRDKAFKA_SHARE_CONFIG)
    if sasl:
        # The clients' listener asks for PLAIN; the brokers keep a PLAINTEXT one between them.
        internal = free_port()
        settings.update({
            "listeners": f"PLAINTEXT://127.0.0.1:{internal},SASL_PLAINTEXT://127.0.0.1:{port}",
            "advertised.listeners": (f"PLAINTEXT://127.0.0.1:{internal},"
                                     f"SASL_PLAINTEXT://127.0.0.1:{port}"),
            "inter.broker.listener.name": "PLAINTEXT",
            **LIBRDKAFKA_SASL})
    return settings


@contextlib.contextmanager
def running_cluster(root: Path, settings: Sequence[dict[str, str]]) -> Iterator[list[Broker]]:
    brokers = [Broker(root / f"broker-{s['broker.id']}", s) for s in settings]
    try:
        for broker in brokers:
            broker.start()
        yield brokers
    finally:
        for broker in brokers:
            broker.stop()


def run_bounded(command: Sequence[str], cwd: Path, env: Mapping[str, str], timeout_s: float,
                output: Path) -> str:
    """Runs the suite in its own process group; kills the group when the time is up."""
    with output.open("w") as out:
        process = subprocess.Popen(command, cwd=cwd, env=dict(env), stdout=out,
                                   stderr=subprocess.STDOUT, start_new_session=True)
        try:
            process.wait(timeout_s)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(30)
            out.write(f"\n[peer_suites] killed after {timeout_s:.0f} s\n")
    return output.read_text(errors="replace")


JEST_RESULT = re.compile(r"^\s*(✓|✕|○)\s+(.*?)(?:\s+\(\d+\s*ms\))?$")
JEST_FILE = re.compile(r"^\s*(PASS|FAIL)\s+(\S+\.spec\.js)")


def kafkajs_table(log: str) -> tuple[dict[str, collections.Counter[str]], list[str]]:
    """Per directory, passed/failed/skipped counts from jest's verbose output."""
    table: dict[str, collections.Counter[str]] = collections.defaultdict(collections.Counter)
    failures: list[str] = []
    directory = "?"
    for line in log.splitlines():
        if match := JEST_FILE.match(line):
            directory = str(Path(match.group(2)).parent)
            continue
        if match := JEST_RESULT.match(line):
            kind = {"✓": "passed", "✕": "failed", "○": "skipped"}[match.group(1)]
            table[directory][kind] += 1
            if kind == "failed":
                failures.append(f"{directory}: {match.group(2)}")
    return table, failures


RDKAFKA_RESULT = re.compile(r"\|\s*(\d{4}\w*)\s*\|\s*(PASSED|FAILED|SKIPPED)")
RDKAFKA_TEST_END = re.compile(r"=+ Test (\d{4}\w*) (PASSED|SKIPPED) =+")
RDKAFKA_TEST_FAILURE = re.compile(r"^\[(\d{4}\w*)\s*/[^]]*\] TEST FAILURE", re.MULTILINE)
ANSI_ESCAPE = re.compile(r"\x1b\[[0-9;]*m")
"""run-test.sh colours its summary table; the colour codes sit between the table's bars."""


def librdkafka_table(log: str) -> tuple[dict[str, collections.Counter[str]], list[str]]:
    """Each test's result: its line in the summary table, else the lines it printed itself.

    The test runner aborts before (or while) printing its summary when a failed test left
    a client's threads running, so each test's own end line counts too.
    """
    log = ANSI_ESCAPE.sub("", log)
    results = {test: result.lower() for test, result in RDKAFKA_TEST_END.findall(log)}
    results.update((test, "failed") for test in RDKAFKA_TEST_FAILURE.findall(log))
    results.update((test, result.lower()) for test, result in RDKAFKA_RESULT.findall(log))
    table = {test: collections.Counter({result: 1}) for test, result in results.items()}
    return table, sorted(test for test, result in results.items() if result == "failed")


def librdkafka_ids(test_c: str, id_set: str) -> list[str]:
    """The ids of ``id_set`` ("broker" or "groups") among the tests ``test_c`` declares.

    A test needs a broker unless its flags say local or manual, or its name says it runs on
    librdkafka's mock cluster; the tests that call Kafka's shell tools cannot run here.
    """
    ids = []
    for test_id, name, flags in LIBRDKAFKA_TEST.findall(test_c):
        if (any(flag in flags for flag in LIBRDKAFKA_NO_BROKER_FLAGS) or "mock" in name
                or test_id in LIBRDKAFKA_SHELL_TOOL_TESTS):
            continue
        if id_set == "groups" and test_id not in LIBRDKAFKA_GROUP_TESTS:
            continue
        if test_id not in ids:
            ids.append(test_id)
    return ids


def print_report(table: Mapping[str, collections.Counter[str]], failures: list[str]) -> None:
    print(f"{'where':50} {'passed':>7} {'failed':>7} {'skipped':>8}")
    total: collections.Counter[str] = collections.Counter()
    for name in sorted(table):
        counts = table[name]
        total.update(counts)
        print(f"{name:50} {counts['passed']:7} {counts['failed']:7} {counts['skipped']:8}")
    print(f"{'total':50} {total['passed']:7} {total['failed']:7} {total['skipped']:8}")
    for failure in failures:
        print(f"FAILED {failure}")


def run_kafkajs(checkout: Path, root: Path, args: argparse.Namespace) -> None:
    zookeeper = ZooKeeper(root / "zookeeper")
    zookeeper.start()
    try:
        ca, keystore = make_certificates(root / "certs")
        chroot = f"{zookeeper.connect}/kafkalite"
        settings = [kafkajs_settings(i, chroot, keystore, ca, args.oauthbearer)
                    for i in KAFKAJS_PORTS]
        with running_cluster(root, settings) as brokers:
            for user, password, mechanism in KAFKAJS_SCRAM_USERS:
                subprocess.run(server_command(
                    "scram-user", "--data-dir", str(brokers[0].data_dir), "--user", user,
                    "--password", password, "--mechanism", mechanism,
                    "--set", f"zookeeper.connect={chroot}"),
                    check=True, env=server_env(), capture_output=True)
            ca_target = checkout / "testHelpers" / "certs" / "cert-signed"
            original = ca_target.read_bytes() if ca_target.exists() else None
            ca_target.write_bytes(ca.read_bytes())
            try:
                env = {**os.environ, "KAFKA_VERSION": args.kafka_version, "NODE_ENV": "test",
                       "KAFKAJS_DEBUG_PROTOCOL_BUFFERS": "1"}
                jest = [str(checkout / "node_modules" / ".bin" / "jest"), "--ci", "--verbose",
                        "--forceExit", "--no-watchman", "--maxWorkers=1"]
                if args.oauthbearer:
                    env["OAUTHBEARER_ENABLED"] = "1"
                tests = args.tests or ("|".join(map(re.escape, KAFKAJS_OAUTHBEARER_TESTS))
                                       if args.oauthbearer else "")
                if tests:
                    jest += ["--testPathPattern", tests]
                log = run_bounded(jest, checkout, env, args.timeout, root / "suite.log")
            finally:
                if original is not None:
                    ca_target.write_bytes(original)
            print_report(*kafkajs_table(log))
            print_broker_errors(brokers)
    finally:
        zookeeper.stop()


def run_librdkafka(checkout: Path, root: Path, args: argparse.Namespace) -> None:
    zookeeper = ZooKeeper(root / "zookeeper")
    zookeeper.start()
    try:
        ports = [free_port() for _ in range(args.brokers)]
        chroot = f"{zookeeper.connect}/kafkalite"
        settings = [librdkafka_settings(i + 1, chroot, port, args.sasl, args.scenario,
                                        args.kafka_version)
                    for i, port in enumerate(ports)]
        with running_cluster(root, settings) as brokers:
            tests_dir = checkout / "tests"
            # The runner reads the file RDKAFKA_TEST_CONF names: a test.conf of this run's
            # own, so that runs sharing a checkout never point each other's tests elsewhere.
            conf = root / "test.conf"
            lines = ["bootstrap.servers=" + ",".join(f"127.0.0.1:{p}" for p in ports)]
            if args.sasl:
                user, password = LIBRDKAFKA_SASL_USER
                lines += ["security.protocol=SASL_PLAINTEXT", "sasl.mechanism=PLAIN",
                          f"sasl.username={user}", f"sasl.password={password}"]
            conf.write_text("\n".join(lines) + "\n")
            env = {**os.environ, "RDKAFKA_TEST_CONF": str(conf),
                   "TEST_KAFKA_VERSION": args.kafka_version,
                   "TEST_CONSUMER_GROUP_PROTOCOL": args.group_protocol,
                   "TEST_SCENARIO": args.scenario}
            logs = []
            for number, chunk in enumerate(librdkafka_chunks(tests_dir, args)):
                if chunk:
                    env["TESTS"] = chunk
                logs.append(run_bounded(["./run-test.sh"], tests_dir, env, args.timeout,
                                        root / f"suite-{number}.log"))
            log = "\n".join(logs)
            print_report(*librdkafka_table(log))
            print_broker_errors(brokers)
    finally:
        zookeeper.stop()


def librdkafka_chunks(tests_dir: Path, args: argparse.Namespace) -> list[str]:
    """``--tests`` as the TESTS= values of the runs to make (one value "" runs them all)."""
    if args.tests in LIBRDKAFKA_ID_SETS:
        ids = librdkafka_ids((tests_dir / "test.c").read_text(errors="replace"), args.tests)
    else:
        ids = [test_id for test_id in args.tests.split(",") if test_id]
    if not ids:
        return [""]
    size = args.chunk or len(ids)
    return [",".join(ids[start:start + size]) for start in range(0, len(ids), size)]


def print_broker_errors(brokers: Sequence[Broker]) -> None:
    """The brokers' ERROR lines: where a failing test points at a broker defect."""
    for broker in brokers:
        errors = [line for line in broker.log_path.read_text(errors="replace").splitlines()
                  if "ERROR" in line or "Traceback" in line]
        for line in errors[-20:]:
            print(f"{broker.log_path.name}: {line}")


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
        epilog=f"Checkouts: KafkaJS: {KAFKAJS_STEPS}; librdkafka: {LIBRDKAFKA_STEPS}")
    parser.add_argument("suite", choices=("kafkajs", "librdkafka"))
    parser.add_argument("checkout", type=Path)
    parser.add_argument("--tests", default="",
                        help="jest --testPathPattern (kafkajs); TESTS= ids, or 'broker' or "
                             "'groups' (librdkafka)")
    parser.add_argument("--chunk", type=int, default=0,
                        help="librdkafka only: run the ids this many at a time, one run after "
                             "another, each bounded by --timeout")
    parser.add_argument("--brokers", type=int, default=1, choices=(1, 3),
                        help="librdkafka only; KafkaJS always gets three brokers")
    parser.add_argument("--kafka-version", default="",
                        help="KAFKA_VERSION (default 2.4) / TEST_KAFKA_VERSION (default 3.9.0)")
    parser.add_argument("--group-protocol", default="classic", choices=("classic", "consumer"),
                        help="librdkafka only: TEST_CONSUMER_GROUP_PROTOCOL, the group "
                             "protocol its consumers use (consumer = KIP-848)")
    parser.add_argument("--scenario", default="default", choices=("default", "noautocreate"),
                        help="librdkafka only: TEST_SCENARIO; its tests of a scenario run only "
                             "in it (noautocreate: 0107, 0111 and two of 0045's, against "
                             "brokers with auto.create.topics.enable=false)")
    parser.add_argument("--sasl", action="store_true",
                        help="librdkafka only: clients log in with SASL PLAIN, and sessions "
                             "re-authenticate every 10 s (connections.max.reauth.ms)")
    parser.add_argument("--oauthbearer", action="store_true",
                        help="kafkajs only: its OAUTHBEARER CI job (brokers of "
                             "docker-compose.2_4_oauthbearer.yml, OAUTHBEARER_ENABLED=1)")
    parser.add_argument("--timeout", type=float, default=3600.0,
                        help="seconds for the suite (for each chunk with --chunk)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = parser.parse_args(argv)
    args.kafka_version = args.kafka_version or ("2.4" if args.suite == "kafkajs" else "3.9.0")
    root = Path(tempfile.mkdtemp(prefix="kafkalite-peer-suites-"))
    try:
        (run_kafkajs if args.suite == "kafkajs" else run_librdkafka)(
            args.checkout.resolve(), root, args)
    finally:
        if args.keep:
            print(f"logs kept in {root}")
        else:
            shutil.rmtree(root, ignore_errors=True)


if __name__ == "__main__":
    main()
