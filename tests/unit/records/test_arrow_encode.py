"""Batches encoded from Arrow buffers against batches encoded from Python lists.

``Producer.send_batch`` hands Arrow keys and values to the batch builder as
``BinaryColumn`` s over the arrays' own buffers, and the compiled codec encodes records
from them in place. The batches must be byte for byte the ones the lists give, whatever
the array (nulls, slices, string and large types, several chunks); hostile buffers are
declined, never read out of bounds.
"""

from __future__ import annotations

import struct

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.arrow import columns_from_arrow
from kafkalite.records import BatchBuilder, accelerator
from kafkalite.records.builder import BinaryColumn

pa = pytest.importorskip("pyarrow")

blobs = (st.none() | st.binary(max_size=20) | st.binary(min_size=64, max_size=70)
         | st.sampled_from([b"x" * 9000, b""]))
arrow_types = st.sampled_from(["binary", "string", "large_binary", "large_string"])


def _array(values: list[bytes | None], kind: str, skip: int, chunks: int) -> object:
    if "string" in kind:
        values = [None if v is None else v.decode() for v in values]
    array = pa.array([b"pad"] * skip + values if "binary" in kind
                     else ["pad"] * skip + values, getattr(pa, kind)())
    array = array.slice(skip)  # a non-zero array offset
    if chunks > 1 and len(array) > 1:
        cut = len(array) // 2
        return pa.chunked_array([array.slice(0, cut), array.slice(cut)])
    return array


def _batches(timestamps: list[int], keys: object, values: object, batch_size: int
             ) -> list[bytes]:
    built = []
    index = 0
    while index < len(values):
        builder = BatchBuilder(2, None, batch_size, base_offset=3)
        index = builder.append_many(timestamps, keys, values, None, index, len(values))
        built.append(builder.build())
    return built


@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(values=st.lists(blobs, min_size=1, max_size=30), keyed=st.booleans(),
       kind=arrow_types, skip=st.integers(0, 3), chunks=st.integers(1, 2),
       batch_size=st.sampled_from([100, 1000, 16384]),
       stamps=st.lists(st.integers(0, 2**41), min_size=30, max_size=30))
def test_arrow_columns_encode_the_batches_lists_encode(
        values: list, keyed: bool, kind: str, skip: int, chunks: int, batch_size: int,
        stamps: list[int]) -> None:
    if "string" in kind:
        values = [None if v is None else v.decode("latin-1").encode() for v in values]
    keys = list(reversed(values)) if keyed else None
    column_values, column_keys, _, _ = columns_from_arrow(
        _array(values, kind, skip, chunks), None if keys is None
        else _array(keys, kind, 0, chunks), None, None)
    assert isinstance(column_values, BinaryColumn)
    assert list(column_values) == values
    assert column_values.max_size == max(map(len, filter(None, values)), default=0)
    if keys is None:
        column_keys = BinaryColumn.nulls(len(values))
    timestamps = stamps[:len(values)]
    assert _batches(timestamps, column_keys, column_values, batch_size) == _batches(
        timestamps, keys or [None] * len(values), values, batch_size)


def test_arrow_records_with_headers_take_the_per_record_path() -> None:
    values = pa.array([b"a", None, b"c"])
    column, _, _, _ = columns_from_arrow(values, None, None, None)
    builder = BatchBuilder(2, None, 1 << 20)
    headers = [[("h", b"1")], None, None]
    assert builder.append_many([0, 1, 2], BinaryColumn.nulls(3), column, headers, 0, 3) == 3
    reference = BatchBuilder(2, None, 1 << 20)
    reference.append_many([0, 1, 2], [None] * 3, [b"a", None, b"c"], headers, 0, 3)
    assert builder.build() == reference.build()


speedups = accelerator.speedups
compiled = pytest.mark.skipif(speedups is None or not hasattr(speedups, "encode_arrow_records"),
                              reason="the compiled codec is not built or is disabled")


def _column(offsets: list[int], data: bytes, first: int = 0, width: int = 4,
            validity: bytes | None = None) -> tuple:
    packed = struct.pack(f"={len(offsets)}{'i' if width == 4 else 'q'}", *offsets)
    return (validity, packed, data, first, len(offsets) - 1 - first, width)


@compiled
@pytest.mark.parametrize("values", [
    _column([0, 3, 99], b"abcdef"),  # past the data
    _column([0, 4, 2], b"abcdef"),  # backwards
    _column([-1, 2], b"abcdef"),  # negative
    _column([0, 2, 4], b"abcdef", first=5),  # rows past the offsets
    _column([0, 2, 4], b"abcdef", validity=b""),  # bitmap too short
    _column([0, 2, 4], b"abcdef", width=2),
    (None, b"\x00" * 8, b"ab", 0, 1),
])
def test_hostile_arrow_columns_are_declined(values: tuple) -> None:
    keys = _column([0, 0, 0], b"")
    assert speedups.encode_arrow_records([0, 0], keys, values, 0, 2, 0, 0, 61, 1 << 20,
                                         -1) is None


@compiled
def test_arrow_columns_encode_what_the_lists_encode_in_the_codec() -> None:
    values = _column([0, 2, 2, 6], b"abcdef", validity=bytes([0b101]))
    keys = _column([0, 1, 1, 1], b"k", validity=bytes([0b001]))
    encoded = speedups.encode_arrow_records([5, 6, 7], keys, values, 0, 3, 5, 0, 61,
                                            1 << 20, -1)
    assert encoded == speedups.encode_records([5, 6, 7], [b"k", None, None],
                                              [b"ab", None, b"cdef"], None, 0, 3, 5, 0, 61,
                                              1 << 20, -1)


@compiled
@settings(max_examples=300, deadline=None)
@given(offsets=st.lists(st.integers(-5, 40), min_size=1, max_size=6),
       data=st.binary(max_size=30), first=st.integers(0, 6), width=st.sampled_from([4, 8]),
       validity=st.none() | st.binary(max_size=2), stop=st.integers(1, 6))
def test_random_arrow_buffers_never_read_out_of_bounds(
        offsets: list[int], data: bytes, first: int, width: int, validity: bytes | None,
        stop: int) -> None:
    values = _column(offsets, data, 0, width, validity)
    values = (*values[:3], first, max(0, len(offsets) - 1 - first), width)
    keys = _column([0] * (stop + first + 1), b"", first, validity=bytes(2))  # all null
    encoded = speedups.encode_arrow_records([0] * stop, keys, values, 0, stop, 0, 0, 61,
                                            1 << 20, -1)
    if encoded is None:
        return
    rows = []
    for row in range(first, first + stop):
        if validity is not None and not validity[row >> 3] >> (row & 7) & 1:
            rows.append(None)
        else:
            rows.append(data[offsets[row]:offsets[row + 1]])
    assert encoded == speedups.encode_records([0] * stop, [None] * stop, rows, None, 0, stop,
                                              0, 0, 61, 1 << 20, -1)
