"""The consumers' iteration over poll(): records in order across polls, the end after
consumer_timeout_ms without a record, at once after a close, and a bad timeout refused."""

from __future__ import annotations

import pytest

from kafkalite.errors import ConfigError
from kafkalite.record_iteration import RecordIterator


def test_records_come_in_order_across_polls_and_end_after_the_timeout() -> None:
    batches = [[1, 2], [], [3]]
    asked: list[float] = []

    def poll(timeout_ms: float) -> list[int]:
        asked.append(timeout_ms)
        return batches.pop(0) if batches else []

    records = RecordIterator(poll, lambda: False, consumer_timeout_ms=50)
    got = []
    while True:
        try:
            got.append(next(records))
        except StopIteration:
            break
    assert got == [1, 2, 3]
    assert all(0 < timeout <= 1000 for timeout in asked)


def test_a_closed_consumer_stops_the_iteration_without_polling() -> None:
    polled = []
    records = RecordIterator(lambda ms: polled.append(ms) or [], lambda: True, None)
    with pytest.raises(StopIteration):
        next(records)
    assert polled == []


@pytest.mark.parametrize("bad", [-1, "5", [1]])
def test_a_bad_consumer_timeout_is_a_config_error(bad: object) -> None:
    with pytest.raises(ConfigError, match="consumer_timeout_ms"):
        RecordIterator(lambda ms: [], lambda: False, bad)  # type: ignore[arg-type]
