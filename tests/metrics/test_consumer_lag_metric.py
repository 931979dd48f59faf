"""The SDK consumer's ``metrics()`` reports kafka-python's ``records-lag-max``: how far
behind the high watermark a partition's position was after a poll."""

from __future__ import annotations

from kafkalite import Consumer, Producer, TopicPartition
from kafkalite_server import EmbeddedCluster

RECORDS = 50
PER_POLL = 10


def test_records_lag_max_is_what_the_first_poll_left_behind() -> None:
    with EmbeddedCluster(1) as cluster:
        with Producer(bootstrap_servers=cluster.bootstrap_servers) as producer:
            for i in range(RECORDS):
                producer.send("lagging", f"v{i}".encode(), partition=0)
            producer.flush()
        with Consumer(bootstrap_servers=cluster.bootstrap_servers,
                      auto_offset_reset="earliest", max_poll_records=PER_POLL) as consumer:
            consumer.assign([TopicPartition("lagging", 0)])
            polled = 0
            for _ in range(100):
                polled = sum(map(len, consumer.poll(timeout_ms=500).values()))
                if polled:
                    break
            assert polled == PER_POLL
            lag_max = consumer.metrics()["consumer-fetch-manager-metrics"]["records-lag-max"]
            assert lag_max == RECORDS - PER_POLL
