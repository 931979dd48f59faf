"""Bad input on secured listeners: garbage SASL tokens, a SCRAM exchange with a wrong nonce
or proof, requests before authentication, an unknown mechanism, random bytes as a TLS
handshake and a PLAINTEXT client on a TLS port. Each gets a clean close (after an error
response where one can be read), and an authenticated connection opened before keeps
working."""

from __future__ import annotations

import os
import socket
import ssl

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import SaslAuthenticationFailedError, UnsupportedSaslMechanismError
from kafkalite.protocol.scram import ScramClient
from tests.conftest import WireClient
from tests.security.authorized import login_plain
from tests.security.conftest import PLAIN_USERS, SCRAM_USER, SecureBroker

METADATA = {"topics": None, "allow_auto_topic_creation": False,
            "include_cluster_authorized_operations": False,
            "include_topic_authorized_operations": False}


@pytest.fixture
def bystander(secure: SecureBroker) -> WireClient:
    """An authenticated connection that must stay usable whatever the others send."""
    return login_plain(secure.address("SASL_PLAINTEXT"), "alice", PLAIN_USERS["alice"])


def still_serves(client: WireClient) -> bool:
    return "brokers" in client.call(ApiKey.METADATA, 8, METADATA)


def handshake(secure: SecureBroker, mechanism: str) -> WireClient:
    client = WireClient(secure.address("SASL_PLAINTEXT"), timeout=10)
    assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": mechanism})["error_code"] == 0
    return client


def authenticate(client: WireClient, token: bytes) -> dict:  # type: ignore[type-arg]
    return client.call(ApiKey.SASL_AUTHENTICATE, 2, {"auth_bytes": token})


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
@pytest.mark.parametrize("token", [b"", b"\xff\xfe\x00garbage", os.urandom(300),
                                   b"n,,n=,r=", b"\x00" * 5000])
def test_garbage_tokens_fail_and_close(secure: SecureBroker, bystander: WireClient,
                                       mechanism: str, token: bytes) -> None:
    client = handshake(secure, mechanism)
    answer = authenticate(client, token)
    assert answer["error_code"] == SaslAuthenticationFailedError.errno
    assert client.is_closed_by_peer()
    assert still_serves(bystander)


@pytest.mark.parametrize("tamper", ["nonce", "proof", "user"])
def test_scram_with_a_wrong_nonce_proof_or_user_fails_without_saying_which(
        secure: SecureBroker, bystander: WireClient, tamper: str) -> None:
    user, password = SCRAM_USER
    scram = ScramClient("SCRAM-SHA-256", "ghost" if tamper == "user" else user, password)
    client = handshake(secure, "SCRAM-SHA-256")
    first = authenticate(client, scram.first_message())
    assert first["error_code"] == 0
    final = scram.receive(first["auth_bytes"]) or b""
    if tamper == "nonce":
        final = final.replace(b",r=", b",r=x", 1)
    elif tamper == "proof":
        head, proof = final.rsplit(b",p=", 1)
        final = head + b",p=" + (b"A" if proof[:1] != b"A" else b"B") + proof[1:]
    answer = authenticate(client, final)
    assert answer["error_code"] == SaslAuthenticationFailedError.errno
    if tamper != "nonce":
        assert answer["error_message"] == "Authentication failed: invalid credentials"
    assert client.is_closed_by_peer()
    assert still_serves(bystander)


def test_wrong_plain_password_and_unknown_user_look_the_same(secure: SecureBroker) -> None:
    from kafkalite.protocol.sasl_plain import plain_message

    messages = set()
    for user, password in (("alice", "wrong"), ("nobody", "wrong")):
        client = handshake(secure, "PLAIN")
        answer = authenticate(client, plain_message(user, password))
        assert answer["error_code"] == SaslAuthenticationFailedError.errno
        messages.add(answer["error_message"])
        assert client.is_closed_by_peer()
    assert len(messages) == 1


def test_requests_before_authentication_close_the_connection(secure: SecureBroker,
                                                             bystander: WireClient) -> None:
    client = WireClient(secure.address("SASL_PLAINTEXT"), timeout=10)
    assert client.call(ApiKey.API_VERSIONS, 3, {"client_software_name": "t",
                                                "client_software_version": "1"})[
        "error_code"] == 0
    client.send(ApiKey.METADATA, 8, METADATA)
    assert client.is_closed_by_peer()
    after_handshake = handshake(secure, "PLAIN")
    after_handshake.send(ApiKey.METADATA, 8, METADATA)
    assert after_handshake.is_closed_by_peer()
    assert still_serves(bystander)


def test_an_unknown_mechanism_is_refused_and_closed(secure: SecureBroker) -> None:
    client = WireClient(secure.address("SASL_PLAINTEXT"), timeout=10)
    answer = client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
    assert answer["error_code"] == UnsupportedSaslMechanismError.errno
    assert set(answer["mechanisms"]) == {"PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"}
    assert client.is_closed_by_peer()


@pytest.mark.parametrize("listener", ["SSL", "SASL_SSL"])
def test_random_bytes_and_plaintext_on_a_tls_port_are_closed(
        secure: SecureBroker, bystander: WireClient, listener: str) -> None:
    host, port = secure.address(listener).rsplit(":", 1)
    for payload in (os.urandom(4096), b"\x16\x03\x01\x02\x00" + os.urandom(512)):
        with socket.create_connection((host, int(port)), timeout=10) as raw:
            raw.sendall(payload)
            assert _drained_to_eof(raw)
    plaintext = WireClient(secure.address(listener), timeout=10)
    plaintext.send(ApiKey.API_VERSIONS, 3, {"client_software_name": "t",
                                            "client_software_version": "1"})
    assert _drained_to_eof(plaintext.sock)
    # TLS clients still get in.
    context = ssl.create_default_context(cafile=str(secure.pki.ca))
    with socket.create_connection((host, int(port)), timeout=10) as raw, \
            context.wrap_socket(raw, server_hostname="127.0.0.1") as tls:
        assert tls.version() is not None
    assert still_serves(bystander)


def _drained_to_eof(sock: socket.socket) -> bool:
    """The broker closes: reads end (perhaps after a TLS alert) within the timeout."""
    try:
        for _ in range(100):
            if sock.recv(65536) == b"":
                return True
    except ConnectionResetError:
        return True
    return False


def test_failed_authentication_is_logged_for_operators(secure: SecureBroker,
                                                       caplog: pytest.LogCaptureFixture) -> None:
    from kafkalite.protocol.sasl_plain import plain_message

    with caplog.at_level("INFO", logger="kafkalite_server.network.connection"):
        client = handshake(secure, "PLAIN")
        authenticate(client, plain_message("alice", "wrong"))
        assert client.is_closed_by_peer()
    assert any("failed PLAIN authentication: Authentication failed: invalid credentials"
               in record.getMessage() and "SASL_PLAINTEXT" in record.getMessage()
               for record in caplog.records)
