"""Property tests: random records round trip; mutated bytes fail only with typed errors."""

import contextlib

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kafkalite.errors import CorruptRecordError, UnsupportedCodecError
from kafkalite.records import assign_legacy_offsets, decode_batches, encode_batch

FORMATS = [(magic, codec) for magic in (0, 1, 2)
           for codec in (None, "gzip", "snappy", "lz4", "zstd")
           if not (codec == "zstd" and magic < 2)]
blobs = st.none() | st.binary(max_size=300)
headers = st.lists(st.tuples(st.text(max_size=10), st.none() | st.binary(max_size=40)),
                   max_size=3)
timestamps = st.integers(min_value=0, max_value=2**50)
record_lists = st.lists(st.tuples(blobs, blobs, timestamps, headers), min_size=1, max_size=20)


@pytest.mark.parametrize(("magic", "codec"), FORMATS)
@settings(max_examples=30)
@given(records=record_lists, base_offset=st.integers(min_value=0, max_value=2**40))
def test_round_trip(magic: int, codec: str | None, records: list, base_offset: int) -> None:
    if magic < 2:
        records = [(k, v, t, []) for k, v, t, _h in records]
    data = encode_batch(records, magic=magic, compression=codec, base_offset=base_offset)
    decoded = [(r.offset, r.timestamp, r.key, r.value, list(r.headers))
               for r in decode_batches(data)]
    assert decoded == [(base_offset + i, t if magic else -1, k, v, list(h))
                       for i, (k, v, t, h) in enumerate(records)]


mutations = st.lists(st.tuples(st.integers(min_value=0), st.integers(min_value=0, max_value=255)),
                     min_size=1, max_size=4)


def _mutate(data: bytes, edits: list[tuple[int, int]], cut: int | None) -> bytes:
    buf = bytearray(data)
    for position, byte in edits:
        buf[position % len(buf)] = byte
    return bytes(buf[:cut] if cut is not None else buf)


@settings(max_examples=400, deadline=2000)
@given(records=record_lists, fmt=st.sampled_from(FORMATS), edits=mutations,
       cut=st.none() | st.integers(min_value=0, max_value=4000), check_crcs=st.booleans())
def test_mutated_bytes_raise_only_typed_errors(records: list, fmt: tuple[int, str | None],
                                               edits: list[tuple[int, int]], cut: int | None,
                                               check_crcs: bool) -> None:
    magic, codec = fmt
    records = [(k, v, t, h if magic == 2 else []) for k, v, t, h in records]
    data = _mutate(encode_batch(records, magic=magic, compression=codec) * 2, edits, cut)
    try:
        for record in decode_batches(data, check_crcs=check_crcs):
            assert record.key is None or isinstance(record.key, bytes)
    except (CorruptRecordError, UnsupportedCodecError):
        pass
    if magic < 2:
        with contextlib.suppress(CorruptRecordError, UnsupportedCodecError):
            assign_legacy_offsets(data, 0)


@settings(max_examples=300)
@given(data=st.binary(max_size=400), check_crcs=st.booleans())
def test_random_bytes_raise_only_typed_errors(data: bytes, check_crcs: bool) -> None:
    with contextlib.suppress(CorruptRecordError, UnsupportedCodecError):
        list(decode_batches(data, check_crcs=check_crcs))
