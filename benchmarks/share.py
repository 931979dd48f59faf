"""Share-consumer throughput next to a plain consumer on the same partitions, in one run.

Against one embedded kafkalite broker (in this process), N records of 100 bytes are
produced to a topic of P partitions; then each case reads all of them once from the
start: kafkalite's Consumer in a consumer group and kafkalite's ShareConsumer
(implicit acknowledgement: each poll accepts the one before), and confluent-kafka's
Consumer and ShareConsumer when it is installed. The figure is records per second from
the first poll to the last record, the share cases including the acknowledgement of every
record (a share group's records are locked, acknowledged and written to the share state;
a consumer group commits one offset per partition). The clock starts at the first record,
so a consumer group's join (``group.initial.rebalance.delay.ms``) is not counted.

    python -m benchmarks.share [--records N] [--partitions P]    (from the repository root)
"""

from __future__ import annotations

import argparse
import time
from collections.abc import Callable

from benchmarks.report import add_write_docs, documented
from kafkalite import Consumer, Producer, ShareConsumer
from kafkalite.admin import AdminClient, ConfigResource, NewTopic
from kafkalite_server.embedded import EmbeddedCluster

VALUE = b"v" * 100
TOPIC = "share-bench"
TIMEOUT_S = 600


def produce(bootstrap: str, records: int, partitions: int) -> None:
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.create_topics([NewTopic(TOPIC, partitions, 1)])
    with Producer(bootstrap_servers=bootstrap, linger_ms=5, batch_size=65536) as producer:
        for i in range(records):
            producer.send(TOPIC, VALUE, partition=i % partitions)
        producer.flush()


def earliest(bootstrap: str, group: str) -> None:
    """A share group starts where ``share.auto.offset.reset`` says: here, the beginning."""
    with AdminClient(bootstrap_servers=bootstrap) as admin:
        admin.incremental_alter_configs([ConfigResource(
            "group", group, configs={"share.auto.offset.reset": "earliest"})],
            raise_on_unknown=False)


def timed(records: int, poll: Callable[[], int]) -> float:
    """Records per second from the first record until ``records`` came."""
    deadline = time.monotonic() + TIMEOUT_S
    first = 0
    while not first:
        first = poll()
        if time.monotonic() > deadline:
            raise SystemExit(f"no record in {TIMEOUT_S} s")
    started = time.perf_counter()
    received = first
    while received < records:
        if time.monotonic() > deadline:
            raise SystemExit(f"only {received} of {records} records in {TIMEOUT_S} s")
        received += poll()
    return (records - first) / (time.perf_counter() - started)


def kafkalite_consumer(bootstrap: str, records: int) -> float:
    with Consumer(TOPIC, bootstrap_servers=bootstrap, group_id="plain-kafkalite",
                  auto_offset_reset="earliest") as consumer:
        return timed(records, lambda: sum(map(len, consumer.poll(500).values())))


def kafkalite_share_consumer(bootstrap: str, records: int) -> float:
    earliest(bootstrap, "share-kafkalite")
    with ShareConsumer(TOPIC, bootstrap_servers=bootstrap,
                       group_id="share-kafkalite") as consumer:
        rate = timed(records, lambda: len(consumer.poll(500)))
        consumer.commit_sync()
        return rate


def confluent_consumer(bootstrap: str, records: int) -> float:
    from confluent_kafka import Consumer as ConfluentConsumer

    consumer = ConfluentConsumer({"bootstrap.servers": bootstrap, "group.id": "plain-confluent",
                                 "auto.offset.reset": "earliest"})
    consumer.subscribe([TOPIC])
    try:
        return timed(records, lambda: sum(1 for m in consumer.consume(1000, 0.5)
                                          if m.error() is None))
    finally:
        consumer.close()


def confluent_share_consumer(bootstrap: str, records: int) -> float:
    from confluent_kafka import ShareConsumer as ConfluentShareConsumer

    earliest(bootstrap, "share-confluent")
    consumer = ConfluentShareConsumer({"bootstrap.servers": bootstrap,
                                       "group.id": "share-confluent", "log_level": 0})
    consumer.subscribe([TOPIC])
    try:
        return timed(records, lambda: sum(1 for m in consumer.poll(0.5) if m.error() is None))
    finally:
        consumer.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=50_000)
    parser.add_argument("--partitions", type=int, default=4)
    add_write_docs(parser)
    args = parser.parse_args()
    cases: list[tuple[str, Callable[[str, int], float]]] = [
        ("kafkalite Consumer (consumer group)", kafkalite_consumer),
        ("kafkalite ShareConsumer (share group)", kafkalite_share_consumer)]
    try:
        import confluent_kafka  # noqa: F401
        cases += [("confluent-kafka Consumer (consumer group)", confluent_consumer),
                  ("confluent-kafka ShareConsumer (share group)", confluent_share_consumer)]
    except ImportError:
        pass
    with documented("benchmarks.share", args.write_docs):
        with EmbeddedCluster(config={"num.partitions": str(args.partitions)}) as cluster:
            bootstrap = cluster.bootstrap_servers
            produce(bootstrap, args.records, args.partitions)
            rows = [(name, case(bootstrap, args.records)) for name, case in cases]
        print(f"{args.records:,} records of {len(VALUE)} bytes, {args.partitions} partitions, "
              "one member each")
        print(f"{'case':<46}{'records/s':>12}")
        for name, rate in rows:
            print(f"{name:<46}{rate:>12,.0f}")


if __name__ == "__main__":
    main()
