"""``kafkalite acls add|list|remove`` against a broker with the ACL authorizer: an ACL the
CLI adds shows in the list and lets a refused principal in; removing it shuts them out."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite import AdminClient, Producer
from kafkalite.admin import NewTopic
from kafkalite.errors import TopicAuthorizationFailedError
from kafkalite_server import EmbeddedCluster
from tests.cli.cli_runner import Cli

USERS = {"admin": "admin-pw", "alice": "alice-pw", "bob": "bob-pw"}
JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
        'username="admin" password="admin-pw" '
        + " ".join(f'user_{u}="{p}"' for u, p in USERS.items()) + ";")
AUTHORIZER = {"listeners": "SASL_PLAINTEXT://127.0.0.1:0",
              "security.inter.broker.protocol": "SASL_PLAINTEXT",
              "sasl.enabled.mechanisms": "PLAIN", "sasl.jaas.config": JAAS,
              "authorizer.class.name": "kafka.security.authorizer.AclAuthorizer",
              "super.users": "User:admin"}
"""Operators log in as User:admin, a super user (as the brokers do to each other)."""
ADMIN = {"security_protocol": "SASL_PLAINTEXT", "sasl_mechanism": "PLAIN",
         "sasl_plain_username": "admin", "sasl_plain_password": USERS["admin"]}

ORDERS_ACL = ("`ResourcePattern(resourceType=TOPIC, name=orders, patternType=LITERAL)`",
              "(principal=User:alice, host=*, operation=WRITE, permissionType=ALLOW)")


class AdminCli(Cli):
    """The CLI run by the operator: every command logs in with the admin's properties."""

    def __init__(self, bootstrap_servers: str, properties: Path) -> None:
        super().__init__(bootstrap_servers)
        self.properties = properties

    def command(self, *args: str, bootstrap: str | None = None
                ) -> tuple[list[str], dict[str, str]]:
        return super().command(*args, "--command-config", str(self.properties),
                               bootstrap=bootstrap)


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        with AdminClient(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                         **ADMIN) as admin:
            admin.create_topics([NewTopic(t, 1, 1) for t in ("orders", "logs-app")])
        yield cluster


@pytest.fixture
def cli(cluster: EmbeddedCluster, tmp_path: Path) -> Iterator[Cli]:
    properties = tmp_path / "admin.properties"
    properties.write_text(
        "security.protocol=SASL_PLAINTEXT\nsasl.mechanism=PLAIN\n"
        "sasl.jaas.config=org.apache.kafka.common.security.plain.PlainLoginModule required "
        f'username="admin" password="{USERS["admin"]}";\n')
    cli = AdminCli(cluster.brokers[0].address("SASL_PLAINTEXT"), properties)
    yield cli
    cli("acls", "remove", "--topic", "*", "--resource-pattern-type", "any")


def alice_writes(cluster: EmbeddedCluster, topic: str) -> bool:
    """Whether User:alice may produce to ``topic`` (False: TOPIC_AUTHORIZATION_FAILED)."""
    producer = Producer(bootstrap_servers=cluster.brokers[0].address("SASL_PLAINTEXT"),
                        security_protocol="SASL_PLAINTEXT", sasl_mechanism="PLAIN",
                        sasl_plain_username="alice", sasl_plain_password=USERS["alice"],
                        max_block_ms=3000, retries=0)
    try:
        producer.send(topic, b"x").get(10)
        return True
    except TopicAuthorizationFailedError:
        return False
    finally:
        producer.close()


def test_add_list_and_remove_an_acl(cli: Cli, cluster: EmbeddedCluster) -> None:
    assert not alice_writes(cluster, "orders")

    added = cli.ok("acls", "add", "--allow-principal", "User:alice", "--operation", "Write",
                   "--topic", "orders")
    assert f"Added ACLs for resource {ORDERS_ACL[0]}:" in added and ORDERS_ACL[1] in added
    listed = cli.ok("acls", "list", "--topic", "orders")
    assert f"Current ACLs for resource {ORDERS_ACL[0]}:\n \t{ORDERS_ACL[1]}\n" in listed
    assert alice_writes(cluster, "orders")

    removed = cli.ok("acls", "remove", "--allow-principal", "User:alice", "--operation",
                     "write", "--topic", "orders")
    assert ORDERS_ACL[1] in removed
    assert cli.ok("acls", "list", "--topic", "orders") == ""
    assert not alice_writes(cluster, "orders")


