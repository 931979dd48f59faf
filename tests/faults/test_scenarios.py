"""Each fault scenario once, short, over three real broker processes and a real ZooKeeper:
the checker finds no lost, duplicated, reordered or inconsistent record, no divergent
replica and no committed offset going backwards; the negative control (unclean election
with the Jepsen-2013 schedule) must show lost writes."""

from __future__ import annotations

import pytest
from catalog import SCENARIOS
from scenarios import run_scenario


@pytest.mark.parametrize("name", list(SCENARIOS))
def test_scenario(name, tmp_path, zookeeper):
    scenario = SCENARIOS[name]
    outcome = run_scenario(scenario, tmp_path, zookeeper, seed=14)
    report = outcome.report
    detail = f"{name}: {report.summary()}; {outcome.notes}; {outcome.writer_errors}"
    print(detail)
    assert report.acked > 0, detail
    if scenario.expect_loss:
        assert report.lost, f"the checker saw no loss in the negative control: {detail}"
    else:
        assert report.ok and not outcome.writer_errors, detail
