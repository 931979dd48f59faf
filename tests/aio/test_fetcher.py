"""The consumer builds each ConsumerRecord without calling its ``__init__`` (a faster path,
compiled where the codec is built): the records must equal the constructor's, every field
included, from the C loop and from the Python one alike."""

from __future__ import annotations

import dataclasses

import pytest

from kafkalite.aio import fetcher
from kafkalite.aio.fetcher import RECORD_SLOTS, Chunk, records
from kafkalite.aio.structs import ConsumerRecord
from kafkalite.records import iter_batches
from kafkalite.records.builder import BatchBuilder
from kafkalite.structs import TopicPartition

TP = TopicPartition("ledger", 3)


@pytest.fixture(params=["compiled", "python"])
def codec(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> str:
    """Each test once with the compiled loop (skipped where it is not built) and once with
    the Python one."""
    if request.param == "python":
        monkeypatch.setattr(fetcher, "speedups", None)
    elif fetcher.speedups is None:
        pytest.skip("the compiled codec is not built")
    return str(request.param)


def decoded() -> Chunk:
    builder = BatchBuilder(2, 0, 16384)
    builder.append(1_700_000_000_000, b"k1", b"first", None)
    builder.append(1_700_000_000_001, None, b"second", [("trace", b"abc")])
    builder.append(1_700_000_000_002, b"k3", None, None)
    (batch,) = iter_batches(builder.build())
    return Chunk(batch.columns(max_bytes=1 << 20), 1)


def test_records_equal_the_constructors_with_every_field_set(codec: str) -> None:
    built = records(TP, [decoded()], None, None)
    assert built == [
        ConsumerRecord("ledger", 3, 0, 1_700_000_000_000, 1, b"k1", b"first", None, 2, 5, ()),
        ConsumerRecord("ledger", 3, 1, 1_700_000_000_001, 1, None, b"second", None, -1, 6,
                       (("trace", b"abc"),)),
        ConsumerRecord("ledger", 3, 2, 1_700_000_000_002, 1, b"k3", None, None, 2, -1, ()),
    ]
    names = [field.name for field in dataclasses.fields(ConsumerRecord)]
    assert sorted(RECORD_SLOTS) == sorted(names)
    assert all(hasattr(record, name) for record in built for name in names)


def test_deserializers_apply_and_sizes_stay_the_serialized_ones(codec: str) -> None:
    (first, second, third) = records(TP, [decoded()], bytes.decode, bytes.upper)
    assert (first.key, first.value, first.serialized_value_size) == ("k1", b"FIRST", 5)
    assert (second.key, second.serialized_key_size) == (None, -1)
    assert (third.value, third.serialized_value_size) == (None, -1)


def test_the_compiled_loop_declines_a_class_of_another_layout() -> None:
    if fetcher.speedups is None:
        pytest.skip("the compiled codec is not built")

    @dataclasses.dataclass
    class WithDict:  # no __slots__: its fields live in a __dict__
        topic: str

    chunk = decoded()
    columns = chunk.columns
    args = ("ledger", 3, 1, columns.offsets, columns.timestamps, columns.keys, columns.values,
            columns.headers, columns.keys, columns.values)
    assert fetcher.speedups.slot_records(WithDict, RECORD_SLOTS, *args) is None
    assert fetcher.speedups.slot_records(ConsumerRecord, RECORD_SLOTS[::-1][:3], *args) is None
    made = fetcher.speedups.slot_records(ConsumerRecord, RECORD_SLOTS, *args)
    assert made == records(TP, [chunk], None, None)
