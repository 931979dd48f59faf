"""The consumer builds each ConsumerRecord without calling its ``__init__`` (a faster path):
the records must equal the constructor's, every field included."""

from __future__ import annotations

import dataclasses

from kafkalite.aio.fetcher import Chunk, records
from kafkalite.aio.structs import ConsumerRecord
from kafkalite.records import iter_batches
from kafkalite.records.builder import BatchBuilder
from kafkalite.structs import TopicPartition

TP = TopicPartition("ledger", 3)


def decoded() -> Chunk:
    builder = BatchBuilder(2, 0, 16384)
    builder.append(1_700_000_000_000, b"k1", b"first", None)
    builder.append(1_700_000_000_001, None, b"second", [("trace", b"abc")])
    builder.append(1_700_000_000_002, b"k3", None, None)
    (batch,) = iter_batches(builder.build())
    return Chunk(batch.columns(max_bytes=1 << 20), 1)


def test_records_equal_the_constructors_with_every_field_set() -> None:
    built = records(TP, [decoded()], None, None)
    assert built == [
        ConsumerRecord("ledger", 3, 0, 1_700_000_000_000, 1, b"k1", b"first", None, 2, 5, ()),
        ConsumerRecord("ledger", 3, 1, 1_700_000_000_001, 1, None, b"second", None, -1, 6,
                       (("trace", b"abc"),)),
        ConsumerRecord("ledger", 3, 2, 1_700_000_000_002, 1, b"k3", None, None, 2, -1, ()),
    ]
    names = [field.name for field in dataclasses.fields(ConsumerRecord)]
    assert all(hasattr(record, name) for record in built for name in names)


def test_deserializers_apply_and_sizes_stay_the_serialized_ones() -> None:
    (first, second, third) = records(TP, [decoded()], bytes.decode, bytes.upper)
    assert (first.key, first.value, first.serialized_value_size) == ("k1", b"FIRST", 5)
    assert (second.key, second.serialized_key_size) == (None, -1)
    assert (third.value, third.serialized_value_size) == (None, -1)
