"""Primitive codecs: golden bytes, hypothesis round trips, typed errors on bad input."""

from __future__ import annotations

import uuid
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol import primitives as p
from kafkalite.protocol.schema import Array

# (type, flexible, nullable, value, golden hex)
GOLDEN = [
    (p.INT8, False, False, -2, "fe"),
    (p.INT16, False, False, 0x0102, "0102"),
    (p.INT32, False, False, -1, "ffffffff"),
    (p.INT64, False, False, 1, "0000000000000001"),
    (p.UINT16, False, False, 65535, "ffff"),
    (p.UINT32, False, False, 2**32 - 1, "ffffffff"),
    (p.FLOAT64, False, False, 1.5, "3ff8000000000000"),
    (p.BOOL, False, False, True, "01"),
    (p.UVARINT, False, False, 300, "ac02"),
    (p.VARINT, False, False, -1, "01"),
    (p.VARLONG, False, False, 2**40, "8080808080" "40"),  # zig-zag 2**41
    (p.UUID, False, False, uuid.UUID(int=1), "00000000000000000000000000000001"),
    (p.STRING, False, False, "hé", "0003" "68c3a9"),
    (p.STRING, False, True, None, "ffff"),
    (p.STRING, True, False, "ab", "03" "6162"),
    (p.STRING, True, True, None, "00"),
    (p.BYTES, False, False, b"\x01\x02", "00000002" "0102"),
    (p.BYTES, False, True, None, "ffffffff"),
    (p.BYTES, True, False, b"", "01"),
    (p.BYTES, True, True, None, "00"),
    (Array(p.INT32), False, False, [1, 2], "00000002" "00000001" "00000002"),
    (Array(p.INT32), False, True, None, "ffffffff"),
    (Array(p.STRING), True, False, ["a"], "02" "02" "61"),
    (Array(p.INT16), True, True, None, "00"),
]


@pytest.mark.parametrize(("kind", "flexible", "nullable", "value", "golden"), GOLDEN)
def test_golden_bytes(kind: p.FieldType, flexible: bool, nullable: bool, value: Any, golden: str) -> None:
    out: list[Any] = []
    kind.encoder(0, flexible, nullable)(value, out)
    assert b"".join(out).hex() == golden
    decoded, end = kind.decoder(0, flexible, nullable)(bytes.fromhex(golden), 0)
    assert decoded == value and end == len(golden) // 2


def _round_trip(kind: p.FieldType, value: Any, flexible: bool = False, nullable: bool = False) -> Any:
    out: list[Any] = []
    kind.encoder(0, flexible, nullable)(value, out)
    data = b"".join(out)
    decoded, end = kind.decoder(0, flexible, nullable)(b"\xaa" + data, 1)
    assert end == len(data) + 1
    return decoded


@given(st.integers(-(2**63), 2**63 - 1))
def test_int64_and_varlong_round_trip(value: int) -> None:
    assert _round_trip(p.INT64, value) == value
    assert _round_trip(p.VARLONG, value) == value


@given(st.integers(-(2**31), 2**31 - 1))
def test_int32_and_varint_round_trip(value: int) -> None:
    assert _round_trip(p.INT32, value) == value
    assert _round_trip(p.VARINT, value) == value


@given(st.integers(0, 2**32 - 1))
def test_unsigned_round_trip(value: int) -> None:
    assert _round_trip(p.UINT32, value) == value
    assert _round_trip(p.UVARINT, value) == value


@given(st.floats(allow_nan=False), st.booleans(), st.uuids())
def test_float_bool_uuid_round_trip(number: float, flag: bool, ident: uuid.UUID) -> None:
    assert _round_trip(p.FLOAT64, number) == number
    assert _round_trip(p.BOOL, flag) is flag
    assert _round_trip(p.UUID, ident) == ident


@given(st.none() | st.text(), st.booleans())
def test_strings_round_trip(value: str | None, flexible: bool) -> None:
    assert _round_trip(p.STRING, value, flexible, nullable=True) == value


