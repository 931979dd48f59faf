"""The Spark part of ``python -m kafkalite_demo``: read and aggregate, then group consumers.

The demo's clickstream topic holds msgpack events ``{"user", "page", "action", "ts"}`` keyed
by ``region:user``; this reads it with the ``kafkalite`` source, aggregates events per page
and per user, and runs a consumer group over Spark executors on the same topic.
"""

from __future__ import annotations

import sys
import threading
import time
from types import TracebackType
from typing import Any, TextIO

from pyspark.sql import SparkSession
from pyspark.sql import functions as F

from kafkalite.spark.group_consumers import run_group_consumers
from kafkalite.spark.session import local_session

EVENT_SCHEMA = "user string, page string, action string, ts bigint"


STAGE_PROGRESS_INTERVAL_S = 3.0


class StageProgress:
    """Prints the running Spark stages' task counts every few seconds while a step runs.

    Spark's own console bar redraws one line with carriage returns, which a log file turns
    into a smear, and it only exists when Spark logs at WARN. This polls the status
    tracker from a thread instead and writes whole lines (``Spark, reading: stage 3: 5/8
    tasks done, 2 running``), the same in a terminal and in a log file.
    """

    def __init__(self, spark: SparkSession, stream: TextIO | None = None,
                 interval_s: float = STAGE_PROGRESS_INTERVAL_S) -> None:
        self.step = "starting"
        self._tracker = spark.sparkContext.statusTracker()
        self._stream = stream or sys.stderr
        self._interval_s = interval_s
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="spark-stage-progress",
                                        daemon=True)

    def __enter__(self) -> StageProgress:
        self._thread.start()
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._stop.set()
        self._thread.join()

    def line(self) -> str | None:
        """The active stages as one line, or None when no stage runs."""
        stages = [info for info in map(self._tracker.getStageInfo,
                                       sorted(self._tracker.getActiveStageIds()))
                  if info is not None]
        if not stages:
            return None
        return f"    Spark, {self.step}: " + "; ".join(
            f"stage {s.stageId}: {s.numCompletedTasks}/{s.numTasks} tasks done, "
            f"{s.numActiveTasks} running" for s in stages)

    def _run(self) -> None:
        while not self._stop.wait(self._interval_s):
            line = self.line()
            if line is not None:
                print(line, file=self._stream, flush=True)


def demo_job(bootstrap_servers: str, topic: str, spark: SparkSession | None = None,
             group_members: int = 2, show_progress: bool = False) -> dict[str, Any]:
    """Run the Spark steps on ``topic``; returns results and timings for the demo report.

    Uses ``spark`` when given, otherwise a local[2] session that is stopped at the end.
    ``show_progress`` prints the running stages' progress on stderr every few seconds.
    """
    session = spark or local_session("kafkalite-demo", config={
        "spark.sql.shuffle.partitions": "4", "spark.ui.showConsoleProgress": "false"})
    if spark is None:
        session.sparkContext.setLogLevel("ERROR")  # the demo prints its own report
    try:
        if not show_progress:
            return _run(session, bootstrap_servers, topic, group_members, None)
        with StageProgress(session) as progress:
            return _run(session, bootstrap_servers, topic, group_members, progress)
    finally:
        if spark is None:
            session.stop()


def _run(spark: SparkSession, bootstrap: str, topic: str, members: int,
         progress: StageProgress | None) -> dict[str, Any]:
    def step(name: str) -> None:
        if progress is not None:
            progress.step = name

    result: dict[str, Any] = {}
    step("reading the topic")
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
    step("aggregating")
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

    step("group consumers in executors")
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
