"""The source and sink against a secured broker, with Spark's Kafka security options:
SASL_SSL with SCRAM and PLAIN (JAAS lines, a PEM truststore, host name checks), SSL with a
PEM client keystore, and options that do not fit refused naming the option."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pyspark.errors import PySparkException
from pyspark.sql import DataFrame, SparkSession

from kafkalite import AdminClient
from kafkalite.admin import NewTopic
from kafkalite.errors import ConfigError
from kafkalite.spark.options import parse_read_options
from kafkalite_server import EmbeddedCluster
from tests.security.certs import Pki, make_pki
from tests.security.conftest import PLAIN_USERS, SCRAM_USER, add_scram_user, security_config

PLAIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
TOPIC = "secured-events"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return make_pki(Path(tmp_path_factory.mktemp("spark-pki")))


@pytest.fixture(scope="module")
def cluster(pki: Pki) -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=security_config(pki)) as cluster:
        add_scram_user(cluster, *SCRAM_USER)
        admin = AdminClient(bootstrap_servers=cluster.brokers[0].address("PLAINTEXT"))
        try:
            admin.create_topics([NewTopic(TOPIC, 2, 1)])
        finally:
            admin.close()
        yield cluster


def address(cluster: EmbeddedCluster, listener: str) -> str:
    """By name, so the broker certificate's host name is checked (``localhost``)."""
    return cluster.brokers[0].address(listener).replace("127.0.0.1", "localhost")


def sasl_ssl(cluster: EmbeddedCluster, pki: Pki, mechanism: str, user: str,
             password: str) -> dict[str, str]:
    module = PLAIN_MODULE if mechanism == "PLAIN" else SCRAM_MODULE
    return {"kafka.bootstrap.servers": address(cluster, "SASL_SSL"),
            "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": mechanism,
            "kafka.sasl.jaas.config": f'{module} required username="{user}" '
                                      f'password="{password}";',
            "kafka.ssl.truststore.location": str(pki.ca),
            "kafka.ssl.truststore.type": "PEM",
            "kafka.ssl.endpoint.identification.algorithm": "https"}


def read(spark: SparkSession, options: dict[str, str]) -> DataFrame:
    return spark.read.format("kafkalite").options(**options).option("subscribe", TOPIC).load()


def test_write_with_scram_and_read_with_plain_over_sasl_ssl(
        spark: SparkSession, cluster: EmbeddedCluster, pki: Pki) -> None:
    rows = [(f"k{i}", f"v{i}") for i in range(60)]
    spark.createDataFrame(rows, "key string, value string").write.format("kafkalite") \
        .options(**sasl_ssl(cluster, pki, "SCRAM-SHA-512", *SCRAM_USER)) \
        .option("topic", TOPIC).save()
    back = read(spark, sasl_ssl(cluster, pki, "PLAIN", "alice", PLAIN_USERS["alice"]))
    got = sorted((r.key.decode(), r.value.decode()) for r in back.collect())
    assert got == sorted(rows)


def test_read_over_ssl_with_a_pem_client_keystore(spark: SparkSession, cluster: EmbeddedCluster,
                                                  pki: Pki, tmp_path: Path) -> None:
    cert, key = pki.client("spark-reader")
    keystore = tmp_path / "spark-reader.pem"
    keystore.write_bytes(cert.read_bytes() + key.read_bytes())
    spark.createDataFrame([("over-ssl",)], "value string").write.format("kafkalite") \
        .options(**sasl_ssl(cluster, pki, "SCRAM-SHA-256", *SCRAM_USER)) \
        .option("topic", TOPIC).save()
    options = {"kafka.bootstrap.servers": address(cluster, "SSL"),
               "kafka.security.protocol": "SSL",
               "kafka.ssl.truststore.location": str(pki.ca),
               "kafka.ssl.truststore.type": "PEM",
               "kafka.ssl.keystore.location": str(keystore),
               "kafka.ssl.keystore.type": "PEM"}
    assert b"over-ssl" in {r.value for r in read(spark, options).collect()}


