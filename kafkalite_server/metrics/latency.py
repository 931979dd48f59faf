"""Request latencies in fixed buckets, for Kafka's percentile gauges.

Recording one latency is a bisect and an integer increment; the percentiles are estimated
at scrape time by interpolating inside the bucket that holds the rank. Unlike Kafka's
exponentially decaying reservoirs they cover every request since the broker started.
"""

from __future__ import annotations

from bisect import bisect_left

BUCKET_BOUNDS_MS: tuple[float, ...] = tuple(
    scale * step for scale in (0.1, 1.0, 10.0, 100.0, 1000.0, 10_000.0)
    for step in (1.0, 2.0, 5.0))
"""Upper bounds (inclusive) of the buckets, 0.1 ms to 50 s; a last bucket takes the rest."""

QUANTILES: tuple[tuple[str, float], ...] = (
    ("0.50", 0.50), ("0.75", 0.75), ("0.95", 0.95), ("0.98", 0.98), ("0.99", 0.99),
    ("0.999", 0.999))
"""Kafka's 50th ... 999thPercentile, labelled as the JMX exporter's rules label them."""


class LatencyHistogram:
    __slots__ = ("buckets", "count", "sum_ms")

    def __init__(self) -> None:
        self.buckets = [0] * (len(BUCKET_BOUNDS_MS) + 1)
        self.count = 0
        self.sum_ms = 0.0

    def observe(self, elapsed_ms: float) -> None:
        self.buckets[bisect_left(BUCKET_BOUNDS_MS, elapsed_ms)] += 1
        self.count += 1
        self.sum_ms += elapsed_ms

    def quantile(self, q: float) -> float:
        """The estimated ``q`` quantile in ms (0.0 before any request)."""
        if self.count == 0:
            return 0.0
        rank = q * self.count
        seen = 0
        for index, in_bucket in enumerate(self.buckets):
            if in_bucket and seen + in_bucket >= rank:
                low = BUCKET_BOUNDS_MS[index - 1] if index else 0.0
                high = BUCKET_BOUNDS_MS[min(index, len(BUCKET_BOUNDS_MS) - 1)]
                return low + (high - low) * (rank - seen) / in_bucket
            seen += in_bucket
        return BUCKET_BOUNDS_MS[-1]
