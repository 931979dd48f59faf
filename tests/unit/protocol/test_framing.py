"""FrameDecoder: frames split at arbitrary feed boundaries, and oversize frames refused."""

from __future__ import annotations

import itertools

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol import FrameDecoder, FrameTooLargeError


def _framed(payloads: list[bytes]) -> bytes:
    return b"".join(len(p).to_bytes(4, "big") + p for p in payloads)


@given(
    payloads=st.lists(st.binary(max_size=40), max_size=8),
    cuts=st.lists(st.integers(0, 400), max_size=10),
)
def test_frames_come_out_whole_whatever_the_feed_boundaries(payloads: list[bytes], cuts: list[int]) -> None:
    stream = _framed(payloads)
    bounds = sorted({0, len(stream), *(c for c in cuts if c < len(stream))})
    decoder = FrameDecoder(max_frame_bytes=1000)
    frames: list[bytearray] = []
    for start, end in itertools.pairwise(bounds):
        frames.extend(decoder.feed(stream[start:end]))
    assert frames == payloads
    assert all(isinstance(f, bytearray) for f in frames)
    assert decoder.buffered == 0


def test_partial_frame_waits_for_the_rest() -> None:
    decoder = FrameDecoder(100)
    assert decoder.feed(b"\x00\x00\x00\x05abc") == []
    assert decoder.buffered == 7
    assert decoder.feed(b"de\x00\x00") == [bytearray(b"abcde")]
    assert decoder.feed(b"\x00\x00") == [bytearray()]


@pytest.mark.parametrize("size", [101, 2**31 - 1, -1, -(2**31)])
def test_sizes_outside_the_limit_are_refused_before_buffering(size: int) -> None:
    decoder = FrameDecoder(100)
    with pytest.raises(FrameTooLargeError) as info:
        decoder.feed(size.to_bytes(4, "big", signed=True) + b"x")
    assert str(size) in str(info.value) and "100" in str(info.value)
    assert isinstance(info.value, ProtocolDecodeError)
    assert (info.value.size, info.value.limit) == (size, 100)


def test_a_frame_of_exactly_the_limit_is_accepted() -> None:
    assert FrameDecoder(3).feed(b"\x00\x00\x00\x03abc") == [bytearray(b"abc")]
