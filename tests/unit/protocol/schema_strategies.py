"""Hypothesis strategies generated from our schemas, and the decoded form to expect."""

from __future__ import annotations

from typing import Any

from hypothesis import strategies as st

from kafkalite.protocol import primitives as p
from kafkalite.protocol.schema import Array, Field, Message, Struct, Versions

_INTS = {
    p.INT8: 8, p.INT16: 16, p.INT32: 32, p.INT64: 64,
}
_UNSIGNED = {p.UINT16: 16, p.UINT32: 32, p.UVARINT: 32}


def _type_strategy(t: p.FieldType, version: int, flexible: bool) -> st.SearchStrategy[Any]:
    if t in _INTS:
        bits = _INTS[t]
        return st.integers(-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
    if t in _UNSIGNED:
        return st.integers(0, 2 ** _UNSIGNED[t] - 1)
    if t is p.VARINT:
        return st.integers(-(2**31), 2**31 - 1)
    if t is p.VARLONG:
        return st.integers(-(2**63), 2**63 - 1)
    if t is p.FLOAT64:
        return st.floats(allow_nan=False)
    if t is p.BOOL:
        return st.booleans()
    if t is p.UUID:
        return st.uuids()
    if t is p.STRING:
        return st.text(max_size=8)
    if t is p.BYTES or t is p.RECORDS:
        return st.binary(max_size=8)
    if isinstance(t, Array):
        return st.lists(_type_strategy(t.element, version, flexible), max_size=3)
    if isinstance(t, Struct):
        return struct_strategy(t.fields, version, flexible)
    raise AssertionError(f"no strategy for {t!r}")


def struct_strategy(
    fields: tuple[Field, ...], version: int, flexible: bool
) -> st.SearchStrategy[dict[str, Any]]:
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for f in fields:
        if version not in Versions.parse(f.versions):
            continue
        strategy = _type_strategy(f.type, version, flexible)
        if version in Versions.parse(f.nullable):
            strategy = st.none() | strategy
        parts[f.name] = strategy
    return st.fixed_dictionaries(parts)


def body_strategy(message: Message, version: int) -> st.SearchStrategy[dict[str, Any]]:
    return struct_strategy(message.fields, version, message.is_flexible(version))


def expected_decoded(fields: tuple[Field, ...], version: int, body: dict[str, Any]) -> dict[str, Any]:
    """What decoding the encoded ``body`` must give: every field, defaults where absent."""
    out: dict[str, Any] = {}
    for f in fields:
        if version in Versions.parse(f.versions) and f.name in body:
            out[f.name] = _expected_value(f.type, version, body[f.name])
        else:
            out[f.name] = f.default_value()
    return out


def _expected_value(t: p.FieldType, version: int, value: Any) -> Any:
    if value is None:
        return None
    if isinstance(t, Struct):
        return expected_decoded(t.fields, version, value)
    if isinstance(t, Array):
        return [_expected_value(t.element, version, v) for v in value]
    return value


def normalized(value: Any) -> Any:
    """Decoded bodies hold memoryviews for records; compare them as bytes."""
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {k: normalized(v) for k, v in value.items()}
    if isinstance(value, list):
        return [normalized(v) for v in value]
    return value
