"""Records decoded straight into Arrow buffers against the Python columns path.

``kafkalite.arrow.record_batch`` takes runs of records either as decoded Python columns or
as ranges of plain records sections, which the compiled codec decodes into Arrow buffers in
one call. Both must give equal RecordBatches, and a corrupt batch must be refused with the
same typed error whichever codec runs. Skipped where the extension is not built or
is disabled (``KAFKALITE_NO_SPEEDUPS=1``), where only the columns path runs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite import arrow
from kafkalite.errors import CorruptRecordError, UnsupportedCodecError
from kafkalite.records import BatchBuilder, accelerator, iter_batches, v2_records
from kafkalite.records.batch_header import V2_HEADER_SIZE
from kafkalite.records.v2_records import RecordSection, SectionRange

pa = pytest.importorskip("pyarrow")
speedups = accelerator.speedups

pytestmark = pytest.mark.skipif(speedups is None,
                                reason="the compiled codec is not built or is disabled")

INT64 = 2**63
blobs = (st.none() | st.binary(max_size=20) | st.binary(min_size=64, max_size=70)
         | st.sampled_from([b"x" * 9000, b""]))  # one-, two- and three-byte lengths
header_lists = st.none() | st.lists(st.tuples(st.text(max_size=5), st.none()
                                              | st.binary(max_size=10)), min_size=1, max_size=2)
timestamps = st.integers(0, 2**41) | st.integers(-2**62, 2**62)
records = st.lists(st.tuples(timestamps, blobs, blobs, header_lists), min_size=1, max_size=10)


@contextlib.contextmanager
def python_codec() -> Iterator[None]:
    """The Python codec only, for this block (what ``KAFKALITE_NO_SPEEDUPS=1`` selects)."""
    saved = (v2_records._compiled_decode, v2_records._compiled_is_plain,
             arrow._compiled_decode_arrow)
    v2_records._compiled_decode = v2_records._compiled_is_plain = None
    arrow._compiled_decode_arrow = None
    try:
        yield
    finally:
        (v2_records._compiled_decode, v2_records._compiled_is_plain,
         arrow._compiled_decode_arrow) = saved


def _fetched(batches: list[list], codec: str | None, log_append_time: bool) -> bytes:
    """Batches as a Fetch response holds them, offsets continuing from one to the next."""
    data = b""
    offset = 0
    for batch in batches:
        builder = BatchBuilder(2, codec, 1 << 30, base_offset=offset)
        for stamp, key, value, headers in batch:
            builder.append(stamp, key, value, headers)
        built = bytearray(builder.build())
        if log_append_time:
            built[21 + 1] |= 0x08  # attributes (low byte): the timestamp type bit
        data += bytes(built)
        offset += len(batch)
    return data


def _parts(data: bytes, cuts: list[int]) -> list[tuple[str, int, int, object]]:
    """Every batch as the fetcher keeps it (plain: a section range; else columns), the
    first starting ``cuts[0]`` records in and each ending ``cuts[i]`` records short."""
    parts: list[tuple[str, int, int, object]] = []
    for index, batch in enumerate(iter_batches(data)):
        section = batch.section()
        start = min(cuts[0], section.record_count) if index == 0 else 0
        stop = max(start, section.record_count - cuts[index % len(cuts)] % 2)
        if v2_records.is_plain(section):
            records: object = SectionRange(section, start, stop)
        else:
            records = SectionRange(section, start, stop).columns()
        parts.append((f"topic-{index % 2}", index % 3, batch.timestamp_type, records))
    return parts


def _table(data: bytes, cuts: list[int]) -> object:
    try:
        return arrow.record_batch(_parts(data, cuts), timestamp_type=True)
    except (CorruptRecordError, UnsupportedCodecError) as exc:
        return type(exc), str(exc)


@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(records, min_size=1, max_size=4),
       codec=st.sampled_from([None, None, "lz4"]), log_append_time=st.booleans(),
       cuts=st.lists(st.integers(0, 3), min_size=1, max_size=3))
def test_sections_and_columns_give_equal_record_batches(
        batches: list[list], codec: str | None, log_append_time: bool, cuts: list[int]) -> None:
    for batch in batches:  # timestamp deltas must fit a varlong
        batch[:] = [(batch[0][0], *rest) if not -INT64 <= stamp - batch[0][0] < INT64
                    else (stamp, *rest) for stamp, *rest in batch]
    data = _fetched(batches, codec, log_append_time)
    compiled = arrow.record_batch(_parts(data, cuts), timestamp_type=True)
    with python_codec():
        reference = arrow.record_batch(_parts(data, cuts), timestamp_type=True)
    assert compiled.schema == reference.schema
    assert compiled.equals(reference), (compiled.to_pylist(), reference.to_pylist())


def test_plain_runs_are_decoded_in_one_call_into_shared_buffers() -> None:
    batches = [[(1_000 + i, None if i % 3 == 0 else b"k%d" % i, None if i % 4 == 0
                 else b"v" * i, None) for i in range(50)] for _ in range(3)]
    sections = [batch.section() for batch in iter_batches(_fetched(batches, None, False))]
    assert all(map(v2_records.is_plain, sections))
    parts = [("t", 0, 0, SectionRange(section, 5 if index == 0 else 0, section.record_count))
             for index, section in enumerate(sections)]
    table = arrow.record_batch(parts)
    assert table.num_rows == 145
    assert table.column("key").null_count == 15 + 17 * 2
    assert table.column("value").null_count == 11 + 13 * 2
    assert table.column("offset").to_pylist() == list(range(5, 150))
    assert table.column("timestamp").cast(pa.int64()).to_pylist() == \
        [1_000 + i for i in range(5, 50)] + [1_000 + i for i in range(50)] * 2
    assert table.column("headers").to_pylist() == [[]] * 145
    # One buffer per column: the binary data is not a concatenation of per-batch arrays.
    assert len(table.column("value").buffers()) == 3


def test_sections_with_headers_or_gaps_are_not_plain() -> None:
    with_headers = _fetched([[(0, b"k", b"v", [("h", b"x")])]], None, False)
    assert not v2_records.is_plain(next(iter_batches(with_headers)).section())
    builder = BatchBuilder(2, None, 1 << 30)
    builder.append(0, b"k", b"v")
    plain = builder.build()
    assert v2_records.is_plain(next(iter_batches(plain)).section())
    section = next(iter_batches(plain)).section()
    # The same record claimed at offset delta 0 of a batch of two: declined, not guessed.
    assert not speedups.is_plain_section(section._replace(record_count=2))
    assert speedups.decode_arrow([(*section._replace(record_count=2), 0, 2)]) is None


edits = st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1,
                 max_size=4)


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(batches=st.lists(st.lists(st.tuples(st.integers(0, 2**41), blobs, blobs,
                                           st.just(None)), min_size=1, max_size=6),
                        min_size=1, max_size=3),
       codec=st.sampled_from([None, "gzip"]), edits=edits,
       cut=st.none() | st.integers(0, 20_000))
def test_corrupt_batches_are_refused_with_the_same_typed_error(
        batches: list[list], codec: str | None, edits: list, cut: int | None) -> None:
    data = bytearray(_fetched(batches, codec, False))
    for position, byte in edits:
        data[V2_HEADER_SIZE + position % (len(data) - V2_HEADER_SIZE)] = byte
    data = bytes(data[:cut])
    compiled = _table(data, [0])
    with python_codec():
        reference = _table(data, [0])
    if isinstance(compiled, tuple):
        assert compiled == reference
    else:
        assert not isinstance(reference, tuple) and compiled.equals(reference)


section_fields = st.tuples(st.binary(max_size=60), st.integers(-3, 70), st.integers(-3, 70),
                           st.integers(-2, 12) | st.integers(-INT64, INT64 - 1),
                           st.integers(-INT64, INT64 - 1), st.integers(-INT64, INT64 - 1),
                           st.none() | st.integers(0, 2**41), st.integers(-2, 12),
                           st.integers(-2, 12))


@settings(max_examples=600, deadline=None)
@given(sections=st.lists(section_fields, max_size=3))
def test_hostile_sections_never_crash(sections: list[tuple]) -> None:
    decoded = speedups.decode_arrow(sections)
    if decoded is None:
        return
    parts = [("t", 0, 0, SectionRange(RecordSection(*fields[:7]), fields[7], fields[8]))
             for fields in sections]
    compiled = arrow.record_batch(parts)
    with python_codec():
        assert compiled.equals(arrow.record_batch(parts))
