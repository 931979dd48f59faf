from kafka.structs import OffsetAndMetadata as KafkaPythonOffsetAndMetadata
from kafka.structs import TopicPartition as KafkaPythonTopicPartition

from kafkalite.structs import (
    ConsumerRecord,
    OffsetAndMetadata,
    PartitionMetadata,
    RecordMetadata,
    TopicPartition,
)


def test_topic_partition_interoperates_with_kafka_python_tuples() -> None:
    ours = TopicPartition("orders", 3)
    theirs = KafkaPythonTopicPartition("orders", 3)
    assert ours == theirs and hash(ours) == hash(theirs)
    assert {ours: "x"}[theirs] == "x"
    assert sorted([TopicPartition("b", 0), TopicPartition("a", 2), TopicPartition("a", 10)]) == [
        ("a", 2),
        ("a", 10),
        ("b", 0),
    ]


def test_offset_and_metadata_defaults_match_kafka_python_positionally() -> None:
    assert OffsetAndMetadata(42) == (42, "", -1)
    assert OffsetAndMetadata(42, "m", 7) == KafkaPythonOffsetAndMetadata(42, "m", 7)


def test_records_and_partition_metadata_expose_their_topic_partition() -> None:
    record = ConsumerRecord("t", 1, 99, 1_700_000_000_000, 0, b"k", b"v", (("h", b"1"),))
    assert record.topic_partition == TopicPartition("t", 1)
    assert (record.leader_epoch, record.serialized_value_size) == (-1, -1)
    assert RecordMetadata("t", 2, 5, -1).topic_partition == TopicPartition("t", 2)
    meta = PartitionMetadata("t", 0, 1, 4, (1, 2), (1,))
    assert (meta.topic_partition, meta.error, meta.offline_replicas) == (
        TopicPartition("t", 0),
        0,
        (),
    )
