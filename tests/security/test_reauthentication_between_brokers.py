"""KIP-368 between brokers: with connections.max.reauth.ms on the inter-broker SASL
listener, replica fetchers and the controller's channels re-authenticate on their
connections instead of being closed when their session ends."""

from __future__ import annotations

import logging
import time

import pytest

from kafkalite import AdminClient, Producer
from kafkalite.admin import NewTopic
from kafkalite_server import EmbeddedCluster

LIFETIME_MS = 2500
JAAS = ("org.apache.kafka.common.security.plain.PlainLoginModule required "
        'username="broker" password="broker-pw" user_broker="broker-pw";')
CONFIG = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
          "security.inter.broker.protocol": "SASL_PLAINTEXT",
          "sasl.mechanism.inter.broker.protocol": "PLAIN", "sasl.enabled.mechanisms": "PLAIN",
          "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
          "connections.max.reauth.ms": str(LIFETIME_MS), "min.insync.replicas": "2",
          "offsets.topic.num.partitions": "1"}
CLIENT = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
          "sasl_plain_username": "broker", "sasl_plain_password": "broker-pw"}


def test_brokers_re_authenticate_to_each_other(caplog: pytest.LogCaptureFixture) -> None:
    for logger in ("kafkalite_server.security.inter_broker",
                   "kafkalite_server.network.connection"):
        caplog.set_level(logging.DEBUG, logger=logger)
    with EmbeddedCluster(num_brokers=2, config=CONFIG) as cluster:
        address = cluster.brokers[0].address("SASL_PLAINTEXT")
        with AdminClient(bootstrap_servers=address, **CLIENT) as admin:
            admin.create_topics([NewTopic("replicated", 1, 2)])
        producer = Producer(bootstrap_servers=address, acks="all", linger_ms=0, **CLIENT)
        try:
            deadline = time.monotonic() + 2.4 * LIFETIME_MS / 1000
            sent = 0
            while time.monotonic() < deadline:
                # acks=all with min.insync.replicas=2: each waits for the follower's fetch
                assert producer.send("replicated", b"x").get(30).offset == sent
                sent += 1
                time.sleep(0.05)
        finally:
            producer.close()
    messages = [record.getMessage() for record in caplog.records]
    assert sum("re-authenticating to another broker" in m for m in messages) >= 2
    assert not [m for m in messages if "its SASL session expired" in m]
