"""Every client-speed goal in one run: per-record and bulk produce and consume of kafkalite
against confluent-kafka's per-record loops, on one kafkalite-server.

Cases (N records of 100 B, lz4, linger 5 ms, acks=1, 16 KB batches, one partition):

- ``produce``: kafkalite ``send()`` loop vs confluent-kafka ``produce()`` loop (goal 0.5x);
- ``consume``: kafkalite ``poll()`` loop touching every record's value vs confluent-kafka
  ``consume()`` loop doing the same (goal 1.0x);
- ``send_batch``: kafkalite ``Producer.send_batch`` of the same values (goal 1.5x the
  ``produce()`` loop);
- ``poll_arrow``: kafkalite ``Consumer.poll_arrow`` (goal 1.5x the ``consume()`` loop).

Each round runs every case once, in turn; ``--repeat`` rounds, then the median rate of each
and the ratios of the medians (a shared machine: the spread is printed too).

    python -m benchmarks.bulk [--records N] [--repeat R]
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable

from benchmarks.clients import (
    SETTINGS,
    VALUE,
    consume_confluent,
    fill,
    kafkalite_server,
    run_confluent,
    run_kafkalite,
)
from benchmarks.report import add_write_docs, documented


def run_send_batch(bootstrap: str, topic: str, count: int) -> float:
    from kafkalite import Producer

    values = [VALUE] * count
    with Producer(bootstrap, compression_type=SETTINGS["compression"],
                  linger_ms=SETTINGS["linger_ms"], acks=SETTINGS["acks"],
                  batch_size=SETTINGS["batch_size"]) as producer:
        producer.send(topic, VALUE).get(30)
        start = time.perf_counter()
        producer.send_batch(topic, values)
        producer.flush()
        return time.perf_counter() - start


def consume_kafkalite_values(bootstrap: str, topic: str, count: int) -> float:
    """The poll() loop, reading every record's value (as the confluent loop does)."""
    from kafkalite import Consumer, TopicPartition

    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest") as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        seen = 0
        start = time.perf_counter()
        while seen < count:
            for records in consumer.poll(timeout_ms=1000).values():
                for record in records:
                    if record.value is not None:
                        seen += 1
        return time.perf_counter() - start


def consume_confluent_values(bootstrap: str, topic: str, count: int) -> float:
    return consume_confluent(bootstrap, topic, count)


def consume_poll_arrow(bootstrap: str, topic: str, count: int) -> float:
    from kafkalite import Consumer, TopicPartition

    with Consumer(bootstrap_servers=bootstrap, auto_offset_reset="earliest",
                  max_poll_records=100_000) as consumer:
        consumer.assign([TopicPartition(topic, 0)])
        seen = 0
        start = time.perf_counter()
        while seen < count:
            seen += consumer.poll_arrow(timeout_ms=1000).num_rows
        return time.perf_counter() - start


CASES: dict[str, Callable[[str, str, int], float]] = {
    "kafkalite send()": run_kafkalite,
    "kafkalite send_batch()": run_send_batch,
    "confluent produce()": run_confluent,
    "kafkalite poll()": consume_kafkalite_values,
    "kafkalite poll_arrow()": consume_poll_arrow,
    "confluent consume()": consume_confluent_values,
}
GOALS = [
    ("produce: send() / produce()", "kafkalite send()", "confluent produce()", 0.5),
    ("produce: send_batch() / produce()", "kafkalite send_batch()", "confluent produce()", 1.5),
    ("consume: poll() / consume()", "kafkalite poll()", "confluent consume()", 1.0),
    ("consume: poll_arrow() / consume()", "kafkalite poll_arrow()", "confluent consume()", 1.5),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=200_000)
    parser.add_argument("--repeat", type=int, default=5)
    add_write_docs(parser)
    args = parser.parse_args()
    with documented("benchmarks.bulk", args.write_docs):
        count = args.records
        rates: dict[str, list[float]] = {name: [] for name in CASES}
        with kafkalite_server() as bootstrap:
            fill(bootstrap, "bench-consume", count)
            for round_ in range(args.repeat):
                for name, run in CASES.items():
                    producing = "poll" not in name and "consume" not in name
                    topic = f"bench-{round_}-{len(rates[name])}-{name.split()[1].strip('()')}" \
                        if producing else "bench-consume"
                    rates[name].append(count / run(bootstrap, topic, count))
        print(f"records={count} value=100B lz4 linger_ms=5 acks=1 one partition, "
              f"median of {args.repeat} rounds")
        for name, values in rates.items():
            print(f"  {name:24s} {statistics.median(values):12,.0f} rec/s   "
                  f"(min {min(values):,.0f}, max {max(values):,.0f})")
        for label, ours, theirs, goal in GOALS:
            ratio = statistics.median(rates[ours]) / statistics.median(rates[theirs])
            per_round = [a / b for a, b in zip(rates[ours], rates[theirs], strict=True)]
            verdict = "met" if ratio >= goal else "missed"
            print(f"  {label:36s} {ratio:5.2f}x  goal {goal:.1f}x {verdict:6s} "
                  f"per round {min(per_round):.2f}-{max(per_round):.2f}x")


if __name__ == "__main__":
    main()
