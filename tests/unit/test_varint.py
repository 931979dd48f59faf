import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.varint import (
    decode_uvarint,
    decode_varint,
    encode_uvarint,
    encode_varint,
    uvarint_size,
    varint_size,
)


@pytest.mark.parametrize(
    ("value", "encoded"),
    [(0, b"\x00"), (-1, b"\x01"), (1, b"\x02"), (-64, b"\x7f"), (64, b"\x80\x01"),
     (300, b"\xd8\x04"), (-(2**31), b"\xff\xff\xff\xff\x0f")],
)
def test_zigzag_golden_bytes(value: int, encoded: bytes) -> None:
    assert encode_varint(value) == encoded
    assert decode_varint(encoded, 0) == (value, len(encoded))


@given(st.integers(min_value=-(2**63), max_value=2**63 - 1))
def test_varint_round_trip(value: int) -> None:
    data = encode_varint(value)
    assert decode_varint(b"xx" + data, 2) == (value, len(data) + 2)
    assert varint_size(value) == len(data)


@given(st.integers(min_value=0, max_value=2**64 - 1))
def test_uvarint_round_trip(value: int) -> None:
    data = encode_uvarint(value)
    assert decode_uvarint(data, 0) == (value, len(data))
    assert uvarint_size(value) == len(data)


def test_truncated_and_overlong_varints_are_typed_errors() -> None:
    with pytest.raises(ProtocolDecodeError, match="truncated"):
        decode_uvarint(b"\x80\x80", 0)
    with pytest.raises(ProtocolDecodeError, match="longer than"):
        decode_uvarint(b"\xff" * 11, 0)
    with pytest.raises(ValueError):
        encode_uvarint(-1)
