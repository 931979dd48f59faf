"""The documented authenticated setup, for authorization tests: one SASL_PLAINTEXT
listener, PLAIN users, the brokers logging in to each other as ``User:admin`` (a super
user), and helpers that log in as a user over the raw protocol or with the AdminClient."""

from __future__ import annotations

from typing import Any

from kafkalite import AdminClient
from kafkalite.admin import (
    ACL,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourceType,
)
from kafkalite.protocol import ApiKey
from kafkalite.protocol.sasl_plain import plain_message
from kafkalite_server import EmbeddedCluster
from kafkalite_server.broker import Broker
from tests.conftest import WireClient

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw", "mallory": "mallory-pw"}
"""admin is the brokers' own principal and a super user; mallory never gets an ACL."""
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-pw" '
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
AUTHORIZER = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
              "security.inter.broker.protocol": "SASL_PLAINTEXT",
              "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": JAAS,
              "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "super.users": "User:admin",
              "offsets.topic.num.partitions": "1", "group.initial.rebalance.delay.ms": "0"}
"""The documented setup: one SASL listener, and the brokers log in to each other as
User:admin (the JAAS entry's username/password), a super user."""
SASL = "SASL_PLAINTEXT"


def login_plain(address: str, user: str, password: str) -> WireClient:
    """A wire client authenticated with SASL PLAIN (SaslHandshake v1, SaslAuthenticate v2)."""
    client = WireClient(address)
    assert client.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
    answer = client.call(ApiKey.SASL_AUTHENTICATE, 2,
                         {"auth_bytes": plain_message(user, password)})
    assert answer["error_code"] == 0, answer
    return client


def login(cluster: EmbeddedCluster | Broker, user: str) -> WireClient:
    """Logged in as ``user`` on the cluster's first broker, or on the broker given."""
    broker = cluster.brokers[0] if isinstance(cluster, EmbeddedCluster) else cluster
    return login_plain(broker.address(SASL), user, USERS[user])


def client_settings(user: str) -> dict[str, Any]:
    """kafkalite client settings that log in as ``user``."""
    return {"security_protocol": SASL, "sasl_mechanism": "PLAIN",
            "sasl_plain_username": user, "sasl_plain_password": USERS[user]}


def admin_client(cluster: EmbeddedCluster, user: str = "admin") -> AdminClient:
    return AdminClient(bootstrap_servers=cluster.brokers[0].address(SASL),
                       **client_settings(user))


def acl(principal: str, operation: ACLOperation, kind: ResourceType, name: str,
        permission: ACLPermissionType = ACLPermissionType.ALLOW,
        pattern: ACLResourcePatternType = ACLResourcePatternType.LITERAL) -> ACL:
    return ACL(principal, "*", operation, permission, ResourcePattern(kind, name, pattern))
