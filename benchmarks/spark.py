"""Spark read throughput: the ``kafkalite`` data source on local[2] against one plain Consumer.

Fills an 8-partition topic with N records (100-byte values, 8-byte keys, lz4) on a
kafkalite-server subprocess, then reads all of it, in the same run, with:

- ``consumer``: one kafkalite Consumer in this process, ``assign`` + ``seek_to_beginning``,
  then ``poll_arrow`` (``max_poll_records`` 100,000) until every record is in, summing the
  value lengths: the fastest plain loop (``poll()`` builds a ConsumerRecord per record and
  was slower in every run), and the same decoding the data source uses;
- ``spark``: ``spark.read.format("kafkalite")`` on ``local[2]`` (one task per partition),
  aggregating ``count(*)`` and ``sum(length(value))`` so every value crosses into Spark;
- ``spark value``: the same query with ``.schema("value binary")``, the one column it needs.
  Spark prunes no columns of a Python data source, so without a declared schema all seven
  (a topic string per row among them) are built and cross into the JVM; with one, the
  source builds and ships only the declared columns.

- ``no-work source``: the same ``spark value`` query over a Python data source that does
  no work at all (it yields one prebuilt Arrow batch of 100-byte values again and again),
  with the topic's 8 partitions and with 2 (one per core): what Spark itself costs to
  take rows from any Python data source, the ceiling of every such source on this machine.

Each line also gives the CPU seconds the read took in this process and all its children
(the broker, Spark's JVM and Python workers). The last line adds Spark's own CPU over the
no-work source (2 tasks) to the plain consumer's, the least any Python source's read can
cost, and divides it into what the machine's cores give in the plain consumer's time: the
most any Python source could reach against the plain consumer here.

The clock excludes Spark's start-up (a small warm-up query runs first) and producing. A
Spark query also has a fixed cost (planning, listing offsets, scheduling two jobs), paid
however few records it reads; the same query over an empty offset range measures it, and
the last lines show each Spark read's rate without it, so the reader sees the throughput part.
The default of 2,000,000 records keeps that fixed cost a small share of the Spark time.

    python -m benchmarks.spark [--records N] [--repeat R]
"""

from __future__ import annotations

import argparse
import json
import os
import time
from collections.abc import Iterator
from pathlib import Path
from typing import NamedTuple

from benchmarks.broker import cpu_seconds, proc_stat
from benchmarks.clients import kafkalite_server
from benchmarks.report import add_write_docs, documented

PARTITIONS = 8
VALUE = b"v" * 100
VALUE_ONLY = "value binary"
"""The ``spark value`` query's declared schema: the only column its aggregation reads."""
NO_WORK_TOPIC_TASKS = f"no-work/{PARTITIONS}"
NO_WORK_CORE_TASKS = "no-work/2"


class Measured(NamedTuple):
    """A read's wall seconds, and the CPU seconds of this process and all its children
    (the broker, Spark's JVM and its Python workers) over the same span."""

    seconds: float
    cpu: float


def _processes_below(root: int) -> list[int]:
    """``root`` and every process descended from it (Linux ``/proc``)."""
    children: dict[int, list[int]] = {}
    for entry in Path("/proc").glob("[0-9]*"):
        fields = proc_stat(int(entry.name))
        if fields is not None:  # None: the process ended meanwhile
            children.setdefault(int(fields[1]), []).append(int(entry.name))
    found, waiting = [], [root]
    while waiting:
        pid = waiting.pop()
        found.append(pid)
        waiting.extend(children.get(pid, ()))
    return found


def _now() -> Measured:
    return Measured(time.perf_counter(), sum(map(cpu_seconds, _processes_below(os.getpid()))))


def _since(start: Measured) -> Measured:
    end = _now()
    return Measured(end.seconds - start.seconds, end.cpu - start.cpu)


