"""docs/migration.md's API tables must be what tests/migration/api_table.py computes now."""

from __future__ import annotations

import kafka

from tests.migration.api_table import ADMIN_RESULT_DIFFERENCES, PAGE, render_page


def test_committed_api_tables_are_current() -> None:
    committed = PAGE.read_text(encoding="utf-8")
    assert render_page(committed) == committed, (
        "docs/migration.md is stale: run `python -m tests.migration.api_table` and commit")


def test_every_noted_result_difference_is_a_kafka_python_admin_method() -> None:
    for method in ADMIN_RESULT_DIFFERENCES:
        assert callable(getattr(kafka.KafkaAdminClient, method, None)), method
