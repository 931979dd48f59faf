"""The compiled record codec against the Python reference, on random and hostile input.

Each compiled function must return exactly what the Python codec returns, or None
(declined: the caller then runs the Python codec). In particular it must never accept
records the Python decoder rejects, nor crash on any bytes, whatever ``pos``, ``end`` and
``count`` say. Skipped where the extension is not built.
"""

from __future__ import annotations

import contextlib
import importlib
from collections.abc import Iterator
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from kafkalite.errors import CorruptRecordError, UnsupportedCodecError
from kafkalite.records import (
    BatchBuilder,
    accelerator,
    builder,
    decode_batches,
    v2_records,
    validation,
)
from kafkalite.records.batch_header import V2_HEADER_SIZE, read_batch_header
from kafkalite.records.builder import PythonRecordsWriter, encode_record_python
from kafkalite.records.v2_records import decode_columns_python
from kafkalite.records.validation import (
    InvalidRecordsError,
    check_batch_records,
    check_records_python,
)

try:
    speedups = importlib.import_module("kafkalite.records._speedups")
except ImportError:  # pragma: no cover - depends on the build
    speedups = None

pytestmark = pytest.mark.skipif(speedups is None, reason="the compiled codec is not built")
WRITERS = [PythonRecordsWriter, *([] if speedups is None else [speedups.RecordsWriter])]

INT64 = 2**63
blobs = (st.none() | st.binary(max_size=60) | st.binary(min_size=8180, max_size=8200)
         | st.builds(bytearray, st.binary(max_size=20)))
header_lists = st.lists(st.tuples(st.text(max_size=8), st.none() | st.binary(max_size=20)),
                        max_size=3) | st.none()
timestamps = st.integers(min_value=0, max_value=2**41) | st.integers(-INT64, INT64 - 1)
records = st.lists(st.tuples(timestamps, blobs, blobs, header_lists), min_size=1, max_size=12)


@contextlib.contextmanager
def python_codec() -> Iterator[None]:
    """The Python codec only, for this block (what ``KAFKALITE_NO_SPEEDUPS=1`` selects)."""
    saved = (builder.RecordsWriter, builder._encode_records, builder._encode_arrow_records,
             v2_records._compiled_decode, validation._compiled_check)
    builder.RecordsWriter = PythonRecordsWriter
    builder._encode_records = builder._encode_arrow_records = None
    v2_records._compiled_decode = validation._compiled_check = None
    try:
        yield
    finally:
        (builder.RecordsWriter, builder._encode_records, builder._encode_arrow_records,
         v2_records._compiled_decode, validation._compiled_check) = saved


def test_the_package_uses_it_when_built() -> None:
    assert accelerator.speedups is speedups or accelerator.ENABLED is False
    assert speedups.API_VERSION == accelerator.API_VERSION


odd_timestamps = st.floats(allow_nan=False) | st.text(max_size=3) | st.integers(
    -2**70, 2**70) | st.booleans()


def _outcomes(writer: Any, appends: list) -> list:
    """What each append returned (or raised, as type and message), then the end state."""
    outcomes: list = []
    for timestamp, key, value, headers in appends:
        try:
            outcomes.append(writer.append_future(timestamp, key, value, headers))
        except (TypeError, ValueError) as exc:
            outcomes.append((type(exc), str(exc)))
    return [*outcomes, writer.record_count, writer.size_in_bytes, writer.base_timestamp,
            writer.max_timestamp, writer.getvalue()]


class RecordFuture(tuple):
    __slots__ = ()


