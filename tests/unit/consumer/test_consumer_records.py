"""A fetched chunk's ConsumerRecords: the compiled loop against the Python one.

``_consumer_records`` builds the records ``poll()`` returns; with the compiled codec one C
loop builds them, and it must give exactly what the Python comprehension gives (fields,
sizes, the chunk's byte count), or decline on input it does not handle.
"""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.consumer import fetcher
from kafkalite.consumer.fetcher import BatchChunk, _consumer_records
from kafkalite.records.accelerator import speedups
from kafkalite.records.v2_records import Columns
from kafkalite.serde import BytesDeserializer, Deserializer
from kafkalite.structs import ConsumerRecord, TopicPartition

pytestmark = pytest.mark.skipif(speedups is None, reason="the compiled codec is not built")

blobs = st.none() | st.binary(max_size=40) | st.binary(min_size=300, max_size=310)
rows = st.lists(st.tuples(st.integers(0, 2**63 - 1), st.integers(-2**63, 2**63 - 1), blobs,
                          blobs, st.lists(st.tuples(st.text(max_size=5),
                                                    st.none() | st.binary(max_size=5)),
                                          max_size=2).map(tuple)), max_size=30)


class Upper(Deserializer):
    """A deserializer that is not the bytes default: records carry its output."""

    def deserialize(self, topic: str, data: bytes | None) -> object:
        return None if data is None else data.upper()


def chunk_of(batch: list[tuple]) -> BatchChunk:
    columns = [list(column) for column in zip(*batch, strict=True)] or [[], [], [], [], []]
    return BatchChunk(Columns(*columns), 1, 7)


def python_records(tp: TopicPartition, chunk: BatchChunk, keys: Deserializer,
                   values: Deserializer) -> tuple[list[ConsumerRecord], int]:
    saved, fetcher.speedups = fetcher.speedups, None
    try:
        return _consumer_records(tp, chunk, keys, values)
    finally:
        fetcher.speedups = saved


@settings(max_examples=200)
@given(batch=rows, deserialize_keys=st.booleans())
def test_the_compiled_loop_builds_the_same_records(batch: list[tuple],
                                                   deserialize_keys: bool) -> None:
    tp = TopicPartition("orders", 3)
    chunk = chunk_of(batch)
    keys = Upper() if deserialize_keys else BytesDeserializer()
    records, size = _consumer_records(tp, chunk, keys, BytesDeserializer())
    expected, expected_size = python_records(tp, chunk, keys, BytesDeserializer())
    assert (records, size) == (expected, expected_size)
    assert all(type(record) is ConsumerRecord for record in records)
    assert size == sum(len(b) for row in batch for b in row[2:4] if b is not None)
    for record, row in zip(records, batch, strict=True):
        assert record.topic_partition == tp
        assert record.serialized_key_size == (-1 if row[2] is None else len(row[2]))


def test_input_it_does_not_handle_is_declined() -> None:
    offsets, stamps, keys, values, headers = [0, 1], [5, 5], [b"k", None], [b"v", b"w"], [(), ()]
    args = ["t", 0, 0, -1, offsets, stamps, keys, values, headers, keys, values]
    assert speedups.consumer_records(ConsumerRecord, *args) is not None
    assert speedups.consumer_records(tuple, *args) is not None  # a plain tuple layout is fine
    assert speedups.consumer_records(int, *args) is None  # not a tuple type
    assert speedups.consumer_records(ConsumerRecord, *args[:6], [b"k", 7], *args[7:]) is None
    assert speedups.consumer_records(ConsumerRecord, *args[:7], [bytearray(b"v"), b"w"],
                                     *args[8:]) is None
    assert speedups.consumer_records(ConsumerRecord, *args[:4], [0], *args[5:]) is None
    assert speedups.consumer_records(ConsumerRecord, *args[:4], tuple(offsets), *args[5:]) is None
    with pytest.raises(TypeError):
        speedups.consumer_records(ConsumerRecord, *args[:-1])
