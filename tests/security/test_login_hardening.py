"""Password guessing: a failed login is answered only after
``connection.failed.authentication.delay.ms`` (Kafka's key) while every other connection is
served meanwhile; and SCRAM answers a user that does not exist exactly as it answers a real
one (salt length, iteration count, the same salt on every attempt and every broker)."""

from __future__ import annotations

import base64
import socket
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite.errors import ConfigError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import SaslAuthenticationFailedError
from kafkalite.protocol.sasl_plain import plain_message
from kafkalite.protocol.scram import ScramClient
from kafkalite_server import EmbeddedCluster
from kafkalite_server.cluster.local_store import LocalEnsemble
from kafkalite_server.config import BrokerConfig
from kafkalite_server.security.security_store import SecurityStore
from tests.conftest import WireClient
from tests.security.authorized import AUTHORIZER, login

DELAY_MS = 8000
"""Long enough that the other connections are surely served before it ends."""
METADATA_ALL = {"topics": None, "allow_auto_topic_creation": False,
                "include_cluster_authorized_operations": False,
                "include_topic_authorized_operations": False}


def has_nothing_to_read(client: WireClient) -> bool:
    """No byte and no close from the broker yet (without waiting)."""
    client.sock.setblocking(False)
    try:
        client.sock.recv(1, socket.MSG_PEEK)
    except BlockingIOError:
        return True
    finally:
        client.sock.setblocking(True)
        client.sock.settimeout(60)
    return False


@pytest.fixture(scope="module")
def slow_failures() -> Iterator[EmbeddedCluster]:
    config = {**AUTHORIZER, "connection.failed.authentication.delay.ms": str(DELAY_MS)}
    with EmbeddedCluster(config=config) as cluster:
        yield cluster


@pytest.mark.parametrize("framing", ["SaslAuthenticate", "bare token"])
def test_a_failed_login_is_answered_late_while_other_connections_are_served(
        slow_failures: EmbeddedCluster, framing: str) -> None:
    address = slow_failures.brokers[0].address("SASL_PLAINTEXT")
    guesser = WireClient(address, timeout=60)
    guess = plain_message("admin", "a guess")
    if framing == "SaslAuthenticate":
        assert guesser.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
        guesser.send(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": guess})
    else:  # after a v0 handshake: the token as a bare frame, a failure just closes
        assert guesser.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})["error_code"] == 0
        guesser.send_raw(len(guess).to_bytes(4, "big") + guess)

    # While the guesser waits, another client logs in and is served, and a second guesser
    # gets its handshake answered: the delay holds up no one else.
    assert login(slow_failures, "alice").call(ApiKey.METADATA, 8, METADATA_ALL)["brokers"]
    other = WireClient(address)
    assert other.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    assert has_nothing_to_read(guesser)

    if framing == "SaslAuthenticate":
        _correlation, answer = guesser.receive(ApiKey.SASL_AUTHENTICATE, 2)
        assert answer["error_code"] == SaslAuthenticationFailedError.errno
    assert guesser.is_closed_by_peer()


def test_the_delay_is_kafkas_key_with_kafkas_default() -> None:
    assert BrokerConfig().connection_failed_authentication_delay_ms == 100
    assert BrokerConfig.from_properties(
        {"connection.failed.authentication.delay.ms": "0"}
    ).connection_failed_authentication_delay_ms == 0
    with pytest.raises(ConfigError, match=r"^connection\.failed\.authentication\.delay\.ms: "):
        BrokerConfig.from_properties({"connection.failed.authentication.delay.ms": "-1"})


SCRAM = "SCRAM-SHA-512"


def server_first(address: str, user: str) -> dict[str, str]:
    """The attributes of the broker's first SCRAM message to ``user``."""
    client = WireClient(address)
    try:
        assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": SCRAM})["error_code"] == 0
        answer = client.call(ApiKey.SASL_AUTHENTICATE, 2, {
            "auth_bytes": ScramClient(SCRAM, user, "a guess").first_message()})
        assert answer["error_code"] == 0, answer
        return dict(part.split("=", 1) for part in bytes(answer["auth_bytes"]).decode()
                    .split(","))
    finally:
        client.close()


def test_an_unknown_scram_user_is_answered_like_a_real_one() -> None:
    """The issue's probe: librdkafka stores 64-byte salts and 8192 iterations; an unknown
    user got 32 bytes and 4096, so a guesser could tell which users exist."""
    config = {**AUTHORIZER, "sasl.enabled.mechanisms": f"PLAIN,{SCRAM}"}
    with EmbeddedCluster(num_brokers=2, config=config) as cluster:
        created = login(cluster, "admin").call(ApiKey.ALTER_USER_SCRAM_CREDENTIALS, 0, {
            "deletions": [], "upsertions": [
                {"name": user, "mechanism": 2, "iterations": 8192, "salt": bytes([i]) * 64,
                 "salted_password": bytes([i]) * 64}
                for i, user in enumerate(("carol", "dave"))]})
        assert [r["error_code"] for r in created["results"]] == [0, 0]
        first, second = (broker.address("SASL_PLAINTEXT") for broker in cluster.brokers)
        real = server_first(first, "carol")
        ghost = server_first(first, "ghost")
        shape = (len(base64.b64decode(real["s"])), real["i"])
        assert shape == (64, "8192")
        assert (len(base64.b64decode(ghost["s"])), ghost["i"]) == shape
        # The same salt on every attempt, from either broker, as a real user's is.
        assert server_first(first, "ghost")["s"] == ghost["s"]
        assert server_first(second, "ghost")["s"] == ghost["s"]
        assert server_first(second, "carol")["s"] == real["s"]
        assert server_first(first, "ghost2")["s"] != ghost["s"]


def test_the_decoy_secret_outlives_a_restart_and_credential_changes(tmp_path: Path) -> None:
    def decoy_secret(directory: Path, *changes: str) -> bytes:
        local = LocalEnsemble.open(directory)
        session = local.connect()
        try:
            store = SecurityStore(lambda: session)
            if "credentials" in changes:
                store.alter_credentials([], [])
            if "acls" in changes:
                store.add_acls([])
            return store.scram_decoy_secret()
        finally:
            local.close()
    secret = decoy_secret(tmp_path / "store")
    assert len(secret) == 32
    assert decoy_secret(tmp_path / "store", "credentials", "acls") == secret
    assert decoy_secret(tmp_path / "other") != secret
