"""docs/migration.md's aiokafka tables must be what tests/migration/aio_api_table.py
computes now."""

from __future__ import annotations

from tests.migration.aio_api_table import PAGE, render_page


def test_committed_aiokafka_tables_are_current() -> None:
    committed = PAGE.read_text(encoding="utf-8")
    assert render_page(committed) == committed, (
        "docs/migration.md is stale: run `python -m tests.migration.aio_api_table` and commit")
