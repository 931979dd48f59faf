"""``kafkalite topics`` and ``kafkalite groups`` on a broker process."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pytest
from cli_runner import REPO_ROOT, Cli
from test_cli_basics import assert_one_line_failure


def test_topics_create_describe_list_delete(cli: Cli, topic: str) -> None:
    out = cli.ok("topics", "create", topic, "--partitions", "3", "--replication-factor", "1",
                 "--config", "retention.ms=3600000", "--config", "cleanup.policy=delete")
    assert out.strip() == f"Created topic {topic}."
    assert topic in cli.ok("topics", "list").split()
    assert "__consumer_offsets" not in cli.ok("topics", "list").split()

    described = json.loads(cli.ok("topics", "describe", topic, "--json"))
    assert [t["name"] for t in described] == [topic]
    assert [p["partition"] for p in described[0]["partitions"]] == [0, 1, 2]
    assert described[0]["configs"]["retention.ms"] == "3600000"
    text = cli.ok("topics", "describe", topic)
    # Only what differs from Kafka's defaults: the two settings given at creation.
    assert f"Topic: {topic}\tPartitionCount: 3\tReplicationFactor: 1\t" \
           "Configs: cleanup.policy=delete,retention.ms=3600000\n" in text
    assert described[0]["configs"] == {"cleanup.policy": "delete", "retention.ms": "3600000"}
    assert f"\tTopic: {topic}\tPartition: 2\tLeader: 0\tReplicas: 0\tIsr: 0" in text

    again = cli("topics", "create", topic)
    assert_one_line_failure(again, f"cannot create topic '{topic}': ")
    assert "already exists" in again.stderr and "[Error" not in again.stderr
    assert cli.ok("topics", "create", topic, "--if-not-exists") == ""

    assert cli.ok("topics", "delete", topic).strip() == f"Deleted topic {topic}."
    assert topic not in cli.ok("topics", "list").split()
    assert_one_line_failure(cli("topics", "describe", topic), f"unknown topic '{topic}'")


def test_topics_create_rejects_a_bad_config(cli: Cli, topic: str) -> None:
    result = cli("topics", "create", topic, "--config", "retention.ms=soon")
    assert_one_line_failure(result, f"cannot create topic '{topic}': retention.ms")
    assert "[Error" not in result.stderr


def test_topic_refusals_are_one_sentence(cli: Cli, topic: str) -> None:
    result = cli("topics", "delete", topic)
    assert_one_line_failure(result, f"cannot delete topic '{topic}': no such topic")
    assert "[Error" not in result.stderr
    result = cli("topics", "create", topic, "--replication-factor", "3")
    assert_one_line_failure(result, f"cannot create topic '{topic}': replication factor 3")
    cli.ok("topics", "create", topic)
    out = cli("topics", "delete", topic, topic + "-missing")
    assert out.stdout.strip() == f"Deleted topic {topic}."
    assert_one_line_failure(out, f"cannot delete topic '{topic}-missing': no such topic")


def commit_some(cli: Cli, topic: str, group: str, produced: int, consumed: int) -> None:
    cli.ok("topics", "create", topic, "--partitions", "2")
    cli.ok("produce", topic, "--partition", "0", input="".join(f"a{n}\n" for n in range(produced)))
    cli.ok("produce", topic, "--partition", "1", input="b\n")
    cli.ok("consume", topic, "--group", group, "--partition", "0", "--from-beginning",
           "--max-messages", str(consumed))


def _peer_view(servers: str, topic: str) -> tuple[int, dict[str, str]]:
    """The topic's partition count and non-default configs as confluent-kafka sees them."""
    from confluent_kafka.admin import AdminClient as PeerAdmin
    from confluent_kafka.admin import ConfigResource as PeerResource

    admin = PeerAdmin({"bootstrap.servers": servers})
    partitions = len(admin.list_topics(topic, timeout=30).topics[topic].partitions)
    resource = PeerResource("topic", topic)
    entries = admin.describe_configs([resource])[resource].result(timeout=30)
    return partitions, {name: entry.value for name, entry in entries.items()
                        if not entry.is_default}


