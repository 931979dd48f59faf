"""Streamed record validation: a compressed section larger than STREAM_AFTER is walked as
it decompresses, piece by piece, and must judge every section as the whole walk does: the
same sections pass with the same null keys, the same fail, and a bad record named by both
is the same record. (A malformed field that runs past its record is read into the next
record by the whole walk but meets the end of the piece in a streamed one, so the message
may differ; both refuse the batch.) It holds one piece and a partial record at most."""

from __future__ import annotations

import os
import tracemalloc

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.records import encode_batch
from kafkalite.records.batch_header import V2_HEADER_SIZE, read_batch_header
from kafkalite.records.validation import (
    STREAM_AFTER,
    InvalidRecordsError,
    _check_streamed,
    check_batch_records,
    check_records_python,
)

MIB = 1 << 20

records = st.lists(st.tuples(st.none() | st.binary(max_size=12),
                             st.none() | st.binary(max_size=200),
                             st.lists(st.tuples(st.text(max_size=4), st.none() | st.binary(
                                 max_size=8)), max_size=2)),
                   min_size=1, max_size=25)


def _section(batch: list) -> bytes:
    data = encode_batch([(key, value, 1000, headers or None) for key, value, headers in batch])
    return data[V2_HEADER_SIZE:]


def _outcome(walk: object) -> object:
    """The null keys, or the indexes of the bad records named."""
    try:
        return walk()  # type: ignore[operator]
    except InvalidRecordsError as exc:
        return "invalid", [p.index for p in exc.problems]


def _pieces(data: bytes, sizes: list[int]) -> list[bytes]:
    pieces, position = [], 0
    for size in sizes * (len(data) // max(sum(sizes), 1) + 1):
        if position >= len(data):
            break
        pieces.append(data[position:position + size])
        position += size
    if position < len(data):
        pieces.append(data[position:])
    return pieces


@settings(max_examples=800, deadline=None)
@given(batch=records, edits=st.lists(st.tuples(st.integers(0, 10_000), st.integers(0, 255)),
                                     max_size=2),
       cut=st.none() | st.integers(0, 6_000), sizes=st.lists(st.integers(1, 300), min_size=1,
                                                              max_size=8),
       count_change=st.sampled_from([0, 0, 0, -1, 1]))
def test_the_streamed_walk_judges_like_the_whole_walk(batch: list, edits: list,
                                                       cut: int | None, sizes: list[int],
                                                       count_change: int) -> None:
    data = bytearray(_section(batch))
    for position, byte in edits:
        data[position % len(data)] = byte
    data = bytes(data[:cut])
    count = len(batch) + count_change
    whole = _outcome(lambda: check_records_python(data, 0, len(data), count))
    pieces = iter(_pieces(data, sizes))
    streamed = _outcome(lambda: _check_streamed(bytearray(next(pieces, b"")), pieces, count))
    if isinstance(whole, tuple) and isinstance(streamed, tuple) and whole[1] and streamed[1]:
        assert streamed[1] == whole[1]  # the same bad record
    else:
        assert (streamed if isinstance(streamed, list) else "invalid") == (
            whole if isinstance(whole, list) else "invalid")


@pytest.mark.parametrize("codec", ["gzip", "lz4", "zstd", "snappy"])
def test_a_large_compressed_batch_is_walked_as_it_streams(codec: str) -> None:
    """20 MiB of records that compress well: past STREAM_AFTER, validated without holding
    them (or the compressed batch) whole."""
    batch = encode_batch([(None if i % 7 == 0 else b"k%d" % i, os.urandom(8) * 125, 1000,
                           None) for i in range(20 * MIB // 1000)], compression=codec)
    header = read_batch_header(batch)
    assert header is not None
    tracemalloc.start()
    try:
        with pytest.raises(InvalidRecordsError) as caught:
            check_batch_records(batch, header, max_bytes=64 * MIB, keys_required=True)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert [p.index for p in caught.value.problems] == list(range(0, header.record_count, 7))
    assert len(batch) < 2 * MIB
    assert peak < STREAM_AFTER + 4 * MIB  # pieces and a record, not 20 MiB
    check_batch_records(batch, header, max_bytes=64 * MIB)  # and it is valid as it is
