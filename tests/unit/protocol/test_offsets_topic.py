"""__consumer_offsets key/value formats: golden bytes and round trips per version."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol import offsets_topic as ot

from .schema_strategies import body_strategy, expected_decoded


def test_offset_commit_key_golden_bytes_and_decode() -> None:
    key = ot.encode_offset_commit_key("g", "t", 3)
    assert key.hex() == "0001" "000167" "000174" "00000003"
    assert ot.decode_offsets_topic_key(key) == ("offset", {"group": "g", "topic": "t", "partition": 3})
    v0_key = b"\x00\x00" + key[2:]
    assert ot.decode_offsets_topic_key(v0_key) == ("offset", {"group": "g", "topic": "t", "partition": 3})


def test_group_metadata_key_and_unknown_key_versions() -> None:
    key = ot.encode_group_metadata_key("grp")
    assert key.hex() == "0002" "0003" "677270"
    assert ot.decode_offsets_topic_key(key) == ("group", {"group": "grp"})
    assert ot.decode_offsets_topic_key(b"\x00\x05anything") is None
    with pytest.raises(ProtocolDecodeError):
        ot.decode_offsets_topic_key(b"\x00")
    with pytest.raises(ProtocolDecodeError, match="trailing"):
        ot.decode_offsets_topic_key(key + b"!")


def test_offset_commit_value_v3_golden_bytes() -> None:
    value = ot.encode_offset_commit_value(
        {"offset": 5, "leader_epoch": 1, "metadata": "", "commit_timestamp": 7}
    )
    assert value.hex() == "0003" "0000000000000005" "00000001" "0000" "0000000000000007"
    decoded = ot.decode_offset_commit_value(value)
    assert decoded == {
        "offset": 5, "leader_epoch": 1, "metadata": "", "commit_timestamp": 7, "expire_timestamp": -1,
    }


def test_group_metadata_value_v3_golden_bytes() -> None:
    value = ot.encode_group_metadata_value({
        "protocol_type": "consumer", "generation": 1, "protocol": None, "leader": None,
        "current_state_timestamp": 2, "members": [],
    })
    assert value.hex() == (
        "0003" "0008" + b"consumer".hex() + "00000001" "ffff" "ffff" "0000000000000002" "00000000"
    )


@pytest.mark.parametrize("version", range(5))
@given(data=st.data())
def test_values_round_trip_every_version(version: int, data: st.DataObject) -> None:
    for message, encode, decode in (
        (ot.OFFSET_COMMIT_VALUE, ot.encode_offset_commit_value, ot.decode_offset_commit_value),
        (ot.GROUP_METADATA_VALUE, ot.encode_group_metadata_value, ot.decode_group_metadata_value),
    ):
        body = data.draw(body_strategy(message, version))
        encoded = encode(body, version)
        assert int.from_bytes(encoded[:2], "big") == version
        assert decode(encoded) == expected_decoded(message.fields, version, body)


def test_unknown_value_versions_are_errors() -> None:
    with pytest.raises(ProtocolDecodeError, match="unknown version 9"):
        ot.decode_offset_commit_value(b"\x00\x09")
    with pytest.raises(ValueError):
        ot.encode_group_metadata_value({}, 9)
