"""A broker with every kind of listener, a test CA, PLAIN users and SCRAM users."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from kafkalite_server import EmbeddedCluster
from tests.security.certs import Pki, make_pki

PLAIN_USERS = {"alice": "alice-secret", "admin": "admin-secret"}
SCRAM_USER = ("scrammy", "scram-secret")
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        + " ".join(f'user_{user}="{password}"' for user, password in PLAIN_USERS.items()) + ";")
LISTENERS = ("PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0,SASL_PLAINTEXT://127.0.0.1:0,"
             "SASL_SSL://127.0.0.1:0")


@dataclass
class SecureBroker:
    cluster: EmbeddedCluster
    pki: Pki

    def address(self, listener: str) -> str:
        return self.cluster.brokers[0].address(listener)


def security_config(pki: Pki, **extra: str) -> dict[str, str]:
    return {"listeners": LISTENERS, "ssl.keystore.location": str(pki.server),
            "ssl.truststore.location": str(pki.ca), "ssl.client.auth": "requested",
            "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "offsets.topic.num.partitions": "2", "group.initial.rebalance.delay.ms": "0",
            **extra}


def add_scram_user(cluster: EmbeddedCluster, user: str, password: str,
                   listener: str = "PLAINTEXT", **client: Any) -> None:
    """Through ``listener`` with the ``client`` settings (an authorizer's super user)."""
    from kafkalite import AdminClient
    from kafkalite.admin import UserScramCredentialUpsertion

    admin = AdminClient(bootstrap_servers=cluster.brokers[0].address(listener), **client)
    try:
        result = admin.alter_user_scram_credentials([
            UserScramCredentialUpsertion(user, "SCRAM-SHA-256", password),
            UserScramCredentialUpsertion(user, "SCRAM-SHA-512", password, iterations=8192)])
        assert result == {user: None}
    finally:
        admin.close()


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(Path(tmp_path_factory.mktemp("pki")))


@pytest.fixture(scope="module")
def secure(pki: Pki) -> Iterator[SecureBroker]:
    with EmbeddedCluster(config=security_config(pki)) as cluster:
        add_scram_user(cluster, *SCRAM_USER)
        yield SecureBroker(cluster, pki)
