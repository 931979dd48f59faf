"""The engine on flexible versions: compact forms, nested tag buffers, tagged fields
(written only when not default, read in any order, unknown ones skipped), defaults."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.primitives import INT8, INT32, RECORDS, STRING, UUID
from kafkalite.protocol.schema import Array, Field, Message, Struct, Versions

from .schema_strategies import body_strategy, expected_decoded, normalized

EXAMPLE = Message(
    "Example", valid="0-3", flexible="2+", fields=(
        Field("name", STRING, nullable="1+"),
        Field("items", Array(Struct(
            Field("index", INT32),
            Field("data", RECORDS, nullable="0+"),
            Field("leader", Struct(Field("id", INT32, default=-1), Field("epoch", INT32)),
                  "2+", tag=0, tagged="2+"),
        ))),
        Field("topic_id", UUID, "3+"),
        Field("hint", STRING, "2+", nullable="2+", tag=5, tagged="2+"),
        Field("level", INT8, "2+", default=7, tag=1, tagged="2+"),
    ),
)


def test_versions_notation() -> None:
    assert Versions.parse("3+") == (3, 0x7FFF)
    assert Versions.parse("2-5") == (2, 5)
    assert Versions.parse("4") == (4, 4)
    assert 0 not in Versions.parse("none") and 5 not in Versions.parse("none")


def test_golden_flexible_encoding_with_tags_in_order() -> None:
    body = {"name": "n", "items": [{"index": 1, "data": b"x", "leader": {"id": 2, "epoch": 3}}],
            "hint": "h", "level": 9}
    data = EXAMPLE.encode(body, 2)
    assert data.hex() == (
        "02" "6e"  # compact string "n"
        "02"  # compact array of 1 item
        "00000001" "02" "78"  # index, compact records b"x"
        "01" "00" "09" "00000002" "00000003" "00"  # item tags: leader (tag 0), 9 bytes
        "02" "01" "01" "09" "05" "02" "0268"  # top tags in tag order: level=9, hint="h"
    )
    decoded, end = EXAMPLE.decode(data, 0, 2)
    assert end == len(data)
    assert normalized(decoded) == {**body, "topic_id": EXAMPLE.default()["topic_id"]}


def test_default_tagged_values_are_not_written() -> None:
    data = EXAMPLE.encode({"name": "", "items": [{"index": 0, "data": None}]}, 2)
    assert data.hex() == "01" "02" "00000000" "00" "00" "00"
    decoded, _ = EXAMPLE.decode(data, 0, 2)
    assert decoded["level"] == 7 and decoded["hint"] is None
    assert decoded["items"][0]["leader"] == {"id": -1, "epoch": 0}


def test_unknown_tags_are_skipped_and_known_tags_bounded() -> None:
    data = bytearray(EXAMPLE.encode({"name": "a", "items": []}, 2))
    assert data[-1] == 0
    data[-1:] = bytes.fromhex("02" "03" "02" "aaaa" "01" "01" "05")  # unknown tag 3, level 5
    decoded, end = EXAMPLE.decode(bytes(data), 0, 2)
    assert decoded["level"] == 5 and end == len(data)
    with pytest.raises(ProtocolDecodeError, match="overruns"):
        EXAMPLE.decode(bytes(data[:-1]), 0, 2)
    wrong_size = bytes(data[:-3]) + bytes.fromhex("01" "02" "0505")
    with pytest.raises(ProtocolDecodeError, match="extra bytes"):
        EXAMPLE.decode(wrong_size, 0, 2)


def test_decoded_bodies_do_not_share_mutable_defaults() -> None:
    data = EXAMPLE.encode({"name": "a"}, 1)
    first, _ = EXAMPLE.decode(data, 0, 1)
    first["items"].append("mutated")
    second, _ = EXAMPLE.decode(data, 0, 1)
    assert second["items"] == []


@pytest.mark.parametrize("version", range(4))
@given(data=st.data())
def test_round_trip_every_version(version: int, data: st.DataObject) -> None:
    body: dict[str, Any] = data.draw(body_strategy(EXAMPLE, version))
    encoded = EXAMPLE.encode(body, version)
    decoded, end = EXAMPLE.decode(encoded, 0, version)
    assert end == len(encoded)
    assert normalized(decoded) == expected_decoded(EXAMPLE.fields, version, body)