def test_topics_alter_adds_partitions_and_sets_and_deletes_configs(cli: Cli, topic: str
                                                                    ) -> None:
    cli.ok("topics", "create", topic, "--partitions", "2")
    out = cli.ok("topics", "alter", topic, "--partitions", "5", "--config", "retention.ms=60000",
                 "--config", "cleanup.policy=compact")
    assert out == (f"Altered topic {topic}: partitions 2 -> 5; "
                   "set retention.ms=60000, cleanup.policy=compact.\n")
    assert _peer_view(cli.bootstrap_servers, topic) == (
        5, {"retention.ms": "60000", "cleanup.policy": "compact"})
    assert "Configs: cleanup.policy=compact,retention.ms=60000\n" in cli.ok(
        "topics", "describe", topic)

    out = cli.ok("topics", "alter", topic, "--delete-config", "retention.ms")
    assert out == f"Altered topic {topic}: deleted retention.ms.\n"
    assert _peer_view(cli.bootstrap_servers, topic) == (5, {"cleanup.policy": "compact"})


def test_topics_alter_refusals_name_the_topic_and_the_cause(cli: Cli, topic: str) -> None:
    cli.ok("topics", "create", topic, "--partitions", "3")
    fewer = cli("topics", "alter", topic, "--partitions", "2")
    assert_one_line_failure(fewer, f"cannot alter topic '{topic}': ")
    assert "3" in fewer.stderr and "[Error" not in fewer.stderr
    assert_one_line_failure(cli("topics", "alter", topic, "--config", "retention.ms=soon"),
                            f"cannot alter topic '{topic}': ")
    assert_one_line_failure(cli("topics", "alter", topic, "--config", "no.such.key=1"),
                            "no.such.key")
    assert_one_line_failure(cli("topics", "alter", topic + "-missing", "--partitions", "4"),
                            f"unknown topic '{topic}-missing'")
    nothing = cli("topics", "alter", topic)
    assert nothing.returncode == 2 and "nothing to alter" in nothing.stderr
    both = cli("topics", "alter", topic, "--config", "retention.ms=1", "--delete-config",
               "retention.ms")
    assert both.returncode == 2 and "retention.ms" in both.stderr
    assert _peer_view(cli.bootstrap_servers, topic) == (3, {})


def test_groups_describe_shows_committed_offsets_and_lag(cli: Cli, topic: str,
                                                         tmp_path: Path) -> None:
    group = f"{topic}-group"
    commit_some(cli, topic, group, produced=5, consumed=2)
    assert group in cli.ok("groups", "list").split()

    view = json.loads(cli.ok("groups", "describe", group, "--json"))
    assert view["state"] == "Empty" and view["members"] == []
    assert view["partitions"] == [{"topic": topic, "partition": 0, "committed": 2,
                                   "end_offset": 5, "lag": 3, "member_id": None}]
    assert view["total_lag"] == 3
    text = cli.ok("groups", "describe", group)
    header, row = text.strip().splitlines()[-2:]
    assert header.split() == ["GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET",
                              "LOG-END-OFFSET", "LAG", "CONSUMER-ID", "HOST", "CLIENT-ID"]
    assert row.split() == [group, topic, "0", "2", "5", "3", "-", "-", "-"]

    pytest.importorskip("matplotlib")
    png = tmp_path / "group.png"
    cli.ok("groups", "describe", group, "--plot", str(png))
    assert png.read_bytes().startswith(b"\x89PNG")


def test_groups_describe_unknown_group(cli: Cli) -> None:
    assert_one_line_failure(cli("groups", "describe", "no-such-group"),
                            "consumer group 'no-such-group' does not exist")


def test_reset_offsets_dry_run_then_execute(cli: Cli, topic: str) -> None:
    group = f"{topic}-group"
    commit_some(cli, topic, group, produced=5, consumed=4)

    def committed() -> dict[int, int | None]:
        view = json.loads(cli.ok("groups", "describe", group, "--json"))
        return {row["partition"]: row["committed"] for row in view["partitions"]}

    plan = cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-earliest")
    assert [line.split() for line in plan.splitlines()[1:3]] == [
        [group, topic, "0", "0"], [group, topic, "1", "0"]]
    assert "dry run" in plan
    assert committed() == {0: 4}

    cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "1", "--execute")
    assert committed() == {0: 1, 1: 1}
    cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-offset", "99", "--execute")
    assert committed() == {0: 5, 1: 1}  # clamped to each partition's end
    cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-latest", "--execute")
    assert committed() == {0: 5, 1: 1}
    cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-datetime",
           "2000-01-01T00:00:00+00:00", "--execute")
    assert committed() == {0: 0, 1: 0}
    cli.ok("groups", "reset-offsets", group, "--topic", topic, "--to-datetime",
           "2999-01-01T00:00:00+00:00", "--execute")
    assert committed() == {0: 5, 1: 1}  # no record that recent: the end
    rest = cli.ok("consume", topic, "--group", group, "--timeout-ms", "1500")
    assert rest == ""