def test_a_wrong_password_fails_the_read(spark: SparkSession, cluster: EmbeddedCluster,
                                         pki: Pki) -> None:
    options = {**sasl_ssl(cluster, pki, "PLAIN", "alice", "wrong"),
               "fetchOffset.numRetries": "0"}
    with pytest.raises(PySparkException, match=r"(?i)authentication"):
        read(spark, options).collect()


def test_an_option_that_does_not_fit_is_named_by_spark(
        spark: SparkSession, cluster: EmbeddedCluster, pki: Pki) -> None:
    options = {**sasl_ssl(cluster, pki, "SCRAM-SHA-256", *SCRAM_USER),
               "kafka.sasl.jaas.config": f'{PLAIN_MODULE} required username="a" password="b";'}
    with pytest.raises(PySparkException, match=f"kafka.sasl.jaas.config: SCRAM-SHA-256 needs "
                                               f"{SCRAM_MODULE}"):
        read(spark, options).collect()


@pytest.mark.parametrize(("extra", "key", "message"), [
    ({"kafka.security.protocol": "TLS"}, "kafka.security.protocol", "is not one of"),
    ({"kafka.sasl.mechanism": "GSSAPI"}, "kafka.sasl.mechanism", "is not one of"),
    ({"kafka.sasl.jaas.config": "username=alice"}, "kafka.sasl.jaas.config", "expected"),
    ({"kafka.sasl.jaas.config": f"{PLAIN_MODULE} required username=\"alice\";"},
     "kafka.sasl.jaas.config", "no password"),
    ({"kafka.ssl.truststore.location": "/nonexistent/ca.pem"},
     "kafka.ssl.truststore.location", "no such file"),
    ({"kafka.ssl.truststore.type": "JKS"}, "kafka.ssl.truststore.type", "only PEM"),
    ({"kafka.ssl.keystore.password": "x"}, "kafka.ssl.keystore.password",
     "ssl.key.password"),
    ({"kafka.ssl.endpoint.identification.algorithm": "dns"},
     "kafka.ssl.endpoint.identification.algorithm", "neither https nor empty"),
    ({"kafka.ssl.protocol": "TLSv1.3"}, "kafka.ssl.protocol", "not a setting"),
    ({"kafka.sasl.jaas.config": None}, "kafka.sasl.jaas.config", "needs a user name"),
    ({"kafka.sasl.mechanism": None}, "kafka.sasl.mechanism", "must be one of"),
])
def test_security_options_that_do_not_fit_are_named(pki: Pki, extra: dict[str, Any], key: str,
                                                    message: str) -> None:
    options = {**sasl_ssl_options(pki), **extra}
    options = {k: v for k, v in options.items() if v is not None}
    with pytest.raises(ConfigError) as info:
        parse_read_options({**options, "subscribe": "t"}, streaming=False)
    assert info.value.key == key
    assert message in str(info.value)


def sasl_ssl_options(pki: Pki) -> dict[str, str]:
    return {"kafka.bootstrap.servers": "localhost:1", "kafka.security.protocol": "SASL_SSL",
            "kafka.sasl.mechanism": "PLAIN",
            "kafka.sasl.jaas.config": f'{PLAIN_MODULE} required username="a" password="b";',
            "kafka.ssl.truststore.location": str(pki.ca)}


def test_security_options_become_client_settings(pki: Pki) -> None:
    options = parse_read_options({**sasl_ssl_options(pki), "subscribe": "t",
                                  "kafka.ssl.endpoint.identification.algorithm": "",
                                  "kafka.ssl.key.password": "k"}, streaming=False)
    assert {k: v for k, v in options.client_config.items() if k != "bootstrap_servers"} == {
        "security_protocol": "SASL_SSL", "sasl_mechanism": "PLAIN",
        "sasl_plain_username": "a", "sasl_plain_password": "b",
        "ssl_cafile": str(pki.ca), "ssl_check_hostname": False, "ssl_password": "k"}
