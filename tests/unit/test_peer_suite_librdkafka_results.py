"""How benchmarks/peer_suites.py reads librdkafka's test tree and its runner's output.

The script is a report run by hand for many minutes; a misread test list or log would only
show as wrong counts on the compatibility page, so the pure parts are checked here.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from benchmarks.peer_suites import (
    librdkafka_chunks,
    librdkafka_ids,
    librdkafka_settings,
    librdkafka_table,
)

TEST_C = """
struct test tests[] = {
    _TEST(0000_unittests, TEST_F_LOCAL),
    _TEST(0001_multiobj, 0),
    _TEST(0018_cgrp_term, 0, TEST_BRKVER(0, 9, 0, 0)),
    _TEST(0031_get_offsets_mock, 0),
    _TEST(0045_subscribe_update, 0, TEST_BRKVER(0, 9, 0, 0)),
    _TEST(0045_subscribe_update_topic_remove,
          0,
          TEST_BRKVER(0, 9, 0, 0),
          .scenario = "noautocreate"),
    _TEST(0052_msg_timestamps, 0, TEST_BRKVER(0, 10, 0, 0)),
    _TEST(0103_transactions_local, TEST_F_LOCAL),
    _TEST(0103_transactions, 0, TEST_BRKVER(0, 11, 0, 0),
          _THRES(.ucpu = 15.0)),
    _TEST(8000_idle, TEST_F_MANUAL),
};
"""

ESC = "\x1b"
ABORTED_RUN = f"""\
[0001_multiobj              /  1.257s] {ESC}[32m================= Test 0001_multiobj PASSED ================={ESC}[0m
[0053_stats                 /  0.000s] ================= Test 0053_stats SKIPPED =================
[0086_purge_remote           /  6.946s] TEST FAILURE
### Test "0086_purge_remote (do_test_purge:243)" failed at test.c:786 ###
| <MAIN>                                   |     PASSED |  84.713s |
| 0001_multiobj                            |     PASSED |   1.257s |
| 0053_stats                               |    SKIPPED |   0.000s | RapidJSON not available
| 0070_null_empty  [<MAIN>                      / 84.713s] 6 thread(s) in use by librdkafka
test-runner: test.c:7702: test_fail0: Assertion `0' failed.
"""


def test_broker_ids_leave_out_local_manual_mock_and_shell_tool_tests() -> None:
    assert librdkafka_ids(TEST_C, "broker") == ["0001", "0018", "0045", "0103"]


def test_group_ids_are_the_broker_ids_whose_consumers_join_a_group() -> None:
    assert librdkafka_ids(TEST_C, "groups") == ["0018", "0045"]


def test_a_test_that_failed_before_the_runner_aborted_its_summary_counts_as_failed() -> None:
    table, failures = librdkafka_table(ABORTED_RUN)
    assert failures == ["0086_purge_remote"]
    assert {name: dict(counts) for name, counts in table.items()} == {
        "0001_multiobj": {"passed": 1},
        "0053_stats": {"skipped": 1},
        "0086_purge_remote": {"failed": 1},
    }


def test_the_summary_table_decides_where_it_has_a_row() -> None:
    log = ("[0001_multiobj / 1.0s] ================= Test 0001_multiobj PASSED =================\n"
           "| 0001_multiobj                            |     FAILED |   1.257s |\n")
    assert librdkafka_table(log)[1] == ["0001_multiobj"]


def test_chunks_split_an_id_set_in_order(tmp_path: Path) -> None:
    (tmp_path / "test.c").write_text(TEST_C)
    args = argparse.Namespace(tests="broker", chunk=3)
    assert librdkafka_chunks(tmp_path, args) == ["0001,0018,0045", "0103"]
    assert librdkafka_chunks(tmp_path, argparse.Namespace(tests="", chunk=0)) == [""]


def test_brokers_for_kafka_4_2_get_the_share_settings_librdkafkas_tooling_gives() -> None:
    key = "group.share.min.record.lock.duration.ms"
    at = {version: librdkafka_settings(1, "zk", 9092, False, "default", version)
          for version in ("3.9.0", "4.0.0", "4.2.0", "4.10")}
    assert [version for version, settings in at.items() if key in settings] == ["4.2.0", "4.10"]
    assert at["4.2.0"][key] == "1000"
