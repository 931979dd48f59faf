"""Listeners from the command line, SCRAM users bootstrapped with ``kafkalite-server
scram-user``, the start warning, config errors naming the key, encrypted keys, client
certificates as principals, SaslHandshake v0 framing, and the SDK's typed error for a wrong
password."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from kafkalite import AdminClient, Producer
from kafkalite.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    NewTopic,
    ResourcePattern,
    ResourceType,
)
from kafkalite.errors import ConfigError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    SaslAuthenticationFailedError,
    TopicAuthorizationFailedError,
    UnsupportedSaslMechanismError,
)
from kafkalite.protocol.sasl_plain import plain_message
from kafkalite_server import EmbeddedCluster
from tests.conftest import REPO_ROOT, WireClient
from tests.security.certs import Pki, make_pki
from tests.security.conftest import PLAIN_USERS, SCRAM_USER, SecureBroker

SERVER = [sys.executable, "-m", "kafkalite_server"]


def run_server(*args: str, timeout: float = 30) -> subprocess.CompletedProcess[str]:
    return subprocess.run([*SERVER, *args], capture_output=True, text=True, timeout=timeout,
                          cwd=REPO_ROOT)


def test_cli_bootstraps_a_scram_user_and_serves_sasl_ssl(tmp_path: Path, pki: Pki) -> None:
    data = tmp_path / "data"
    stored = run_server("scram-user", "--data-dir", str(data), "--user", "ops",
                        "--password", "ops-secret", "--mechanism", "SCRAM-SHA-512")
    assert stored.returncode == 0, stored.stderr
    store = data / "cluster-metadata"
    kept = b"".join(path.read_bytes() for path in store.iterdir() if path.is_file())
    assert b"SCRAM-SHA-512" in kept and b"ops-secret" not in kept
    process = subprocess.Popen(
        [*SERVER, "start", "--data-dir", str(data), "--listeners",
         "SASL_SSL://127.0.0.1:0,PLAINTEXT://127.0.0.1:0",
         "--set", f"ssl.keystore.location={pki.server}",
         "--set", "sasl.enabled.mechanisms=SCRAM-SHA-512"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    try:
        assert process.stdout is not None
        lines = [process.stdout.readline() for _ in range(3)]
        assert lines[0].startswith("listening on 127.0.0.1:"), lines
        address = next(line.split()[-1] for line in lines if line.startswith(
            "listener SASL_SSL (SASL_SSL)"))
        options = ["-X", "security.protocol=SASL_SSL", "-X", f"ssl.ca.location={pki.ca}",
                   "-X", "sasl.mechanism=SCRAM-SHA-512", "-X", "sasl.username=ops",
                   "-X", "sasl.password=ops-secret"]
        subprocess.run(["kcat", "-b", address, "-P", "-t", "cli", *options], input="hi\n",
                       text=True, check=True, timeout=20, capture_output=True)
        out = subprocess.run(["kcat", "-b", address, "-C", "-t", "cli", "-o", "beginning",
                              "-c", "1", "-e", *options], text=True, check=True, timeout=20,
                             capture_output=True)
        assert out.stdout.strip() == "hi"
    finally:
        process.terminate()
        process.communicate(timeout=30)


def test_binding_beyond_loopback_without_authentication_warns(tmp_path: Path) -> None:
    process = subprocess.Popen([*SERVER, "start", "--data-dir", str(tmp_path), "--host",
                                "0.0.0.0", "--port", "0"], stdout=subprocess.PIPE,
                               stderr=subprocess.PIPE, text=True, cwd=REPO_ROOT)
    try:
        assert process.stdout is not None
        assert process.stdout.readline().startswith("listening on 0.0.0.0:")
    finally:
        process.terminate()
        _out, err = process.communicate(timeout=30)
    assert "without authentication" in err


@pytest.mark.parametrize("settings, key", [
    (["--listeners", "SSL://127.0.0.1:0"], "ssl.keystore.location"),
    (["--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--set", "sasl.enabled.mechanisms=PLAIN"],
     "sasl.jaas.config"),
    (["--listeners", "SASL_PLAINTEXT://127.0.0.1:0", "--set", "sasl.enabled.mechanisms=GSSAPI"],
     "sasl.enabled.mechanisms"),
    (["--listeners", "PLAINTEXT://127.0.0.1:0", "--set", "ssl.client.auth=maybe"],
     "ssl.client.auth"),
])
def test_config_errors_name_the_key(tmp_path: Path, settings: list[str], key: str) -> None:
    result = run_server("start", "--data-dir", str(tmp_path), *settings)
    assert result.returncode == 2
    assert f"config error: {key}: " in result.stderr


def test_an_encrypted_key_needs_its_password(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki", key_password="key-pw")
    base = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server)}
    with pytest.raises(ConfigError, match=r"^ssl\.keystore\.location: "):
        EmbeddedCluster(config=base).start()
    with EmbeddedCluster(config={**base, "ssl.key.password": "key-pw"}) as cluster:
        producer = Producer(bootstrap_servers=cluster.brokers[0].address("SSL"),
                            security_protocol="SSL", ssl_cafile=str(pki.ca))
        assert producer.send("enc", b"x").get(10).offset == 0
        producer.close()


def test_client_certificate_subject_is_the_principal(tmp_path: Path, pki: Pki) -> None:
    config = {"listeners": "SSL://127.0.0.1:0",
              "ssl.keystore.location": str(pki.server),
              "ssl.truststore.location": str(pki.ca), "ssl.client.auth": "required",
              "authorizer.class.name": "on", "super.users": "User:CN=admin,O=kafkalite-tests"}
    with EmbeddedCluster(config=config) as cluster:
        broker = cluster.brokers[0]
        admin_cert, admin_key = pki.client("admin")
        with AdminClient(bootstrap_servers=broker.address("SSL"), security_protocol="SSL",
                         ssl_cafile=str(pki.ca), ssl_certfile=str(admin_cert),
                         ssl_keyfile=str(admin_key)) as admin:
            admin.create_topics([NewTopic("certs", 1, 1)])
            admin.create_acls([ACL("User:CN=writer,O=kafkalite-tests", "*",
                                   ACLOperation.WRITE, ACLPermissionType.ALLOW,
                                   ResourcePattern(ResourceType.TOPIC, "certs"))])

        def producer_as(name: str) -> Producer:
            cert, key = pki.client(name)
            return Producer(bootstrap_servers=broker.address("SSL"), security_protocol="SSL",
                            ssl_cafile=str(pki.ca), ssl_certfile=str(cert),
                            ssl_keyfile=str(key), max_block_ms=5000)

        writer = producer_as("writer")
        assert writer.send("certs", b"signed").get(10).offset == 0
        writer.close()
        reader = producer_as("reader")
        with pytest.raises(TopicAuthorizationFailedError):
            reader.send("certs", b"nope").get(10)
        reader.close()
        anonymous = Producer(bootstrap_servers=broker.address("SSL"), security_protocol="SSL",
                             ssl_cafile=str(pki.ca), max_block_ms=3000)
        with pytest.raises(Exception):  # noqa: B017 - the TLS handshake itself fails
            anonymous.send("certs", b"no cert").get(5)
        anonymous.close()


def test_sasl_handshake_v0_takes_bare_tokens(secure: SecureBroker) -> None:
    client = WireClient(secure.address("SASL_PLAINTEXT"))
    assert client.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})["error_code"] == 0
    token = plain_message("alice", PLAIN_USERS["alice"])
    client.send_raw(len(token).to_bytes(4, "big") + token)
    assert client.receive_frame() == b""
    assert "brokers" in client.call(ApiKey.METADATA, 8, {
        "topics": None, "allow_auto_topic_creation": False,
        "include_cluster_authorized_operations": False,
        "include_topic_authorized_operations": False})
    wrong = WireClient(secure.address("SASL_PLAINTEXT"))
    wrong.call(ApiKey.SASL_HANDSHAKE, 0, {"mechanism": "PLAIN"})
    bad = plain_message("alice", "wrong")
    wrong.send_raw(len(bad).to_bytes(4, "big") + bad)
    assert wrong.is_closed_by_peer()


@pytest.mark.parametrize("mechanism, password, error", [
    ("SCRAM-SHA-256", "wrong", SaslAuthenticationFailedError),
    ("PLAIN", "wrong", SaslAuthenticationFailedError)])
def test_sdk_raises_the_authentication_error_at_once(secure: SecureBroker, mechanism: str,
                                                     password: str, error: type) -> None:
    user = SCRAM_USER[0] if mechanism.startswith("SCRAM") else "alice"
    conf = {"bootstrap_servers": secure.address("SASL_SSL"), "security_protocol": "SASL_SSL",
            "ssl_cafile": str(secure.pki.ca), "sasl_mechanism": mechanism,
            "sasl_plain_username": user, "sasl_plain_password": password}
    started = time.monotonic()
    producer = Producer(**conf, max_block_ms=30_000)
    with pytest.raises(error, match="invalid credentials"):
        producer.send("never", b"x").get(30)
    producer.close()
    with pytest.raises(error):
        AdminClient(**conf, request_timeout_ms=30_000).list_topics()
    assert time.monotonic() - started < 20  # not the 30 s timeouts


def test_sdk_refuses_a_mechanism_the_listener_does_not_offer(tmp_path: Path, pki: Pki) -> None:
    config = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
              "sasl.enabled.mechanisms": "SCRAM-SHA-512"}
    with EmbeddedCluster(config=config) as cluster:
        producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                            security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                            sasl_plain_username="a", sasl_plain_password="b",
                            max_block_ms=20_000)
        with pytest.raises(UnsupportedSaslMechanismError):
            producer.send("t", b"x").get(20)
        producer.close()


def test_certificates_made_with_the_openssl_command_work_too(tmp_path: Path) -> None:
    pki = make_pki(tmp_path / "pki", key_password="pw", use_openssl=True)
    config = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.location": str(pki.server),
              "ssl.key.password": "pw", "ssl.truststore.location": str(pki.ca),
              "ssl.client.auth": "required"}
    cert, key = pki.client("openssl-client")
    with EmbeddedCluster(config=config) as cluster:
        producer = Producer(bootstrap_servers=cluster.brokers[0].address("SSL"),
                            security_protocol="SSL", ssl_cafile=str(pki.ca),
                            ssl_certfile=str(cert), ssl_keyfile=str(key))
        assert producer.send("openssl", b"x").get(10).offset == 0
        producer.close()
