"""The clients' ``metrics()``: kafka-python's nested shape (``{group: {name: value}}``) with
Java's metric names, totals since start and rates over the client's lifetime.

Counting is a few integer increments on paths that already run; there are no sensors or
sample windows (``metrics_num_samples`` / ``metrics_sample_window_ms`` are accepted and
ignored), which keeps the hot paths free of clock reads.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping
from typing import Any

from kafkalite.client.client import KafkaClient
from kafkalite.protocol import ApiKey
from kafkalite.structs import ConsumerRecord, TopicPartition


def _rate(count: float, since: float) -> float:
    elapsed = time.monotonic() - since
    return count / elapsed if elapsed > 0 else 0.0


def client_metrics(client: KafkaClient) -> dict[str, float]:
    """Connection-level values every client reports: requests sent (total, rate, per API)."""
    total = sum(client.request_counts.values())
    values: dict[str, float] = {
        "request-total": total,
        "request-rate": _rate(total, client.started_at),
        "connection-count": client.ready_connection_count(),
    }
    for api_key, count in sorted(client.request_counts.items()):
        name = ApiKey(api_key).name.lower().replace("_", "-")
        values[f"{name}-request-total"] = count
    return values


class FetchCounters:
    """Fetch requests answered: how many, their summed latency (seconds) and record bytes.
    Counted on the client's I/O thread, read by ``metrics()``."""

    def __init__(self) -> None:
        self.answered = 0
        self.latency_total = 0.0
        self.bytes = 0

    def answered_after(self, latency: float, record_bytes: int) -> None:
        self.answered += 1
        self.latency_total += latency
        self.bytes += record_bytes


class ConsumerMetrics:
    """Records and bytes the consumer returned from ``poll()``, its fetches and commits."""

    def __init__(self, prefix: str) -> None:
        self.prefix = prefix
        self.started_at = time.monotonic()
        self.polls = 0
        self.records = 0
        self.bytes = 0
        self.lag_max = 0
        self.commits = 0
        self.commit_latency_total = 0.0
        self.assigned_partitions = 0

    def committed_after(self, latency: float) -> None:
        self.commits += 1
        self.commit_latency_total += latency

    def record(self, records: Mapping[TopicPartition, Iterable[ConsumerRecord]]) -> None:
        self.polls += 1
        for batch in records.values():
            for r in batch:
                self.records += 1
                self.bytes += max(r.serialized_key_size, 0) + max(r.serialized_value_size, 0)

    def as_dict(self, client: KafkaClient, raw: bool, fetches: FetchCounters
                ) -> dict[str, Any]:
        if raw:
            return {"polls": self.polls, "records": self.records, "bytes": self.bytes}
        answered = fetches.answered
        return {
            f"{self.prefix}-metrics": client_metrics(client),
            f"{self.prefix}-fetch-manager-metrics": {
                "records-consumed-total": self.records,
                "records-consumed-rate": _rate(self.records, self.started_at),
                "bytes-consumed-total": self.bytes,
                "bytes-consumed-rate": _rate(self.bytes, self.started_at),
                "records-per-poll-avg": self.records / self.polls if self.polls else 0.0,
                "records-lag-max": self.lag_max,
                "fetch-latency-avg": _ms_avg(fetches.latency_total, answered),
                "fetch-rate": _rate(answered, self.started_at),
                "fetch-total": answered,
                "fetch-size-avg": fetches.bytes / answered if answered else 0.0,
                "records-per-request-avg": self.records / answered if answered else 0.0,
            },
            f"{self.prefix}-coordinator-metrics": {
                "commit-latency-avg": _ms_avg(self.commit_latency_total, self.commits),
                "commit-total": self.commits,
                "assigned-partitions": self.assigned_partitions,
            },
        }


def _ms_avg(total_seconds: float, count: float) -> float:
    return total_seconds * 1000 / count if count else 0.0


def producer_metrics(client: KafkaClient, counters: Mapping[str, float],
                     incomplete_batches: int) -> dict[str, Any]:
    """kafka-python's ``producer-metrics`` group from the sender's counters (latencies in
    milliseconds, as kafka-python and Java report them)."""
    since = client.started_at
    batches, records, requests = counters["batches"], counters["records"], counters["requests"]
    return {"producer-metrics": {
        **client_metrics(client),
        "record-send-total": records,
        "record-send-rate": _rate(records, since),
        "byte-total": counters["bytes"],
        "byte-rate": _rate(counters["bytes"], since),
        "batch-size-avg": counters["bytes"] / batches if batches else 0.0,
        "records-per-request-avg": records / requests if requests else 0.0,
        "record-retry-total": counters["retries"],
        "record-retry-rate": _rate(counters["retries"], since),
        "record-error-total": counters["errors"],
        "record-error-rate": _rate(counters["errors"], since),
        "record-expired-total": counters["expired"],
        "incomplete-batches": incomplete_batches,
        "record-size-avg": counters["uncompressed_bytes"] / records if records else 0.0,
        "compression-rate-avg": (counters["bytes"] / counters["uncompressed_bytes"]
                                 if counters["uncompressed_bytes"] else 0.0),
        "request-latency-avg": _ms_avg(counters["latency_total"], counters["answered"]),
        "request-latency-max": counters["latency_max"] * 1000,
        "requests-in-flight": client.in_flight_request_count(),
        "throttle-time-max": counters["throttle_max_ms"],
    }}
