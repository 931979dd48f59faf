"""The setup docs/security.md used to recommend, User:ANONYMOUS as a super user next to a
PLAINTEXT listener, handed the cluster to anyone who reached that listener. Such a broker
now logs an ERROR naming the risk and refuses to start unless the operator opts in with
``kafkalite.allow.anonymous.super.user=true``; and in the documented authenticated setup
the issue's three attacks (set admin's password, delete a topic's records with
StopReplica, fence the broker with an absurd controller epoch) are refused."""

from __future__ import annotations

import logging
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import Producer
from kafkalite.admin import NewTopic
from kafkalite.errors import ConfigError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import ClusterAuthorizationFailedError
from kafkalite_server import EmbeddedCluster
from tests.conftest import REPO_ROOT, WireClient
from tests.security.authorized import (
    AUTHORIZER,
    USERS,
    admin_client,
    client_settings,
    login,
    login_plain,
)
from tests.security.certs import Pki

ANONYMOUS_SUPER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
                   "super.users": "User:admin;User:ANONYMOUS"}
KEY = "kafkalite.allow.anonymous.super.user"
INT32_MAX = 2**31 - 1


def tls(pki: Pki, client_auth: str) -> dict[str, str]:
    return {"ssl.keystore.location": str(pki.server), "ssl.truststore.location": str(pki.ca),
            "ssl.client.auth": client_auth}


def risky_configs(pki: Pki) -> dict[str, dict[str, str]]:
    """Listeners where a client may be User:ANONYMOUS."""
    return {
        "plaintext": {"listeners": "PLAINTEXT://127.0.0.1:0"},
        "plaintext beside SASL": {**AUTHORIZER, "listeners":
                                  "SASL_PLAINTEXT://127.0.0.1:0,PLAINTEXT://127.0.0.1:0"},
        "ssl without client auth": {"listeners": "SSL://127.0.0.1:0", **tls(pki, "none")},
        "ssl with client auth requested": {"listeners": "SSL://127.0.0.1:0",
                                           **tls(pki, "requested")},
    }


@pytest.mark.parametrize("case", ["plaintext", "plaintext beside SASL",
                                  "ssl without client auth", "ssl with client auth requested"])
def test_an_anonymous_super_user_beside_an_open_listener_stops_the_broker(
        case: str, pki: Pki, caplog: pytest.LogCaptureFixture) -> None:
    config = {**risky_configs(pki)[case], **ANONYMOUS_SUPER}
    with caplog.at_level(logging.ERROR), pytest.raises(ConfigError) as refused:
        EmbeddedCluster(config=config).start()
    assert str(refused.value).startswith(f"{KEY}: ")
    assert "User:ANONYMOUS" in str(refused.value)
    errors = [r for r in caplog.records if r.levelno == logging.ERROR]
    assert any("User:ANONYMOUS" in r.getMessage() and "super.users" in r.getMessage()
               for r in errors)


def test_the_operator_may_opt_in_and_is_still_told(pki: Pki,
                                                   caplog: pytest.LogCaptureFixture) -> None:
    config = {**risky_configs(pki)["plaintext"], **ANONYMOUS_SUPER, KEY: "true"}
    with caplog.at_level(logging.ERROR), EmbeddedCluster(config=config) as cluster:
        assert cluster.brokers[0].port > 0
    assert any("User:ANONYMOUS" in r.getMessage() for r in caplog.records
               if r.levelno == logging.ERROR)


@pytest.mark.parametrize("case", ["sasl only", "ssl with client auth required"])
def test_listeners_that_authenticate_every_client_start(
        case: str, pki: Pki, caplog: pytest.LogCaptureFixture) -> None:
    config = {
        "sasl only": {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
                      "sasl.enabled.mechanisms": "PLAIN",
                      "sasl.jaas.config": AUTHORIZER["sasl.jaas.config"]},
        "ssl with client auth required": {"listeners": "SSL://127.0.0.1:0",
                                          **tls(pki, "required")},
    }[case]
    with caplog.at_level(logging.ERROR), \
            EmbeddedCluster(config={**config, **ANONYMOUS_SUPER}) as cluster:
        assert cluster.brokers[0].port > 0
    assert not [r for r in caplog.records if r.levelno == logging.ERROR]


def test_the_server_command_names_the_key(tmp_path: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "kafkalite_server", "start", "--data-dir", str(tmp_path),
         "--port", "0", "--set", "authorizer.class.name=on",
         "--set", "super.users=User:ANONYMOUS"],
        capture_output=True, text=True, cwd=REPO_ROOT, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"config error: {KEY}: " in done.stderr


@pytest.fixture(scope="module")
def documented() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        with admin_client(cluster) as admin:
            admin.create_topics([NewTopic("precious", 1, 1)])
        producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                            acks="all", **client_settings("admin"))
        for i in range(20):
            producer.send("precious", f"record-{i}".encode())
        producer.flush(30)
        producer.close()
        yield cluster


def _high_watermark(cluster: EmbeddedCluster) -> int:
    answer = login(cluster, "admin").call(ApiKey.LIST_OFFSETS, 5, {
        "replica_id": -1, "isolation_level": 0, "topics": [{"name": "precious", "partitions": [
            {"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]})
    return int(answer["topics"][0]["partitions"][0]["offset"])


def test_the_issues_attacks_are_refused_in_the_documented_setup(
        documented: EmbeddedCluster) -> None:
    mallory = login(documented, "mallory")
    password = mallory.call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {
        "deletions": [], "upsertions": [{"name": "admin", "mechanism": 1, "iterations": 4096,
                                         "salt": b"s" * 24, "salted_password": b"p" * 32}]})
    assert password["results"][0]["error_code"] == ClusterAuthorizationFailedError.errno
    stop = mallory.call(ApiKey.STOP_REPLICA, 1, {
        "controller_id": 0, "controller_epoch": INT32_MAX, "broker_epoch": -1,
        "delete_partitions": True, "topics": [{"name": "precious", "partition_indexes": [0]}]})
    assert stop["error_code"] == ClusterAuthorizationFailedError.errno
    fence = mallory.call(ApiKey.UPDATE_METADATA, 4, {
        "controller_id": 0, "controller_epoch": INT32_MAX,
        "ungrouped_partition_states": [], "live_brokers": []})
    assert fence["error_code"] == ClusterAuthorizationFailedError.errno
    assert documented.brokers[0].metadata_cache.partitions_of("precious") is not None
    assert _high_watermark(documented) == 20
    login_plain(documented.brokers[0].address("SASL_PLAINTEXT"), "admin", USERS["admin"])

    # Without logging in, nothing but ApiVersions and the SASL requests is even read.
    stranger = WireClient(documented.brokers[0].address("SASL_PLAINTEXT"))
    stranger.send(ApiKey.UPDATE_METADATA, 4, {
        "controller_id": 0, "controller_epoch": INT32_MAX,
        "ungrouped_partition_states": [], "live_brokers": []})
    assert stranger.is_closed_by_peer()
