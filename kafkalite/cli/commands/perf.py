"""``kafkalite perf produce|consume``: throughput and latency, like Kafka's perf-test tools.

Produce latency is measured per record from ``send()`` to the broker's acknowledgement (the
future's callback). Consume latency is the time each ``poll()`` that returned records took.
"""

from __future__ import annotations

import argparse
import json
import os
import time
from typing import Any

from kafkalite.cli.options import (
    CliError,
    acks,
    add_command,
    compression,
    non_negative_int,
    positive_int,
)
from kafkalite.cli.perf_stats import PerfResult, Throttle
from kafkalite.cli.progress import Progress
from kafkalite.cli.session import client_config, cluster_metadata
from kafkalite.consumer import Consumer
from kafkalite.producer import Producer
from kafkalite.structs import TopicPartition

PRODUCE_EPILOG = """examples:
  kafkalite perf produce bench --records 100000 --record-size 100
  kafkalite perf produce bench --records 50000 --throughput 10000 --acks 1 --compression lz4
  kafkalite perf produce bench --records 10000 --json | jq .records_per_second"""

CONSUME_EPILOG = """examples:
  kafkalite perf consume bench --records 100000
  kafkalite perf consume bench --records 100000 --group perf-group --json"""

_POLL_MS = 200


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    perf = commands.add_parser("perf", help="measure produce or consume throughput and latency",
                               description="Measure throughput and latency.")
    actions = perf.add_subparsers(dest="action", required=True, metavar="ACTION",
                                  parser_class=type(perf))
    produce = add_command(actions, "produce", run_produce,
                          help="send generated records as fast as allowed",
                          epilog=PRODUCE_EPILOG, parents=parents)
    produce.add_argument("topic")
    produce.add_argument("--records", type=positive_int, required=True, help="how many")
    produce.add_argument("--record-size", type=non_negative_int, default=100,
                         help="value size in bytes (default: 100)")
    produce.add_argument("--throughput", type=int, default=-1,
                         help="at most this many records/s (-1: unlimited, the default)")
    produce.add_argument("--acks", type=acks, default=-1, help="all (-1), 0 or 1")
    produce.add_argument("--compression", type=compression, default=None, metavar="CODEC",
                         help="none, gzip, snappy, lz4 or zstd")
    produce.add_argument("--batch-size", type=positive_int, default=16384,
                         help="bytes per batch (default: 16384)")
    produce.add_argument("--linger-ms", type=non_negative_int, default=5,
                         help="batch wait (default: 5)")
    produce.add_argument("--json", action="store_true", help="print the result as JSON")

    consume = add_command(actions, "consume", run_consume,
                          help="read records as fast as possible",
                          epilog=CONSUME_EPILOG, parents=parents)
    consume.add_argument("topic")
    consume.add_argument("--records", type=positive_int, required=True,
                         help="stop after this many")
    consume.add_argument("-g", "--group", help="consume as this group (default: no group, "
                                               "every partition from the beginning)")
    consume.add_argument("--timeout-ms", type=positive_int, default=10000,
                         help="fail when no record arrives for this long (default: 10000)")
    consume.add_argument("--json", action="store_true", help="print the result as JSON")


def run_produce(args: argparse.Namespace) -> int:
    if args.throughput == 0 or args.throughput < -1:
        raise CliError(f"--throughput must be positive or -1, not {args.throughput}")
    cluster_metadata(args, [args.topic], auto_create=True)
    payload = os.urandom(args.record_size)
    latencies: list[float] = []
    errors: list[BaseException] = []
    throttle = Throttle(args.throughput)
    with Producer(**client_config(args), acks=args.acks, compression_type=args.compression,
                  batch_size=args.batch_size, linger_ms=args.linger_ms,
                  max_block_ms=max(args.connect_timeout_ms, 10000)) as producer, \
            Progress(args.records, "producing") as progress:
        start = time.perf_counter()
        for sent in range(args.records):
            future = producer.send(args.topic, payload)
            future.add_callback(_record_latency, latencies, time.perf_counter())
            future.add_errback(errors.append)
            progress.advance()
            throttle.wait(sent + 1)
        producer.flush()
        elapsed = time.perf_counter() - start
    result = PerfResult(args.records - len(errors), (args.records - len(errors)) *
                        args.record_size, elapsed, latencies, len(errors))
    _report(args, result)
    if errors:
        raise CliError(f"{len(errors)} records failed, the first with: {errors[0]}")
    return 0


def _record_latency(latencies: list[float], sent_at: float, _metadata: Any) -> None:
    latencies.append((time.perf_counter() - sent_at) * 1000)


def run_consume(args: argparse.Namespace) -> int:
    cluster = cluster_metadata(args, [args.topic])
    partitions = [TopicPartition(args.topic, p)
                  for p in sorted(cluster.partitions_for_topic(args.topic) or ())]
    consumer = Consumer(**client_config(args), group_id=args.group,
                        enable_auto_commit=args.group is not None,
                        auto_offset_reset="earliest")
    latencies: list[float] = []
    count = size = 0
    try:
        if args.group:
            consumer.subscribe([args.topic])
        else:
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
        with Progress(args.records, "consuming") as progress:
            start = idle_since = time.perf_counter()
            while count < args.records:
                before = time.perf_counter()
                batches = consumer.poll(timeout_ms=_POLL_MS, max_records=args.records - count)
                now = time.perf_counter()
                received = sum(len(records) for records in batches.values())
                if received:
                    latencies.append((now - before) * 1000)
                    size += sum(len(r.value or b"") + len(r.key or b"")
                                for records in batches.values() for r in records)
                    count += received
                    progress.advance(received)
                    idle_since = now
                elif now - idle_since >= args.timeout_ms / 1000:
                    raise CliError(f"only {count} of {args.records} records arrived; none "
                                   f"for {args.timeout_ms} ms")
            elapsed = time.perf_counter() - start
    finally:
        consumer.close()
    _report(args, PerfResult(count, size, elapsed, latencies))
    return 0


def _report(args: argparse.Namespace, result: PerfResult) -> None:
    if args.json:
        print(json.dumps({"topic": args.topic, **result.as_dict()}))
    else:
        print(result.summary())
