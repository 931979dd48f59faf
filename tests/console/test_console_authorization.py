"""The console shows what its principal may see, as Kafka's authorizer decides: started
with a user's SASL settings (what ``--command-config`` gives it), it lists the topics the
user may describe, browses those it may read and writes where it may write (Kafka hides
the other topics: 404); a principal without ACLs sees nothing, and its write is refused
with a 403 naming the refusal."""

from __future__ import annotations

import json
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from kafkalite import Producer
from kafkalite.admin import ACLOperation, NewTopic, ResourceType
from kafkalite.console import ClusterReader
from kafkalite_server import EmbeddedCluster
from tests.console.console_server import Console
from tests.security.authorized import AUTHORIZER, SASL, acl, admin_client, client_settings


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        admin = admin_client(cluster)
        admin.create_topics([NewTopic("orders", 1, 1), NewTopic("secret", 1, 1)])
        admin.wait_for_topics(["orders", "secret"])
        admin.create_acls([acl("User:alice", operation, ResourceType.TOPIC, "orders")
                           for operation in (ACLOperation.DESCRIBE, ACLOperation.READ,
                                             ACLOperation.WRITE)])
        admin.close()
        with Producer(bootstrap_servers=cluster.brokers[0].address(SASL),
                      **client_settings("admin")) as producer:
            for topic in ("orders", "secret"):
                producer.send(topic, f"{topic} record".encode())
            producer.flush()
        yield cluster


def console_as(cluster: EmbeddedCluster, user: str) -> tuple[ClusterReader, Console]:
    reader = ClusterReader({"bootstrap_servers": cluster.brokers[0].address(SASL),
                            "request_timeout_ms": 5000, **client_settings(user)})
    return reader, Console(reader, allow_writes=True)


@pytest.fixture(scope="module")
def alice(cluster: EmbeddedCluster) -> Iterator[Console]:
    reader, console = console_as(cluster, "alice")
    yield console
    console.stop()
    reader.close()


@pytest.fixture(scope="module")
def mallory(cluster: EmbeddedCluster) -> Iterator[Console]:
    reader, console = console_as(cluster, "mallory")
    yield console
    console.stop()
    reader.close()


def get(console: Console, path: str) -> tuple[int, Any]:
    try:
        with urllib.request.urlopen(console.url(path), timeout=30) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def post_record(console: Console, topic: str) -> tuple[int, Any]:
    request = urllib.request.Request(console.url(f"/api/topics/{topic}/records"),
                                     data=b'{"value": "from the console"}', method="POST",
                                     headers={"content-type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=60) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as exc:
        return exc.code, json.load(exc)


def test_a_user_sees_browses_and_writes_only_the_topics_it_may(alice: Console) -> None:
    status, topics = get(alice, "/api/topics")
    assert status == 200
    assert [t["name"] for t in topics] == ["orders"]
    assert topics[0]["size"] is None  # DescribeLogDirs needs Describe on the cluster
    status, topic = get(alice, "/api/topics/orders")
    assert (status, topic["configs"]) == (200, None)  # DescribeConfigs: not granted
    assert post_record(alice, "orders") == (200, {"topic": "orders", "partition": 0,
                                                  "offset": 1})
    status, messages = get(alice, "/api/topics/orders/messages")
    assert status == 200
    assert [r["value"]["text"] for r in messages["records"]] == ["orders record",
                                                                  "from the console"]
    status, body = get(alice, "/api/topics/secret/messages")
    assert status == 404
    assert "topic 'secret'" in body["error"]


def test_a_principal_without_acls_sees_nothing_and_cannot_write(mallory: Console) -> None:
    assert get(mallory, "/api/topics") == (200, [])
    assert get(mallory, "/api/topics/orders/messages")[0] == 404
    status, body = post_record(mallory, "orders")
    assert status == 403
    assert body["error"].startswith("TopicAuthorizationFailedError")
