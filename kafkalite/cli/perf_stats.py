"""Throughput and latency figures for ``kafkalite perf``, as Kafka's perf-test tools print.

Latencies are collected in milliseconds; percentiles use the nearest-rank method on the
sorted sample, like Kafka's ProducerPerformance.
"""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

MB = 1024 * 1024


@dataclass(frozen=True)
class PerfResult:
    records: int
    bytes: int
    seconds: float
    latencies_ms: Sequence[float]
    errors: int = 0

    @property
    def records_per_second(self) -> float:
        return self.records / self.seconds if self.seconds > 0 else 0.0

    @property
    def mb_per_second(self) -> float:
        return self.bytes / MB / self.seconds if self.seconds > 0 else 0.0

    def as_dict(self) -> dict[str, Any]:
        ordered = sorted(self.latencies_ms)
        return {
            "records": self.records,
            "bytes": self.bytes,
            "errors": self.errors,
            "seconds": round(self.seconds, 6),
            "records_per_second": round(self.records_per_second, 1),
            "mb_per_second": round(self.mb_per_second, 3),
            "latency_ms": {
                "avg": round(sum(ordered) / len(ordered), 3) if ordered else None,
                "p50": _rounded(percentile(ordered, 50)),
                "p95": _rounded(percentile(ordered, 95)),
                "p99": _rounded(percentile(ordered, 99)),
                "max": _rounded(ordered[-1] if ordered else None),
            },
        }

    def summary(self) -> str:
        data = self.as_dict()
        lat = data["latency_ms"]
        text = (f"{self.records} records, {data['records_per_second']:.1f} records/sec "
                f"({data['mb_per_second']:.2f} MB/sec)")
        if self.errors:
            text += f", {self.errors} errors"
        if lat["avg"] is None:
            return text
        return (f"{text}, {lat['avg']:.2f} ms avg latency, {lat['max']:.2f} ms max latency, "
                f"{lat['p50']:.2f} ms 50th, {lat['p95']:.2f} ms 95th, {lat['p99']:.2f} ms 99th")


def percentile(ordered: Sequence[float], pct: float) -> float | None:
    """Nearest-rank percentile of an already sorted sample; None for an empty one."""
    if not ordered:
        return None
    rank = max(math.ceil(pct / 100 * len(ordered)), 1)
    return ordered[rank - 1]


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


class Throttle:
    """Keeps a loop at ``per_second`` iterations (-1: unlimited) by sleeping when ahead."""

    def __init__(self, per_second: float) -> None:
        self.per_second = per_second
        self.start = time.monotonic()

    def wait(self, done: int) -> None:
        if self.per_second <= 0:
            return
        ahead = done / self.per_second - (time.monotonic() - self.start)
        if ahead > 0:
            time.sleep(ahead)
