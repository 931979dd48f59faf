"""The Spark part of ``python -m kafkalite.demo``: read and aggregate, then group consumers.

The demo's clickstream topic holds msgpack events ``{"user", "page", "action", "ts"}`` keyed
by ``region:user``; this reads it with the ``kafkalite`` source, aggregates events per page
and per user, and runs a consumer group over Spark executors on the same topic.
"""

from __future__ import annotations

import time
from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kafkalite.spark.group_consumers import run_group_consumers
from kafkalite.spark.session import local_session

EVENT_SCHEMA = "user string, page string, action string, ts bigint"


def demo_job(bootstrap_servers: str, topic: str, spark: SparkSession | None = None,
             group_members: int = 2) -> dict[str, Any]:
    """Run the Spark steps on ``topic``; returns results and timings for the demo report.

    Uses ``spark`` when given, otherwise a local[2] session that is stopped at the end.
    """
    session = spark or local_session("kafkalite-demo", config={
        "spark.sql.shuffle.partitions": "4", "spark.ui.showConsoleProgress": "false"})
    if spark is None:
        session.sparkContext.setLogLevel("ERROR")  # the demo prints its own report
    try:
        return _run(session, bootstrap_servers, topic, group_members)
    finally:
        if spark is None:
            session.stop()


def _run(spark: SparkSession, bootstrap: str, topic: str, members: int) -> dict[str, Any]:
    result: dict[str, Any] = {}
    started = time.perf_counter()
    events = (spark.read.format("kafkalite")
              .option("kafka.bootstrap.servers", bootstrap)
              .option("subscribe", topic)
              .option("valueFormat", "msgpack")
              .option("valueSchema", EVENT_SCHEMA)
              .load()
              .select("partition", "value.*")
              .cache())
    total = events.count()
    elapsed = time.perf_counter() - started
    result["data source read"] = (f"{total:,} records in {elapsed:.1f} s "
                                  f"({total / elapsed:,.0f} records/s)")
    started = time.perf_counter()
    per_page = {row["page"]: row["count"]
                for row in events.groupBy("page").count().orderBy(F.desc("count")).collect()}
    top_users = events.groupBy("user").count().orderBy(F.desc("count"), "user").limit(3).collect()
    purchases = events.filter(F.col("action") == "purchase").count()
    users = events.select("user").distinct().count()
    events.unpersist()
    result["events per page"] = ", ".join(f"{p}={n:,}" for p, n in per_page.items())
    result["top users"] = ", ".join(f"{r['user']}={r['count']}" for r in top_users)
    result["distinct users / purchases"] = f"{users:,} / {purchases:,}"
    result["aggregation"] = f"{time.perf_counter() - started:.1f} s"

    started = time.perf_counter()
    stats = run_group_consumers(spark, [topic], f"spark-demo-{int(time.time())}", members,
                                _discard, bootstrap, idle_timeout_ms=3000)
    elapsed = time.perf_counter() - started
    consumed = sum(s.records for s in stats)
    result["group consumers in executors"] = (
        f"{members} members read {consumed:,} records in {elapsed:.1f} s; "
        + "; ".join(f"member {s.member}: {s.records:,} records from {len(s.partitions)} "
                    f"partitions, generations {s.generations}" for s in stats))
    return result


def _discard(records: list[Any]) -> None:
    """The demo's group members only count what they read (MemberStats does that)."""
