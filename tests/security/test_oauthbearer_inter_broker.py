"""Brokers that log in to each other with OAUTHBEARER (``sasl.mechanism.inter.broker.protocol``),
with the unsecured tokens Kafka's login module makes from ``unsecuredLoginStringClaim_sub``."""

from __future__ import annotations

import pytest

from kafkalite import AdminClient, Producer
from kafkalite.admin import NewTopic
from kafkalite.errors import ConfigError
from kafkalite.protocol.sasl_oauthbearer import decode_unsecured_token
from kafkalite_server import EmbeddedCluster
from kafkalite_server.security.oauthbearer import UnsecuredLoginTokens
from tests.security.test_oauthbearer_units import NOW_S

JAAS = ("org.apache.kafka.common.security.oauthbearer.OAuthBearerLoginModule required "
        'unsecuredLoginStringClaim_sub="broker" unsecuredLoginListClaim_scope=",kafka,admin" '
        'unsecuredLoginNumberClaim_level="3" unsecuredLoginLifetimeSeconds="600";')
CONFIG = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
          "security.inter.broker.protocol": "SASL_PLAINTEXT",
          "sasl.enabled.mechanisms": "OAUTHBEARER",
          "sasl.mechanism.inter.broker.protocol": "OAUTHBEARER",
          "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config": JAAS,
          "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
          "super.users": "User:broker", "min.insync.replicas": "2",
          "offsets.topic.num.partitions": "1"}


def test_the_login_module_options_make_the_brokers_token() -> None:
    key = "listener.name.sasl_plaintext.oauthbearer.sasl.jaas.config"
    tokens = UnsecuredLoginTokens(key, {"unsecuredLoginStringClaim_sub": "broker",
                                        "unsecuredLoginListClaim_scope": ",kafka,admin",
                                        "unsecuredLoginNumberClaim_level": "3",
                                        "unsecuredLoginLifetimeSeconds": "600"},
                                  now_s=lambda: NOW_S)
    header, claims = decode_unsecured_token(tokens.token())
    assert header == {"alg": "none"}
    assert claims == {"sub": "broker", "scope": ["kafka", "admin"], "level": 3,
                      "iat": NOW_S, "exp": NOW_S + 600}
    with pytest.raises(ConfigError, match="unsecuredLoginStringClaim_sub"):
        UnsecuredLoginTokens(key, {})


class BrokerTokens:
    def token(self) -> str:
        return UnsecuredLoginTokens("test", {"unsecuredLoginStringClaim_sub": "broker"}).token()


def test_a_cluster_replicates_over_oauthbearer_logins() -> None:
    settings = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "OAUTHBEARER",
                "sasl_oauth_token_provider": BrokerTokens()}
    with EmbeddedCluster(num_brokers=2, config=CONFIG) as cluster:
        address = cluster.brokers[0].address("SASL_PLAINTEXT")
        with AdminClient(bootstrap_servers=address, **settings) as admin:
            admin.create_topics([NewTopic("replicated", 1, 2)])
        producer = Producer(bootstrap_servers=address, acks="all", max_block_ms=30_000,
                            **settings)
        try:
            # acks=all with min.insync.replicas=2: acknowledged once the follower fetched.
            assert producer.send("replicated", b"both").get(60).offset == 0
        finally:
            producer.close()
