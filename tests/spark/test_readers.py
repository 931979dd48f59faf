"""The batch reader's per-task work in a Python worker, without Spark."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest
from pyspark.sql.types import BinaryType, StructType

from kafkalite.spark import readers
from kafkalite.spark.planning import OffsetRange


@pytest.fixture
def gc_calls(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The gc.collect / gc.freeze calls of freeze_worker_heap, which starts unfrozen."""
    calls: list[str] = []
    monkeypatch.setattr(readers, "_worker_heap_frozen", False)
    monkeypatch.setattr(readers.gc, "collect", lambda: calls.append("collect"))
    monkeypatch.setattr(readers.gc, "freeze", lambda: calls.append("freeze"))
    return calls


def test_only_a_reused_worker_freezes_its_heap(gc_calls: list[str],
                                               monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("SPARK_REUSE_WORKER", raising=False)
    readers.freeze_worker_heap()
    assert gc_calls == []
    monkeypatch.setenv("SPARK_REUSE_WORKER", "1")
    readers.freeze_worker_heap()
    readers.freeze_worker_heap()
    assert gc_calls == ["collect", "freeze"]


def test_a_read_freezes_the_worker_heap_after_its_last_batch(
        gc_calls: list[str], monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SPARK_REUSE_WORKER", "1")

    def fake_read_range(*args: Any) -> Iterator[str]:
        yield "first"
        yield "second"

    monkeypatch.setattr(readers, "read_range", fake_read_range)
    partition = readers.RangePartition(OffsetRange("t", 0, 0, 2))
    batches = readers._read(None, StructType().add("value", BinaryType()),  # type: ignore[arg-type]
                            partition)
    assert [next(batches), next(batches)] == ["first", "second"]
    assert gc_calls == []
    assert list(batches) == []
    assert gc_calls == ["collect", "freeze"]
