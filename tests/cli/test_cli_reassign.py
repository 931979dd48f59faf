"""``kafkalite partitions reassign`` on a three-broker cluster: a broker that was away when
a topic was created gets replicas through --generate, --execute and --verify, with
kafka-reassign-partitions' documents; --list and --cancel; bad documents and unknown
brokers are refused naming the problem. The plan's arithmetic is tested purely below."""

from __future__ import annotations

import json
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path

import pytest
from cli_runner import Cli

from kafkalite.cli.options import CliError
from kafkalite.cli.reassignment_plan import parse_reassignment, propose, render
from kafkalite_server import EmbeddedCluster


@pytest.fixture(scope="module")
def cluster() -> Iterator[EmbeddedCluster]:
    with EmbeddedCluster(num_brokers=3) as cluster:
        yield cluster


def _document(text: str, heading: str) -> dict:
    lines = text.splitlines()
    return json.loads(next(line for line in lines[lines.index(heading) + 1:] if line))


def test_generate_execute_verify_moves_replicas_onto_a_broker_that_was_away(
        cluster: EmbeddedCluster, tmp_path: Path) -> None:
    cluster.stop_broker(2)
    cli = Cli(cluster.bootstrap_servers)
    cli.ok("topics", "create", "orders", "--partitions", "3", "--replication-factor", "2")
    cluster.restart_broker(2)
    cli = Cli(cluster.bootstrap_servers)
    topics = tmp_path / "topics.json"
    topics.write_text(json.dumps({"version": 1, "topics": [{"topic": "orders"}]}))
    generated = cli.ok("partitions", "reassign", "--generate", "--topics-to-move-json-file",
                       str(topics), "--broker-list", "0,1,2")
    current = _document(generated, "Current partition replica assignment")
    assert all(set(p["replicas"]) == {0, 1} for p in current["partitions"])
    proposed = _document(generated, "Proposed partition reassignment configuration")
    load = Counter(b for p in proposed["partitions"] for b in p["replicas"])
    assert load == {0: 2, 1: 2, 2: 2}
    plan = tmp_path / "plan.json"
    plan.write_text(json.dumps(proposed))

    executed = cli.ok("partitions", "reassign", "--execute", "--reassignment-json-file",
                      str(plan))
    assert "Save this to use as the --reassignment-json-file option during rollback" in executed
    assert "Successfully started partition reassignments for orders-0" in executed
    deadline = time.monotonic() + 30
    while True:
        verified = cli("partitions", "reassign", "--verify", "--reassignment-json-file",
                       str(plan))
        if verified.returncode == 0 or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert verified.returncode == 0, verified.stdout
    assert verified.stdout.count("is completed.") == 3
    described = json.loads(cli.ok("topics", "describe", "orders", "--json"))[0]
    assert {p["partition"]: p["replicas"] for p in described["partitions"]} == {
        p["partition"]: p["replicas"] for p in proposed["partitions"]}
    assert cli.ok("partitions", "reassign", "--list") == "No partition reassignments found.\n"
    cancelled = cli.ok("partitions", "reassign", "--cancel", "--reassignment-json-file",
                       str(plan))
    assert cancelled == "None of the specified partition reassignments are active.\n"


def test_bad_documents_and_unknown_brokers_are_refused_by_name(
        cluster: EmbeddedCluster, tmp_path: Path) -> None:
    cli = Cli(cluster.bootstrap_servers)
    cli.ok("topics", "create", "refused", "--partitions", "1", "--replication-factor", "1")
    bad = tmp_path / "bad.json"
    bad.write_text("{not json")
    result = cli("partitions", "reassign", "--execute", "--reassignment-json-file", str(bad))
    assert result.returncode != 0 and f"{bad}: not JSON" in result.stderr
    unknown = tmp_path / "unknown.json"
    unknown.write_text(json.dumps({"version": 1, "partitions": [
        {"topic": "refused", "partition": 0, "replicas": [0, 7]}]}))
    result = cli("partitions", "reassign", "--execute", "--reassignment-json-file",
                 str(unknown))
    assert result.returncode != 0 and "names broker(s) 7" in result.stderr
    result = cli("partitions", "reassign", "--generate", "--topics-to-move-json-file",
                 str(unknown), "--broker-list", "0,1")
    assert result.returncode != 0 and "expected {\"topics\"" in result.stderr
    result = cli("partitions", "reassign", "--verify")
    assert result.returncode != 0 and "--verify needs --reassignment-json-file" in result.stderr


def test_a_document_naming_a_broker_twice_is_refused() -> None:
    text = json.dumps({"partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1]}]})
    with pytest.raises(CliError, match=r"plan.json: partition t-0 names a broker twice"):
        parse_reassignment(text, "plan.json")


def test_the_proposal_keeps_what_it_can_and_spreads_racks() -> None:
    current = {("t", p): [1, 2] for p in range(4)}
    proposed = propose(current, {1: "a", 2: "a", 3: "b", 4: "b"})
    assert all(len(set(r)) == 2 for r in proposed.values())
    # every partition gets a replica in rack b, and keeps one of its current replicas
    assert all({1, 2} & set(r) and {3, 4} & set(r) for r in proposed.values())
    assert Counter(b for r in proposed.values() for b in r) == {1: 2, 2: 2, 3: 2, 4: 2}
    assert Counter(r[0] for r in proposed.values()) == {1: 1, 2: 1, 3: 1, 4: 1}
    # nothing to move: the same plan back
    balanced = {("t", 0): [1, 2], ("t", 1): [2, 1]}
    assert propose(balanced, {1: None, 2: None}) == balanced
    assert parse_reassignment(render(proposed), "x") == proposed
    with pytest.raises(CliError, match="replication factor 2 is larger than the 1 brokers"):
        propose(balanced, {1: None})
