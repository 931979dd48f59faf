from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import ConfigError
from kafkalite.serde import (
    BytesDeserializer,
    BytesSerializer,
    CallableDeserializer,
    CallableSerializer,
    Deserializer,
    JsonDeserializer,
    JsonSerializer,
    MsgpackDeserializer,
    MsgpackSerializer,
    Serializer,
    StringDeserializer,
    StringSerializer,
    resolve_deserializer,
    resolve_serializer,
)

PAIRS: list[tuple[Serializer, Deserializer]] = [
    (BytesSerializer(), BytesDeserializer()),
    (StringSerializer(), StringDeserializer()),
    (StringSerializer("utf-16"), StringDeserializer("utf-16")),
    (JsonSerializer(), JsonDeserializer()),
    (MsgpackSerializer(), MsgpackDeserializer()),
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.text()
    | st.floats(allow_nan=False, allow_infinity=False),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4)
    ),
    max_leaves=12,
)


@pytest.mark.parametrize(("serializer", "deserializer"), PAIRS)
def test_none_is_a_tombstone_both_ways(serializer: Serializer, deserializer: Deserializer) -> None:
    assert serializer.serialize("t", None) is None
    assert deserializer.deserialize("t", None) is None


@given(st.binary())
def test_bytes_round_trip(data: bytes) -> None:
    assert BytesDeserializer().deserialize("t", BytesSerializer().serialize("t", data)) == data
    assert BytesSerializer().serialize("t", bytearray(data)) == data
    assert BytesSerializer().serialize("t", memoryview(data)) == data


@given(st.text())
def test_string_round_trip(text: str) -> None:
    data = StringSerializer().serialize("t", text)
    assert data == text.encode("utf-8")
    assert StringDeserializer().deserialize("t", data) == text


@given(json_values.filter(lambda v: v is not None))
def test_json_round_trip(value: Any) -> None:
    data = JsonSerializer().serialize("t", value)
    assert isinstance(data, bytes)
    assert JsonDeserializer().deserialize("t", data) == value


@given(
    json_values.filter(lambda v: v is not None)
    | st.binary()
    | st.dictionaries(st.integers(-(2**63), 2**64 - 1), st.binary())
)
def test_msgpack_round_trip_keeps_bytes_and_int_keys(value: Any) -> None:
    data = MsgpackSerializer().serialize("t", value)
    assert MsgpackDeserializer().deserialize("t", data) == value


def test_json_is_compact_utf8() -> None:
    assert JsonSerializer().serialize("t", {"k": ["é", 1]}) == '{"k":["é",1]}'.encode()


def test_bytes_serializer_refuses_other_types_naming_the_setting() -> None:
    serializer = resolve_serializer(None, "value_serializer")
    with pytest.raises(TypeError, match=r"value_serializer.*got str"):
        serializer.serialize("orders", "text")
    with pytest.raises(TypeError, match=r"key_serializer.*got int"):
        resolve_serializer(None, "key_serializer").serialize("orders", 5)


def test_string_serializer_refuses_non_strings() -> None:
    with pytest.raises(TypeError, match=r"expected str.*got int"):
        StringSerializer().serialize("t", 5)


def test_resolve_serializer_accepts_instances_classes_and_callables() -> None:
    instance = JsonSerializer()
    assert resolve_serializer(instance, "value_serializer") is instance
    assert isinstance(resolve_serializer(MsgpackSerializer, "value_serializer"), MsgpackSerializer)
    wrapped = resolve_serializer(str.encode, "key_serializer")
    assert isinstance(wrapped, CallableSerializer)
    assert wrapped.serialize("t", "k") == b"k"
    assert wrapped.serialize("t", None) is None


def test_a_callable_returning_non_bytes_is_reported() -> None:
    wrapped = resolve_serializer(lambda v: v * 2, "value_serializer")
    with pytest.raises(TypeError, match="value_serializer returned int"):
        wrapped.serialize("t", 21)


def test_resolve_deserializer_accepts_instances_classes_and_callables() -> None:
    assert isinstance(resolve_deserializer(None, "value_deserializer"), BytesDeserializer)
    assert isinstance(
        resolve_deserializer(JsonDeserializer, "value_deserializer"), JsonDeserializer
    )
    wrapped = resolve_deserializer(bytes.decode, "key_deserializer")
    assert isinstance(wrapped, CallableDeserializer)
    assert wrapped.deserialize("t", b"k") == "k"
    assert wrapped.deserialize("t", None) is None


@pytest.mark.parametrize("bad", [42, "json", b"bytes"])
def test_resolve_rejects_other_values_naming_the_key(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^value_serializer: "):
        resolve_serializer(bad, "value_serializer")
    with pytest.raises(ConfigError, match=r"^key_deserializer: "):
        resolve_deserializer(bad, "key_deserializer")
