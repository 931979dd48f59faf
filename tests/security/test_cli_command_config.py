"""``--command-config FILE``: the CLI over SASL_SSL with a Kafka client properties file; a
user refused by the authorizer until an admin (also through a file) adds an ACL; a key or
value that does not fit is one line naming the key."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite_server import EmbeddedCluster
from tests.cli.cli_runner import Cli
from tests.security.certs import Pki
from tests.security.conftest import PLAIN_USERS, SCRAM_USER, add_scram_user, security_config

AUTHORIZER = {"authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "super.users": "User:admin"}


def properties(path: Path, pki: Pki, user: str, password: str, mechanism: str = "PLAIN",
               **extra: str) -> Path:
    module = ("org.apache.kafka.common.security.plain.PlainLoginModule"
              if mechanism == "PLAIN" else
              "org.apache.kafka.common.security.scram.ScramLoginModule")
    lines = ["# a Kafka client properties file", "security.protocol=SASL_SSL",
             f"sasl.mechanism={mechanism}",
             f'sasl.jaas.config={module} required \\',
             f'    username="{user}" password="{password}";',
             f"ssl.truststore.location={pki.ca}", "ssl.truststore.type=PEM",
             "ssl.endpoint.identification.algorithm=https",
             *(f"{k}={v}" for k, v in extra.items())]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def cluster(pki: Pki) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=security_config(pki, **AUTHORIZER)) as cluster:
        add_scram_user(cluster, *SCRAM_USER, "SASL_PLAINTEXT",
                       security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                       sasl_plain_username="admin", sasl_plain_password=PLAIN_USERS["admin"])
        yield cluster


@pytest.fixture
def cli(cluster: EmbeddedCluster) -> Cli:
    return Cli(cluster.brokers[0].address("SASL_SSL").replace("127.0.0.1", "localhost"))


def test_a_user_is_refused_until_an_admin_adds_an_acl(cli: Cli, pki: Pki,
                                                       tmp_path: Path) -> None:
    admin = properties(tmp_path / "admin.properties", pki, "admin", PLAIN_USERS["admin"])
    alice = properties(tmp_path / "alice.properties", pki, "alice", PLAIN_USERS["alice"])
    cli.ok("topics", "create", "orders", "--command-config", str(admin))

    refused = cli("produce", "orders", "--command-config", str(alice), input="o-1\n")
    assert refused.returncode == 1 and "authoriz" in refused.stderr.lower(), refused.stderr
    denied = cli("acls", "add", "--allow-principal", "User:alice", "--topic", "orders",
                 "--command-config", str(alice))
    assert denied.returncode == 1 and "Cluster authorization failed" in denied.stderr

    cli.ok("acls", "add", "--allow-principal", "User:alice", "--operation", "Write",
           "--operation", "Read", "--topic", "orders", "--command-config", str(admin))
    cli.ok("acls", "add", "--allow-principal", "User:alice", "--operation", "Read",
           "--group", "alice-group", "--command-config", str(admin))
    cli.ok("produce", "orders", "--command-config", str(alice), input="o-1\n")
    assert cli.ok("consume", "orders", "--from-beginning", "-c", "1", "-g", "alice-group",
                  "--command-config", str(alice)) == "o-1\n"


def test_scram_login(cli: Cli, pki: Pki, tmp_path: Path) -> None:
    user, password = SCRAM_USER
    config = properties(tmp_path / "scram.properties", pki, user, password, "SCRAM-SHA-512")
    cli.ok("topics", "list", "--command-config", str(config))
    wrong = properties(tmp_path / "wrong.properties", pki, user, "nope", "SCRAM-SHA-512")
    result = cli("topics", "list", "--command-config", str(wrong))
    assert result.returncode == 1 and "authentication" in result.stderr.lower(), result.stderr


@pytest.mark.parametrize(("extra", "message"), [
    ({"sasl.kerberos.service.name": "kafka"}, "sasl.kerberos.service.name: not a setting"),
    ({"security.protocol": "SSLX"}, "security.protocol: 'SSLX' is not one of"),
    ({"ssl.keystore.location": "/nonexistent.pem"}, "ssl.keystore.location: no such file"),
    ({"ssl.truststore.type": "JKS"}, "ssl.truststore.type: only PEM"),
    ({"ssl.endpoint.identification.algorithm": "x"},
     "ssl.endpoint.identification.algorithm: 'x' is neither"),
    ({"sasl.mechanism": "SCRAM-SHA-256"}, "sasl.jaas.config: SCRAM-SHA-256 needs"),
])
def test_a_key_or_value_that_does_not_fit_is_named(cli: Cli, pki: Pki, tmp_path: Path,
                                                    extra: dict[str, str],
                                                    message: str) -> None:
    config = properties(tmp_path / "bad.properties", pki, "alice", "x", **extra)
    result = cli("topics", "list", "--command-config", str(config))
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
