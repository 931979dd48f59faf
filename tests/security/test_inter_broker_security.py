"""Brokers whose only listener is SASL_SSL replicate to each other: followers and the
controller log in as the brokers' own principal (a super user) over TLS with test-made
certificates; a principal without ClusterAction fetching as a replica is refused."""

from __future__ import annotations

import ssl

import pytest

from kafkalite import Producer
from kafkalite.admin import NewTopic
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import TopicAuthorizationFailedError
from kafkalite.protocol.sasl_plain import plain_message
from kafkalite_server import EmbeddedCluster
from tests.conftest import WireClient
from tests.security.certs import Pki

JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="broker" password="broker-pw" user_broker="broker-pw" '
        'user_alice="alice-pw";')


def _config(pki: Pki) -> dict[str, str]:
    return {"listeners": "SASL_SSL://127.0.0.1:0", "security.inter.broker.protocol": "SASL_SSL",
            "sasl.mechanism.inter.broker.protocol": "PLAIN", "sasl.enabled.mechanisms": "PLAIN",
            "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
            "ssl.keystore.location": str(pki.server), "ssl.truststore.location": str(pki.ca),
            "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
            "super.users": "User:broker", "default.replication.factor": "3",
            "min.insync.replicas": "3", "offsets.topic.num.partitions": "1"}


def _client(pki: Pki, user: str, password: str) -> dict[str, object]:
    return {"security_protocol": "SASL_SSL", "ssl_cafile": str(pki.ca),
            "sasl_mechanism": "PLAIN", "sasl_plain_username": user,
            "sasl_plain_password": password}


def test_sasl_ssl_only_cluster_replicates_and_refuses_replica_fetch_without_cluster_action(
        pki: Pki) -> None:
    from kafkalite import AdminClient

    with EmbeddedCluster(num_brokers=3, config=_config(pki)) as cluster:
        address = cluster.brokers[0].address("SASL_SSL")
        with AdminClient(bootstrap_servers=address, **_client(pki, "broker", "broker-pw")) \
                as admin:
            admin.create_topics([NewTopic("secured", 1, 3)])
        producer = Producer(bootstrap_servers=address, acks="all", max_block_ms=30_000,
                            **_client(pki, "broker", "broker-pw"))
        try:
            # acks=all with min.insync.replicas=3: only acknowledged once both followers
            # fetched over SASL_SSL.
            assert producer.send("secured", b"everywhere").get(60).offset == 0
        finally:
            producer.close()
        context = ssl.create_default_context(cafile=str(pki.ca))
        alice = WireClient(address)
        alice.sock = context.wrap_socket(alice.sock, server_hostname="127.0.0.1")
        assert alice.call(ApiKey.SASL_HANDSHAKE, 1, {"mechanism": "PLAIN"})["error_code"] == 0
        assert alice.call(ApiKey.SASL_AUTHENTICATE, 2, {
            "auth_bytes": plain_message("alice", "alice-pw")})["error_code"] == 0
        response = alice.call(ApiKey.FETCH, 11, {
            "replica_id": 1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1 << 20,
            "isolation_level": 0, "session_id": 0, "session_epoch": -1,
            "topics": [{"topic": "secured", "partitions": [
                {"partition": 0, "current_leader_epoch": -1, "fetch_offset": 0,
                 "log_start_offset": -1, "partition_max_bytes": 1 << 20}]}],
            "forgotten_topics_data": [], "rack_id": ""})
        (partition,) = response["responses"][0]["partitions"]
        # Kafka answers a follower fetch without ClusterAction per partition.
        assert partition["error_code"] == TopicAuthorizationFailedError.errno
        assert not partition["records"]


@pytest.mark.parametrize(("settings", "key", "says"), [
    ({"security.inter.broker.protocol": "BOGUS"}, "security.inter.broker.protocol",
     "not one of"),
    ({"security.inter.broker.protocol": "SSL"}, "security.inter.broker.protocol",
     "not one of the listeners"),
    ({"security.inter.broker.protocol": "PLAINTEXT", "inter.broker.listener.name": "PLAINTEXT"},
     "security.inter.broker.protocol", "not both"),
])
def test_a_bad_inter_broker_setting_names_its_key(settings, key, says) -> None:
    from kafkalite.errors import ConfigError
    from kafkalite_server.config import BrokerConfig
    from kafkalite_server.network.listeners import resolve_listeners

    config = BrokerConfig.from_properties({"listeners": "PLAINTEXT://127.0.0.1:0", **settings})
    with pytest.raises(ConfigError, match=says) as error:
        resolve_listeners(config)
    assert key in str(error.value)