@given(st.none() | st.binary(), st.booleans())
def test_bytes_and_records_round_trip(value: bytes | None, flexible: bool) -> None:
    assert _round_trip(p.BYTES, value, flexible, nullable=True) == value
    records = _round_trip(p.RECORDS, value, flexible, nullable=True)
    assert records is None if value is None else records.tobytes() == value


@given(st.none() | st.lists(st.lists(st.integers(-(2**15), 2**15 - 1))), st.booleans())
def test_nested_arrays_round_trip(value: list[list[int]] | None, flexible: bool) -> None:
    assert _round_trip(Array(Array(p.INT16)), value, flexible, nullable=True) == value


def test_records_decode_to_a_zero_copy_slice() -> None:
    data = bytearray(b"\x00\x00\x00\x03abc")
    view, _ = p.RECORDS.decoder(0, False, True)(data, 0)
    data[4] = ord("X")
    assert view.tobytes() == b"Xbc"


MALFORMED = [
    (p.INT32, False, False, "000001", "int32"),
    (p.INT64, False, False, "", "int64"),
    (p.BOOL, False, False, "", "bool"),
    (p.UUID, False, False, "00" * 15, "uuid"),
    (p.UVARINT, False, False, "80", "varint"),
    (p.UVARINT, False, False, "ffffffffffffffffffff01", "varint"),
    (p.UVARINT, False, False, "8080808010", "out of range"),
    (p.STRING, False, False, "00", "string length"),
    (p.STRING, False, False, "ffff", "invalid string length -1"),
    (p.STRING, False, True, "fffe", "invalid string length -2"),
    (p.STRING, False, False, "000561", "exceeds"),
    (p.STRING, False, False, "0002c328", "UTF-8"),
    (p.STRING, True, False, "00", "null string"),
    (p.STRING, True, False, "0561", "exceeds"),
    (p.BYTES, False, False, "7fffffff00", "exceeds"),
    (p.BYTES, False, True, "80000000", "invalid bytes length"),
    (p.RECORDS, True, True, "ffffffff0f", "too large"),
    (Array(p.INT32), False, False, "7fffffff", "array count"),
    (Array(p.INT32), False, False, "ffffffff", "invalid array length -1"),
    (Array(p.INT32), False, False, "0000000200000001", "[1]"),
    (Array(p.INT32), True, False, "00", "null array"),
]


@pytest.mark.parametrize(("kind", "flexible", "nullable", "data", "message"), MALFORMED)
def test_malformed_input_is_a_decode_error_naming_the_problem(
    kind: p.FieldType, flexible: bool, nullable: bool, data: str, message: str
) -> None:
    with pytest.raises(ProtocolDecodeError) as info:
        kind.decoder(0, flexible, nullable)(bytes.fromhex(data), 0)
    assert message in str(info.value)


ENCODE_ERRORS = [
    (p.INT8, 128, "int8"),
    (p.INT32, "1", "int32"),
    (p.INT32, None, "None"),
    (p.UINT16, -1, "uint16"),
    (p.VARINT, 2**31, "varint"),
    (p.BOOL, 1, "bool expected"),
    (p.UUID, "x", "uuid.UUID expected"),
    (p.STRING, b"x", "str expected"),
    (p.STRING, None, "non-nullable"),
    (p.STRING, "x" * 40000, "exceeds"),
    (p.BYTES, "x", "bytes expected"),
    (p.BYTES, None, "non-nullable"),
    (Array(p.INT32), (1, "x"), "[1]"),
    (Array(p.INT32), None, "non-nullable"),
]


@pytest.mark.parametrize(("kind", "value", "message"), ENCODE_ERRORS)
def test_bad_values_are_typed_encode_errors(kind: p.FieldType, value: Any, message: str) -> None:
    with pytest.raises(p.ProtocolEncodeError) as info:
        kind.encoder(0, False, False)(value, [])
    assert message in str(info.value)
    assert isinstance(info.value, ValueError)