def test_every_combination_is_added_and_list_filters(cli: Cli) -> None:
    cli.ok("acls", "add", "--allow-principal", "User:alice", "--allow-principal", "User:bob",
           "--allow-host", "10.0.0.1", "--operation", "Read", "--operation", "Describe",
           "--topic", "logs-", "--resource-pattern-type", "prefixed", "--group", "billing")
    cli.ok("acls", "add", "--deny-principal", "User:bob", "--operation", "DescribeConfigs",
           "--cluster")
    rows = json.loads(cli.ok("acls", "list", "--json"))
    granted = {(r["resource_type"], r["resource_name"], r["pattern_type"], r["principal"],
                r["host"], r["operation"], r["permission_type"]) for r in rows}
    expected = {(kind, name, pattern, who, "10.0.0.1", op, "ALLOW")
                for kind, name, pattern in (("TOPIC", "logs-", "PREFIXED"),
                                            ("GROUP", "billing", "PREFIXED"))
                for who in ("User:alice", "User:bob") for op in ("READ", "DESCRIBE")}
    expected.add(("CLUSTER", "kafka-cluster", "LITERAL", "User:bob", "*", "DESCRIBE_CONFIGS",
                  "DENY"))
    assert granted == expected

    # match: every ACL that applies to the topic logs-app (the prefixed one does)
    matching = json.loads(cli.ok("acls", "list", "--topic", "logs-app",
                                 "--resource-pattern-type", "match", "--json"))
    assert {(r["resource_name"], r["principal"]) for r in matching} == {
        ("logs-", "User:alice"), ("logs-", "User:bob")}
    bobs = json.loads(cli.ok("acls", "list", "--principal", "User:bob", "--json"))
    assert {r["principal"] for r in bobs} == {"User:bob"} and len(bobs) == 5

    # remove without --operation takes every operation of the principal on the resource
    cli.ok("acls", "remove", "--allow-principal", "User:bob", "--group", "billing",
           "--resource-pattern-type", "prefixed")
    left = json.loads(cli.ok("acls", "list", "--group", "billing", "--resource-pattern-type",
                             "prefixed", "--json"))
    assert {r["principal"] for r in left} == {"User:alice"} and len(left) == 2
    cli.ok("acls", "remove", "--cluster")
    assert json.loads(cli.ok("acls", "list", "--cluster", "--json")) == []


@pytest.mark.parametrize(("args", "message"), [
    (["add", "--operation", "Write", "--topic", "t"], "name a principal"),
    (["add", "--allow-principal", "User:alice", "--operation", "Write"], "name a resource"),
    (["add", "--allow-principal", "User:alice", "--operation", "Write", "--group", "g"],
     "Write is not an operation on a group"),
    (["add", "--allow-principal", "alice", "--topic", "t"], "'alice' is not TYPE:NAME"),
    (["add", "--allow-principal", "User:a", "--operation", "Fly", "--topic", "t"],
     "'Fly' is not one of"),
    (["add", "--deny-host", "1.2.3.4", "--allow-principal", "User:a", "--topic", "t"],
     "--deny-host needs an --deny-principal"),
    (["add", "--allow-principal", "User:a", "--topic", "t", "--resource-pattern-type",
      "match"], "invalid choice: 'match'"),
    (["remove"], "name a resource"),
])
def test_bad_arguments_are_one_line_usage_errors(cli: Cli, args: list[str],
                                                 message: str) -> None:
    result = cli("acls", *args)
    assert result.returncode == 2 and message in result.stderr, result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_a_broker_without_authorizer_says_so(broker_process: object) -> None:
    result = Cli(broker_process.bootstrap_servers)("acls", "list")  # type: ignore[attr-defined]
    assert result.returncode == 1
    assert "the broker has no authorizer" in result.stderr, result.stderr