def fill(bootstrap: str, topic: str, count: int) -> None:
    from kafkalite import Producer
    from kafkalite.admin import AdminClient, NewTopic

    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])
    with Producer(bootstrap, compression_type="lz4", linger_ms=5, acks=1) as producer:
        send = producer.send
        for i in range(count):
            send(topic, VALUE, key=i.to_bytes(8, "big"), partition=i % PARTITIONS)
        producer.flush()


def read_with_consumer(bootstrap: str, topic: str, count: int) -> Measured:
    import pyarrow.compute as pc

    from kafkalite import TopicPartition
    from kafkalite.consumer import Consumer

    partitions = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    with Consumer(bootstrap_servers=bootstrap, max_poll_records=100_000) as consumer:
        consumer.assign(partitions)
        consumer.seek_to_beginning(*partitions)
        start = _now()
        seen = value_bytes = 0
        while seen < count:
            batch = consumer.poll_arrow(timeout_ms=1000)
            seen += batch.num_rows
            value_bytes += pc.sum(pc.binary_length(batch.column("value"))).as_py() or 0
        measured = _since(start)
    assert value_bytes == count * len(VALUE)
    return measured


def read_with_spark(spark: object, bootstrap: str, topic: str, count: int,
                    empty: bool = False, schema: str | None = None) -> Measured:
    """The :func:`aggregate` query over the topic, or with ``empty`` over no offsets at all
    (endingOffsets 0 everywhere): the same query's fixed cost. ``schema`` declares the
    columns to read (the source's own schema when None)."""
    reader = (spark.read.format("kafkalite")  # type: ignore[attr-defined]
              .option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic))
    if schema is not None:
        reader = reader.schema(schema)
    if empty:
        reader = reader.option("endingOffsets", json.dumps(
            {topic: {str(p): 0 for p in range(PARTITIONS)}}))
        count = 0
    return aggregate(reader.load(), count)


def aggregate(df: object, count: int) -> Measured:
    """The benchmark's query over ``df``, timed: ``count(*)`` and ``sum(length(value))``,
    so every value crosses into Spark; checked against ``count`` records of ``VALUE``."""
    from pyspark.sql import functions as F

    start = _now()
    row = df.agg(F.count("*").alias("n"),  # type: ignore[attr-defined]
                 F.sum(F.length("value")).alias("bytes")).collect()[0]
    measured = _since(start)
    assert (row["n"], row["bytes"] or 0) == (count, count * len(VALUE))
    return measured


def no_work_source() -> type:
    """A Python data source of ``rows`` 100-byte values over ``partitions`` tasks that
    reads nothing: each task yields slices of one Arrow batch it built once."""
    import pyarrow as pa
    from pyspark.sql.datasource import DataSource, DataSourceReader, InputPartition

    batch_rows = 50_000

    class Reader(DataSourceReader):
        def __init__(self, rows: int, partitions: int) -> None:
            self.rows, self.count = rows, partitions

        def partitions(self) -> list[InputPartition]:
            return [InputPartition(i) for i in range(self.count)]

        def read(self, partition: InputPartition) -> Iterator[pa.RecordBatch]:
            offsets = pa.array(range(0, (batch_rows + 1) * len(VALUE), len(VALUE)), pa.int32())
            values = pa.Array.from_buffers(pa.binary(), batch_rows, [
                None, offsets.buffers()[1], pa.py_buffer(VALUE * batch_rows)])
            batch = pa.RecordBatch.from_arrays([values], names=["value"])
            share = self.rows // self.count
            for start in range(0, share, batch_rows):
                yield batch.slice(0, min(batch_rows, share - start))

    class NoWorkSource(DataSource):
        @classmethod
        def name(cls) -> str:
            return "no-work"

        def schema(self) -> str:
            return VALUE_ONLY

        def reader(self, schema: object) -> Reader:
            return Reader(int(self.options["rows"]), int(self.options["partitions"]))

    return NoWorkSource


