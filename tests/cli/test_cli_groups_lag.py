"""``kafkalite groups lag``: per partition the committed offset, the end offset and the
lag, and the total, for a group that committed part of what was produced."""

from __future__ import annotations

import signal
import subprocess
import time

from cli_runner import Cli
from test_cli_basics import assert_one_line_failure
from test_cli_topics_groups import commit_some


def _rows(text: str) -> list[list[str]]:
    return [line.split() for line in text.strip().splitlines()]


def test_groups_lag_shows_what_the_group_did_not_commit(cli: Cli, topic: str) -> None:
    group = f"{topic}-lagging"
    commit_some(cli, topic, group, produced=7, consumed=3)
    header, *rows = _rows(cli.ok("groups", "lag", group))
    assert header == ["TOPIC", "PARTITION", "COMMITTED", "END-OFFSET", "LAG"]
    assert rows == [[topic, "0", "3", "7", "4"], ["TOTAL", "-", "-", "-", "4"]]


def test_groups_lag_watch_redraws_until_interrupted(cli: Cli, topic: str) -> None:
    group = f"{topic}-watched"
    commit_some(cli, topic, group, produced=4, consumed=1)
    argv, env = cli.command("groups", "lag", group, "--watch")
    process = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               text=True)
    try:
        assert process.stdout is not None
        drawn = 0
        deadline = time.monotonic() + 60
        while drawn < 2 and time.monotonic() < deadline:
            line = process.stdout.readline()
            if not line:
                break
            drawn += line.split()[:1] == ["TOTAL"]
        assert drawn == 2
        process.send_signal(signal.SIGINT)
        assert process.wait(30) == 0
    finally:
        process.kill()
        process.wait()


def test_groups_lag_of_an_unknown_group(cli: Cli) -> None:
    assert_one_line_failure(cli("groups", "lag", "no-such-group"),
                            "consumer group 'no-such-group' does not exist")
