"""Our Producer against librdkafka's mock cluster (an independent Kafka implementation):
every codec, read back with confluent-kafka consumers by assignment."""

from __future__ import annotations

import confluent_kafka
import pytest

from kafkalite import Producer

pytestmark = pytest.mark.compat

PARTITIONS = 4


def read_back(bootstrap: str, topic: str, expected: int) -> list[confluent_kafka.Message]:
    consumer = confluent_kafka.Consumer({
        "bootstrap.servers": bootstrap, "group.id": f"verify-{topic}", "log_level": 3,
        "enable.auto.commit": False,
    })
    consumer.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    messages: list[confluent_kafka.Message] = []
    try:
        while len(messages) < expected:
            message = consumer.poll(10)
            assert message is not None, f"only {len(messages)} of {expected} records came back"
            assert not message.error(), message.error()
            messages.append(message)
    finally:
        consumer.close()
    return messages


@pytest.mark.parametrize("codec", [None, "gzip", "snappy", "lz4", "zstd"])
@pytest.mark.parametrize("acks", ["all", 1])
def test_every_codec_round_trips(mock_cluster: str, codec: str | None, acks: object) -> None:
    topic = f"codec-{codec}-{acks}"
    count = 2000
    with Producer(mock_cluster, compression_type=codec, acks=acks, linger_ms=2) as producer:
        futures = [
            producer.send(topic, b"value-%d" % i * 3, key=b"key-%d" % (i % 37),
                          timestamp_ms=1_700_000_000_000 + i, headers=[("n", b"%d" % i)])
            for i in range(count)
        ]
        producer.flush(30)
        metadata = [f.get(0) for f in futures]
    messages = read_back(mock_cluster, topic, count)
    by_value = {m.value(): m for m in messages}
    assert len(by_value) == count
    for i, meta in enumerate(metadata):
        message = by_value[b"value-%d" % i * 3]
        assert message.key() == b"key-%d" % (i % 37)
        assert message.headers() == [("n", b"%d" % i)]
        assert message.timestamp() == (confluent_kafka.TIMESTAMP_CREATE_TIME,
                                       1_700_000_000_000 + i)
        assert (message.partition(), message.offset()) == (meta.partition, meta.offset)


def test_keys_land_where_java_puts_them(mock_cluster: str) -> None:
    """librdkafka's murmur2_random partitioner is the Java one: same key, same partition."""
    topic = "keys"
    keys = [b"key-%d" % i for i in range(200)]
    with Producer(mock_cluster) as producer:
        ours = {k: producer.send(topic, b"v", key=k) for k in keys}
        producer.flush(30)
        ours_partitions = {k: f.get(0).partition for k, f in ours.items()}
    reference = confluent_kafka.Producer({
        "bootstrap.servers": mock_cluster, "partitioner": "murmur2_random", "log_level": 3,
    })
    theirs: dict[bytes, int] = {}
    for key in keys:
        reference.produce(topic, b"v", key=key,
                          on_delivery=lambda err, msg: theirs.__setitem__(msg.key(), msg.partition()))
    reference.flush(30)
    assert ours_partitions == theirs