def read_no_work(spark: object, count: int, partitions: int) -> Measured:
    """The :func:`aggregate` query over :func:`no_work_source`."""
    return aggregate(spark.read.format("no-work")  # type: ignore[attr-defined]
                     .option("rows", str(count)).option("partitions", str(partitions)).load(),
                     count)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--repeat", type=int, default=1, help="alternate runs; best kept")
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.spark", args.write_docs):
        measure(args)


def measure(args: argparse.Namespace) -> None:
    from kafkalite.spark import local_session

    with kafkalite_server() as bootstrap:
        topic = "spark-bench"
        started = time.perf_counter()
        fill(bootstrap, topic, args.records)
        print(f"produced {args.records:,} records in {time.perf_counter() - started:.1f} s")
        spark = local_session("kafkalite-benchmark", "local[2]",
                              {"spark.ui.showConsoleProgress": "false"})
        spark.sparkContext.setLogLevel("ERROR")
        spark.dataSource.register(no_work_source())
        try:
            fill(bootstrap, "spark-bench-warmup", 1000)
            read_with_spark(spark, bootstrap, "spark-bench-warmup", 1000)
            read_no_work(spark, 1000, PARTITIONS)
            slowest = Measured(float("inf"), float("inf"))
            best = dict.fromkeys(("consumer", "spark", "spark value", NO_WORK_TOPIC_TASKS,
                                  NO_WORK_CORE_TASKS), slowest)
            fixed = slowest
            for _ in range(args.repeat):
                runs = {
                    "consumer": read_with_consumer(bootstrap, topic, args.records),
                    "spark": read_with_spark(spark, bootstrap, topic, args.records),
                    "spark value": read_with_spark(spark, bootstrap, topic, args.records,
                                                   schema=VALUE_ONLY),
                    NO_WORK_TOPIC_TASKS: read_no_work(spark, args.records, PARTITIONS),
                    NO_WORK_CORE_TASKS: read_no_work(spark, args.records, 2),
                }
                best = {name: min(best[name], runs[name]) for name in best}
                fixed = min(fixed, read_with_spark(spark, bootstrap, topic, 0, empty=True))
        finally:
            spark.stop()
    report(args.records, best, fixed)


def report(records: int, best: dict[str, Measured], fixed: Measured) -> None:
    consumer = best["consumer"]
    base = records / consumer.seconds
    for name, (seconds, cpu) in best.items():
        rate = records / seconds
        print(f"{name:<11} {records:,} records in {seconds:6.2f} s  {rate:>12,.0f} rec/s  "
              f"{rate / base:5.2f}x the plain consumer  CPU {cpu:5.2f} s")
    print(f"(no-work: the spark value query over a Python data source that reads nothing, "
          f"{PARTITIONS} and 2 tasks: Spark's own ceiling for any Python source; CPU: this "
          f"process and its children, the broker, Spark's JVM and Python workers)")
    print(f"spark fixed per-query cost (same query, empty offset range) {fixed.seconds:.2f} s")
    for name in ("spark", "spark value"):
        net = max(best[name].seconds - fixed.seconds, 1e-9)
        print(f"{name:<11} without it {records / net:,.0f} rec/s, "
              f"{records / net / base:.2f}x the plain consumer")
    cores = os.cpu_count() or 1
    needed = best[NO_WORK_CORE_TASKS].cpu + consumer.cpu
    print(f"any Python source: Spark's own CPU (no-work/2) {best[NO_WORK_CORE_TASKS].cpu:.2f} s "
          f"+ the reading itself (the plain consumer's) {consumer.cpu:.2f} s = {needed:.2f} "
          f"CPU-s, against {cores * consumer.seconds:.2f} that {cores} cores give in the plain "
          f"consumer's {consumer.seconds:.2f} s: at most "
          f"{cores * consumer.seconds / needed:.2f}x the plain consumer")


if __name__ == "__main__":
    main()
