"""The demo's Spark step on a small clickstream."""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from kafkalite.serde import pack_msgpack
from kafkalite.spark import demo_job


def test_demo_job_aggregates_and_consumes(spark: SparkSession, bootstrap: str,
                                          new_topic: Callable[[int], str],
                                          produce: Callable[[str, list[dict[str, Any]]], None]
                                          ) -> None:
    topic = new_topic(4)
    events = [{"user": f"user-{i % 5}", "page": ["/", "/cart"][i % 2 * (i % 3 != 0)],
               "action": "purchase" if i % 7 == 0 else "view", "ts": i} for i in range(70)]
    produce(topic, [{"value": pack_msgpack(e)} for e in events])

    result = demo_job(bootstrap, topic, spark=spark, group_members=2)

    pages = Counter(e["page"] for e in events)
    assert result["events per page"] == ", ".join(
        f"{p}={n:,}" for p, n in sorted(pages.items(), key=lambda kv: -kv[1]))
    assert result["distinct users / purchases"] == "5 / 10"
    assert result["data source read"].startswith("70 records")
    assert "2 members read 70 records" in result["group consumers in executors"]
