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
    UsageError,
    acks,
    add_client_properties,
    add_command,
    client_property,
    compression,
    non_negative_int,
    positive_int,
)
from kafkalite.cli.perf_stats import PerfResult, Throttle
from kafkalite.cli.progress import Progress
from kafkalite.cli.session import cluster_metadata, sdk_config
from kafkalite.consumer import Consumer
from kafkalite.idle import IdleTimer
from kafkalite.producer import Producer
from kafkalite.structs import TopicPartition

PRODUCE_EPILOG = """examples:
  kafkalite perf produce bench --records 100000 --record-size 100
  kafkalite perf produce bench --records 50000 --throughput 10000 --acks 1 --compression lz4
  kafkalite perf produce bench --records 10000 --json | jq .records_per_second
  kafkalite perf produce --topic bench --num-records 100000 --record-size 100 \\
      --throughput -1 --producer-props bootstrap.servers=localhost:9092 acks=1

Kafka's kafka-producer-perf-test flag names work too: --topic, --num-records,
--record-size, --throughput, --producer-props."""

CONSUME_EPILOG = """examples:
  kafkalite perf consume bench --records 100000
  kafkalite perf consume bench --records 100000 --group perf-group --json
  kafkalite perf consume --bootstrap-server localhost:9092 --topic bench --messages 100000

Kafka's kafka-consumer-perf-test flag names work too: --bootstrap-server, --topic,
--messages, --group, --timeout."""

_POLL_MS = 200


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    perf = commands.add_parser("perf", help="measure produce or consume throughput and latency",
                               description="Measure throughput and latency.")
    actions = perf.add_subparsers(dest="action", required=True, metavar="ACTION",
                                  parser_class=type(perf))
    produce = add_command(actions, "produce", run_produce,
                          help="send generated records as fast as allowed",
                          epilog=PRODUCE_EPILOG, parents=parents)
    _add_topic(produce)
    produce.add_argument("--records", "--num-records", type=positive_int, required=True,
                         help="how many")
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
    produce.add_argument("--producer-props", type=client_property("producer"), nargs="+",
                         default=[],
                         metavar="KEY=VALUE", help="producer settings, as Kafka's "
                         "perf test takes them (bootstrap.servers=... included)")
    add_client_properties(produce, "producer")
    produce.add_argument("--json", action="store_true", help="print the result as JSON")

    consume = add_command(actions, "consume", run_consume,
                          help="read records as fast as possible",
                          epilog=CONSUME_EPILOG, parents=parents)
    _add_topic(consume)
    consume.add_argument("--records", "--messages", type=positive_int, required=True,
                         help="stop after this many")
    consume.add_argument("-g", "--group", help="consume as this group (default: no group, "
                                               "every partition from the beginning)")
    consume.add_argument("--timeout-ms", "--timeout", type=positive_int, default=10000,
                         help="fail when no record arrives for this long once partitions "
                              "are assigned (default: 10000)")
    add_client_properties(consume, "consumer")
    consume.add_argument("--json", action="store_true", help="print the result as JSON")


def _add_topic(parser: argparse.ArgumentParser) -> None:
    """The topic as our positional argument or as the perf tools' ``--topic``."""
    parser.add_argument("topic", nargs="?")
    parser.add_argument("--topic", dest="topic_option", metavar="TOPIC",
                        help="the topic (as Kafka's perf tools take it)")


def _resolve_topic(args: argparse.Namespace) -> None:
    if args.topic and args.topic_option and args.topic != args.topic_option:
        raise UsageError(f"two topics given: {args.topic!r} and --topic {args.topic_option!r}")
    args.topic = args.topic or args.topic_option
    if not args.topic:
        raise UsageError("name the topic (TOPIC or --topic TOPIC)")


def run_produce(args: argparse.Namespace) -> int:
    _resolve_topic(args)
    # Kafka's --producer-props carry bootstrap.servers too; -X comes last and wins.
    props = dict(args.producer_props)
    args.bootstrap_servers = str(props.pop("bootstrap_servers", args.bootstrap_servers))
    args.client_properties = [*props.items(), *args.client_properties]
    if args.throughput == 0 or args.throughput < -1:
        raise CliError(f"--throughput must be positive or -1, not {args.throughput}")
    cluster_metadata(args, [args.topic], auto_create=True)
    payload = os.urandom(args.record_size)
    latencies: list[float] = []
    errors: list[BaseException] = []
    throttle = Throttle(args.throughput)
    with Producer(**sdk_config(args, acks=args.acks, compression_type=args.compression,
                               batch_size=args.batch_size, linger_ms=args.linger_ms,
                               max_block_ms=max(args.connect_timeout_ms, 10000))
                  ) as producer, \
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
    _resolve_topic(args)
    cluster = cluster_metadata(args, [args.topic])
    partitions = [TopicPartition(args.topic, p)
                  for p in sorted(cluster.partitions_for_topic(args.topic) or ())]
    consumer = Consumer(**sdk_config(args, group_id=args.group,
                                     enable_auto_commit=args.group is not None,
                                     auto_offset_reset="earliest"))
    idle = IdleTimer(args.timeout_ms)  # a group's join does not count as idle time
    latencies: list[float] = []
    count = size = 0
    try:
        if args.group:
            consumer.subscribe([args.topic], listener=idle)
        else:
            consumer.assign(partitions)
            consumer.seek_to_beginning(*partitions)
            idle.start()
        with Progress(args.records, "consuming") as progress:
            start = time.perf_counter()
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
                    idle.record_activity()
                elif idle.expired():
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