def test_active_group_is_described_with_its_member_and_refuses_a_reset(cli: Cli,
                                                                      topic: str) -> None:
    group = f"{topic}-group"
    cli.ok("topics", "create", topic, "--partitions", "2")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT),
           "KAFKALITE_BOOTSTRAP_SERVERS": cli.bootstrap_servers}
    member = subprocess.Popen([sys.executable, "-m", "kafkalite.cli", "consume", topic,
                               "--group", group], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        view = wait_for_members(cli, group)
        (only,) = view["members"]
        assert sorted(map(tuple, only["partitions"])) == [(topic, 0), (topic, 1)]
        assert only["client_id"] == "kafkalite-cli"
        assert view["state"] == "Stable"
        result = cli("groups", "reset-offsets", group, "--topic", topic, "--to-earliest",
                     "--execute")
        assert_one_line_failure(result, "has 1 active members")
    finally:
        member.terminate()
        member.wait(30)


def wait_for_members(cli: Cli, group: str, timeout: float = 30) -> dict[str, object]:
    deadline = time.monotonic() + timeout
    while True:
        result = cli("groups", "describe", group, "--json")
        if result.returncode == 0:
            view: dict[str, object] = json.loads(result.stdout)
            if view["members"] and view["state"] == "Stable":
                return view
        assert time.monotonic() < deadline, f"no stable member in {group}: {result}"
        time.sleep(0.2)


def test_groups_delete_a_whole_group_or_one_topics_offsets(cli: Cli, topic: str) -> None:
    group = f"{topic}-group"
    commit_some(cli, topic, group, produced=3, consumed=2)
    other = f"{topic}-other"
    cli.ok("topics", "create", other)
    cli.ok("produce", other, input="x\n")
    cli.ok("consume", other, "--group", group, "--from-beginning", "--max-messages", "1")

    table = cli.ok("groups", "delete", group, "--topic", other)
    assert [line.split() for line in table.strip().splitlines()] == [
        ["GROUP", "TOPIC", "PARTITION", "STATUS"], [group, other, "0", "deleted"]]
    view = json.loads(cli.ok("groups", "describe", group, "--json"))
    assert [(row["topic"], row["committed"]) for row in view["partitions"]] == [(topic, 2)]

    assert cli.ok("groups", "delete", group) == f"Deleted consumer group '{group}'.\n"
    assert group not in cli.ok("groups", "list").split()
    assert_one_line_failure(cli("groups", "delete", group),
                            f"consumer group '{group}' does not exist")
    assert_one_line_failure(cli("groups", "delete", group, "--topic", topic),
                            f"consumer group '{group}' does not exist")
    result = cli("groups", "delete", "a", "b", "--topic", topic)
    assert result.returncode == 2 and "exactly one GROUP" in result.stderr


def test_groups_delete_refuses_a_group_with_members(cli: Cli, topic: str) -> None:
    group = f"{topic}-group"
    cli.ok("topics", "create", topic)
    cli.ok("produce", topic, input="x\n")
    cli.ok("consume", topic, "--group", group, "--from-beginning", "--max-messages", "1")
    env = {**os.environ, "PYTHONPATH": str(REPO_ROOT),
           "KAFKALITE_BOOTSTRAP_SERVERS": cli.bootstrap_servers}
    member = subprocess.Popen([sys.executable, "-m", "kafkalite.cli", "consume", topic,
                               "--group", group], env=env, stdout=subprocess.DEVNULL,
                              stderr=subprocess.DEVNULL)
    try:
        wait_for_members(cli, group)
        assert_one_line_failure(cli("groups", "delete", group),
                                f"consumer group '{group}' has active members")
        assert_one_line_failure(cli("groups", "delete", group, "--topic", topic),
                                f"offsets of topic '{topic}' not deleted: an active member")
    finally:
        member.terminate()
        member.wait(30)
    assert group in cli.ok("groups", "list").split()