@settings(max_examples=300,
          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(appends=st.lists(st.tuples(timestamps | odd_timestamps, blobs, blobs, header_lists),
                        min_size=1, max_size=8),
       batch_size=st.sampled_from([61, 200, 16384, 1 << 62]))
@example(appends=[(True, None, b"v", None), (-2**63, None, b"v", None)],  # a bool first
         batch_size=16384)                                             # timestamp is its int
def test_both_writers_give_the_same_bytes_futures_and_errors(appends: list,
                                                             batch_size: int) -> None:
    results = []
    for writer_type in (speedups.RecordsWriter, PythonRecordsWriter):
        writer = writer_type(batch_size, V2_HEADER_SIZE, encode_record_python)
        writer.bind_futures(RecordFuture, "tp", "future")
        results.append(_outcomes(writer, appends))
    assert results[0] == results[1]
    assert all(type(f) is RecordFuture for f in results[0] if isinstance(f, tuple)
               and f[:2] == ("tp", "future"))


def test_offset_deltas_past_one_varint_byte_encode_the_same() -> None:
    written = []
    for writer_type in (speedups.RecordsWriter, PythonRecordsWriter):
        writer = writer_type(1 << 62, V2_HEADER_SIZE, encode_record_python)
        for index in range(20_000):
            assert writer.append(1_700_000_000_000 + index % 7, None, b"v", None)
        written.append(writer.getvalue())
    assert written[0] == written[1]


def test_a_writer_refuses_futures_it_was_not_told_how_to_build() -> None:
    writer = speedups.RecordsWriter(100, V2_HEADER_SIZE, encode_record_python)
    with pytest.raises(RuntimeError, match="bind_futures"):
        writer.append_future(0, None, b"v", None)
    with pytest.raises(TypeError, match="tuple subclass"):
        writer.bind_futures(dict, "tp", "future")
    with pytest.raises(ValueError, match="totals below"):
        writer.extend(b"", 0, 0, 0, -1)


@pytest.mark.parametrize("writer_type", WRITERS)
def test_a_sealed_writer_takes_nothing_more(writer_type: Any) -> None:
    writer = writer_type(1 << 20, V2_HEADER_SIZE, encode_record_python)
    writer.bind_futures(RecordFuture, "tp", "future")
    assert writer.append_future(5, None, b"v", None) == RecordFuture(("tp", "future", 0, 5, -1, 1))
    held = writer.getvalue()
    assert not writer.sealed
    writer.seal()
    assert writer.sealed
    assert writer.append_future(6, None, b"v", None) is None
    assert writer.append(6, None, b"v", None) is False
    with pytest.raises(ValueError, match="sealed"):
        writer.extend(b"", 5, writer.size_in_bytes, writer.record_count, 5)
    assert (writer.record_count, writer.getvalue()) == (1, held)


@pytest.mark.parametrize("writer_type", WRITERS)
def test_building_a_batch_seals_its_writer(writer_type: Any, monkeypatch: Any) -> None:
    monkeypatch.setattr(builder, "RecordsWriter", writer_type)
    batch = builder.RecordBatchBuilder(2, None, 1 << 20)
    assert batch.append(1, None, b"v")
    built = batch.build()
    assert not batch.append(2, None, b"late")
    assert batch.record_count == 1 and batch.build() == built


def _build(batch: list, batch_size: int, bulk: bool) -> list[bytes]:
    """Batches of ``batch`` records, by ``append_many`` (bulk) or ``append``."""
    built: list[bytes] = []
    columns = [list(column) for column in zip(*batch, strict=True)]
    stamps, keys, values, headers = columns
    index = 0
    while index < len(batch):
        target = BatchBuilder(2, None, batch_size, base_offset=5)
        if bulk:
            index = target.append_many(stamps, keys, values,
                                       None if not any(headers) else headers, index,
                                       len(batch))
        else:
            while index < len(batch) and target.append(*columns_at(columns, index)):
                index += 1
        built.append(target.build())
    return built


def columns_at(columns: list[list], index: int) -> tuple:
    return tuple(column[index] for column in columns)


@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
@given(batch=records, batch_size=st.sampled_from([100, 1000, 16384, 1 << 30]),
       bulk=st.booleans())
def test_batches_encode_to_the_same_bytes(batch: list, batch_size: int, bulk: bool) -> None:
    stamps = [stamp for stamp, *_ in batch]
    if max(stamps) - min(stamps) >= INT64:  # a delta within any batch must fit 64 bits
        batch = [(stamps[0], *rest) for _, *rest in batch]
    compiled = _build(batch, batch_size, bulk)
    with python_codec():
        assert compiled == _build(batch, batch_size, bulk)


@settings(max_examples=200)
@given(batch=records, base_offset=st.integers(0, 2**40) | st.just(INT64 - 3),
       base_timestamp=st.integers(-INT64, INT64 - 1))
def test_batches_decode_to_the_same_columns(batch: list, base_offset: int,
                                            base_timestamp: int) -> None:
    data = _records_section(batch)
    count = len(batch)
    expected = decode_columns_python(data, 0, len(data), count, base_offset, base_timestamp)
    decoded = speedups.decode_records(data, 0, len(data), count, base_offset, base_timestamp)
    if decoded is not None:  # declined only where a value leaves int64 (Python: big ints)
        assert tuple(decoded) == tuple(expected)
        assert all(type(v) is bytes for v in decoded[3] if v is not None)
    else:
        assert any(not -INT64 <= number < INT64 for number in expected.offsets
                   + expected.timestamps)
    assert v2_records.decode_columns(data, 0, len(data), count, base_offset,
                                     base_timestamp) == expected


def _records_section(batch: list) -> bytes:
    base = batch[0][0]
    return b"".join(encode_record_python(max(-INT64, min(INT64 - 1, stamp - base)), index, key,
                                         value, headers)
                    for index, (stamp, key, value, headers) in enumerate(batch))


def _python_outcome(data: bytes, pos: int, end: int, count: int) -> object:
    try:
        return tuple(decode_columns_python(data, pos, end, count, 100, 1_000))
    except CorruptRecordError:
        return CorruptRecordError


def _check_decoder(data: bytes, pos: int, end: int, count: int) -> None:
    decoded = speedups.decode_records(data, pos, end, count, 100, 1_000)
    if decoded is not None:
        assert tuple(decoded) == _python_outcome(data, pos, end, count)


edits = st.lists(st.tuples(st.integers(min_value=0), st.integers(0, 255)), min_size=1,
                 max_size=4)
small_blobs = st.none() | st.binary(max_size=6)
small_records = st.lists(st.tuples(st.integers(0, 300), small_blobs, small_blobs,
                                   st.none() | st.lists(st.tuples(st.text(max_size=3),
                                                                  small_blobs), max_size=2)),
                         min_size=1, max_size=6)


@settings(max_examples=1500)
@given(batch=small_records | records, edits=edits, nudges=edits,
       cut=st.none() | st.integers(0, 20_000),
       count_change=st.sampled_from([0, 0, 0, -1, 1, 2**31 - 1]))
def test_mutated_records_are_never_accepted_where_python_rejects_them(
        batch: list, edits: list, nudges: list, cut: int | None, count_change: int) -> None:
    data = bytearray(_records_section(batch))
    for position, byte in edits[:1]:
        data[position % len(data)] = byte
    for position, step in nudges:  # off-by-a-little lengths and counts
        data[position % len(data)] = (data[position % len(data)] + step % 5 - 2) % 256
    data = bytes(data[:cut])
    _check_decoder(data, 0, len(data), len(batch) + count_change)


@pytest.mark.parametrize("length", [6, 7, 9, 10])
def test_a_record_must_end_where_its_length_says(length: int) -> None:
    record = encode_record_python(0, 0, b"k", b"v", None)
    assert record[0] == 8 * 2  # the body takes 8 bytes
    data = bytes([length * 2]) + record[1:] + b"\x00" * max(0, length - 8)
    assert speedups.decode_records(data, 0, len(data), 1, 0, 0) is None
    with pytest.raises(CorruptRecordError):
        decode_columns_python(data, 0, len(data), 1, 0, 0)
    assert speedups.decode_records(record, 0, len(record), 1, 0, 0) is not None


@settings(max_examples=600)
@given(data=st.binary(max_size=200), pos=st.integers(-5, 210), end=st.integers(-5, 210),
       count=st.integers(-2, 40) | st.integers(-2**63, 2**63 - 1))
def test_hostile_arguments_never_crash(data: bytes, pos: int, end: int, count: int) -> None:
    decoded = speedups.decode_records(data, pos, end, count, 0, 0)
    if decoded is not None:
        assert 0 <= pos < end <= len(data)
        assert tuple(decoded) == _python_outcome(data, pos, end, count)


@pytest.mark.parametrize("field", [
    b"\xff" * 9 + b"\x7f",  # a varint above 64 bits: Python decodes a big integer
    b"\xff" * 9 + b"\x02",
    b"\xfe" + b"\xff" * 8 + b"\x03",
    b"\xff" * 11,  # longer than a varint may be
    b"\x80",  # truncated
])
def test_overlong_and_truncated_varints_are_declined(field: bytes) -> None:
    def record(timestamp_delta: bytes) -> bytes:
        body = b"\x00" + timestamp_delta + b"\x00\x02k\x02v\x00"
        return bytes([len(body) * 2]) + body

    data = record(field)
    assert speedups.decode_records(data, 0, len(data), 1, 0, 0) is None
    data = record(b"\x02")  # delta 1
    assert speedups.decode_records(data, 0, len(data), 1, 0, 0) is not None


def _batch_bytes(batch: list, codec: str | None) -> bytes:
    target = BatchBuilder(2, codec, 1 << 30)
    for stamp, key, value, headers in batch:
        target.append(stamp, key, value, headers)
    return target.build()


def _outcome(data: bytes) -> object:
    try:
        return [(r.offset, r.timestamp, r.key, r.value, r.headers) for r in decode_batches(data, check_crcs=False)]
    except (CorruptRecordError, UnsupportedCodecError) as exc:
        return type(exc), str(exc)


@settings(max_examples=300)
@given(batch=st.lists(st.tuples(st.integers(0, 2**41), blobs, blobs, header_lists),
                      min_size=1, max_size=8),
       codec=st.sampled_from([None, "lz4", "gzip"]), edits=edits,
       cut=st.none() | st.integers(0, 20_000))
def test_both_codecs_raise_the_same_typed_errors(batch: list, codec: str | None, edits: list,
                                                 cut: int | None) -> None:
    data = bytearray(_batch_bytes(batch, codec) * 2)
    for position, byte in edits:
        data[V2_HEADER_SIZE + position % (len(data) - V2_HEADER_SIZE)] = byte
    data = bytes(data[:cut])
    compiled = _outcome(data)
    with python_codec():
        assert compiled == _outcome(data)


def test_declined_encoding_falls_back_to_python_errors() -> None:
    target = BatchBuilder(2, None, 1 << 20)
    with pytest.raises(TypeError, match="record value must be bytes-like"):
        target.append(0, None, "text")  # type: ignore[arg-type]
    assert speedups.encode_records([0], [None], ["text"], None, 0, 1, 0, 0, 61, 100, -1) is None
    with pytest.raises(TypeError, match="record value must be bytes-like"):
        target.append_many([0], [None], ["text"], None, 0, 1)  # type: ignore[list-item]
    assert target.record_count == 0
    memory = memoryview(b"abc")
    assert target.append(1, memory, b"v", [("h", memoryview(b"x"))])  # declined, encoded
    with python_codec():
        reference = BatchBuilder(2, None, 1 << 20)
        reference.append(1, memory, b"v", [("h", memoryview(b"x"))])
    assert target.build() == reference.build()


def test_large_base_offset_overflowing_int64_matches_python() -> None:
    data = _records_section([(0, None, b"v", None)] * 3)
    columns = v2_records.decode_columns(data, 0, len(data), 3, INT64 - 2, 0)
    assert columns.offsets == [INT64 - 2, INT64 - 1, INT64]


def test_header_names_decode_invalid_utf8_as_python_does() -> None:
    header = b"\x02" + b"\x04\xff\xfe" + b"\x02v"  # one header, name 0xff 0xfe, value "v"
    body = b"\x00\x00\x00\x01\x01" + header
    data = bytes([len(body) * 2]) + body
    decoded = speedups.decode_records(data, 0, len(data), 1, 0, 0)
    assert tuple(decoded) == tuple(decode_columns_python(data, 0, len(data), 1, 0, 0))
    assert decoded[4][0] == (("\ufffd\ufffd", b"v"),)


# ---- the broker's validation walk ----------------------------------------------------------


def _walk_outcome(data: bytes | bytearray | memoryview, pos: int, end: int,
                  count: int) -> object:
    try:
        return check_records_python(data, pos, end, count)
    except InvalidRecordsError as exc:
        return str(exc), exc.problems


def _check_walk(data: bytes | bytearray | memoryview, pos: int, end: int, count: int) -> None:
    """The compiled walk accepts only what the Python walk accepts, with the same null keys."""
    walked = speedups.check_records(data, pos, end, count)
    if walked is not None:
        assert type(walked) is list
        assert walked == _walk_outcome(data, pos, end, count)


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(batch=records | small_records, prefix=st.binary(max_size=3),
       suffix=st.binary(max_size=3), kind=st.sampled_from([bytes, bytearray, memoryview]))
def test_valid_records_walk_to_the_same_null_keys(batch: list, prefix: bytes, suffix: bytes,
                                                  kind: type) -> None:
    section = _records_section(batch)
    data = kind(prefix + section + suffix)
    pos, end = len(prefix), len(prefix) + len(section)
    expected = [index for index, (_, key, *_) in enumerate(batch) if key is None]
    assert check_records_python(data, pos, end, len(batch)) == expected
    assert speedups.check_records(data, pos, end, len(batch)) == expected  # never declined
    assert validation.check_records(data, pos, end, len(batch)) == expected


@settings(max_examples=1500)
@given(batch=small_records | records, edits=edits, nudges=edits,
       cut=st.none() | st.integers(0, 20_000),
       count_change=st.sampled_from([0, 0, 0, -1, 1, 2**31 - 1]))
def test_mutated_records_never_pass_the_walk_where_python_rejects_them(
        batch: list, edits: list, nudges: list, cut: int | None, count_change: int) -> None:
    data = bytearray(_records_section(batch))
    for position, byte in edits[:1]:
        data[position % len(data)] = byte
    for position, step in nudges:
        data[position % len(data)] = (data[position % len(data)] + step % 5 - 2) % 256
    data = data[:cut]
    _check_walk(bytes(data), 0, len(data), len(batch) + count_change)
    _check_walk(data, 0, len(data) - 1, len(batch) + count_change)  # a record cut short


@settings(max_examples=600)
@given(data=st.binary(max_size=200), pos=st.integers(-5, 210), end=st.integers(-5, 210),
       count=st.integers(-2, 40) | st.integers(-2**63, 2**63 - 1))
def test_the_walk_on_hostile_arguments_never_crashes(data: bytes, pos: int, end: int,
                                                     count: int) -> None:
    walked = speedups.check_records(data, pos, end, count)
    if walked is not None:
        assert 0 <= pos < end <= len(data)
        assert walked == _walk_outcome(data, pos, end, count)


def _record(body_after_offset_delta: bytes, offset_delta: bytes = b"\x02") -> bytes:
    """A record (offset delta 1 unless given) from the bytes after its offset delta."""
    body = b"\x00\x00" + offset_delta + body_after_offset_delta
    return bytes([len(body) * 2]) + body


@pytest.mark.parametrize(("record", "message"), [
    (_record(b"\x03\x02v\x00"), "key length -2 is negative"),
    (_record(b"\x01\x05v\x00"), "value length -3 is negative"),
    (_record(b"\x02k\x02v\x01"), "header count -1 is invalid"),
    (_record(b"\x02k\x02v\x02\x01\x02v"), "header key length -1 is invalid"),
    (_record(b"\x02k\x02v\x02\x02h\x03"), "header value length -2 is invalid"),
    (_record(b"\x02k\x02v\x02\x02h\x04v"), "header value length 2 is invalid"),
    (_record(b"\x02k\x02v\x02\x0ah\x02v"), "header key length 5 is invalid"),
    (_record(b"\x02k\x02v\x06\x00\x00"), "header count 3 is invalid"),
    (_record(b"\x02k\x02v\x00\x00"), "does not match its fields"),
    (_record(b"\x02k\x02v\x02\x00\x81"), "record overruns its length"),  # value: -1, ends
    # one byte past the record (the walk's reads are bounded by the record, not the buffer)
    (_record(b"\x02k\x02v\x00", offset_delta=b"\x04"), "offset delta 2 where 1 belongs"),
    (b"\x0c\x00\x80\x00\x02\x01\x01", "value length -1 overruns the record"),  # no headers
    (b"\x0a\x00\x00\x00\x01\x01", "record length 5 does not fit"),
])
def test_each_bad_record_is_declined_and_named_by_the_python_walk(record: bytes,
                                                                   message: str) -> None:
    good = _record(b"\x02k\x02v\x80\x00", b"\x00")  # header count 0 in two bytes: valid
    data = good + record + b"\x00"
    end = len(data) - 1  # the second record ends there; one more byte follows in the buffer
    assert speedups.check_records(good, 0, len(good), 1) == []
    assert speedups.check_records(data, 0, end, 2) is None
    with pytest.raises(InvalidRecordsError, match=message) as caught:
        validation.check_records(data, 0, end, 2)
    assert [problem.index for problem in caught.value.problems] == [1]


@pytest.mark.parametrize("count", [1, 3, 0, -1])
def test_a_record_count_the_records_do_not_match_is_declined(count: int) -> None:
    data = _records_section([(0, None, b"a", None), (0, b"k", b"b", None)])
    assert speedups.check_records(data, 0, len(data), 2) == [0]
    assert speedups.check_records(data, 0, len(data), count) is None
    with pytest.raises(InvalidRecordsError, match=r"bytes follow|counts (3|-1) records"):
        validation.check_records(data, 0, len(data), count)


def _validation_outcome(data: bytes, keys_required: bool) -> object:
    header = read_batch_header(data)
    if header is None:
        return None
    try:
        check_batch_records(data, header, max_bytes=1 << 20, keys_required=keys_required)
    except CorruptRecordError as exc:  # InvalidRecordsError among them
        return type(exc), str(exc), getattr(exc, "problems", ())
    return "valid"


@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow])
@given(batch=st.lists(st.tuples(st.integers(0, 2**41), blobs, blobs, header_lists),
                      min_size=1, max_size=8) | small_records,
       codec=st.sampled_from([None, None, "lz4", "gzip"]), edits=edits,
       keys_required=st.booleans())
def test_batch_validation_gives_the_same_outcome_from_both_codecs(
        batch: list, codec: str | None, edits: list, keys_required: bool) -> None:
    data = bytearray(_batch_bytes(batch, codec))
    for position, byte in edits:
        data[V2_HEADER_SIZE + position % (len(data) - V2_HEADER_SIZE)] = byte
    compiled = _validation_outcome(bytes(data), keys_required)
    with python_codec():
        assert compiled == _validation_outcome(bytes(data), keys_required)
