"""The demo's Spark step on a small clickstream."""

from __future__ import annotations

import io
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from typing import Any

from pyspark.sql import SparkSession

from kafkalite.serde import pack_msgpack
from kafkalite.spark import demo_job
from kafkalite.spark.demo import StageProgress


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


def _slow_job(spark: SparkSession) -> threading.Thread:
    """A four-task job whose tasks each take two seconds, running in the background."""
    def run() -> None:
        spark.sparkContext.parallelize(range(4), 4).map(lambda x: time.sleep(2) or x).count()

    job = threading.Thread(target=run)
    job.start()
    return job


def test_stage_progress_lines_name_the_step_and_count_the_tasks(spark: SparkSession) -> None:
    log = io.StringIO()  # a log file: whole lines, no carriage returns
    with StageProgress(spark, stream=log, interval_s=0.2) as progress:
        progress.step = "sleeping"
        job = _slow_job(spark)
        job.join(120)
    lines = log.getvalue().splitlines()
    assert lines, "no progress line while a stage ran"
    for line in lines:
        assert re.fullmatch(r"    Spark, sleeping: stage \d+: [0-4]/4 tasks done, [0-4] running",
                            line), line
    assert "\r" not in log.getvalue()


def test_stage_progress_is_quiet_without_a_running_stage(spark: SparkSession) -> None:
    progress = StageProgress(spark, stream=io.StringIO())
    assert progress.line() is None
