"""The main job (``python -m kafkalite.demo``) end to end on a small clickstream."""

from __future__ import annotations

import re

import pytest

from kafkalite import demo


def test_demo_survives_a_broker_crash(capsys: pytest.CaptureFixture[str]) -> None:
    assert demo.main(["--events", "3000", "--users", "200", "--orders", "3000",
                      "--no-spark"]) == 0

    out = capsys.readouterr().out
    assert "3 group members read 3,000 of 3,000 records" in out
    killed = int(re.search(r"killed broker (\d) \(leader of orders-0\)", out).group(1))
    before = re.search(r"before: (.*)", out).group(1)
    after = re.search(r"after: (.*)", out).group(1)
    assert before.count("isr [0, 1, 2]") == demo.ORDER_PARTITIONS
    survivors = [b for b in range(3) if b != killed]
    assert after.count(f"isr {survivors}") == demo.ORDER_PARTITIONS
    assert f"p0 {killed}->" in re.search(r"leader moves: (.*)", out).group(1)
    acked = int(re.search(r"([\d,]+) of 3,000 acks=all sends acknowledged", out)
                .group(1).replace(",", ""))
    assert acked > 0
    assert f"{acked:,} of {acked:,} acknowledged at their acknowledged offsets, 0 lost, " \
           "0 duplicates" in out
