"""Cross-check against kafka-python 3's independent protocol implementation (generated from
Kafka's own schema files): frames we encode must decode there to the same values, and
frames it encodes must decode here, for every API and version we support."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kafkalite.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    RequestHeader,
    decode_request_body,
    decode_request_header,
    decode_response,
    encode_request,
    encode_response,
    frame_bytes,
)
from kafkalite.protocol.api import APIS

from .schema_strategies import body_strategy, expected_decoded, normalized

kafka_protocol = pytest.importorskip("kafka.protocol")
from kafka.protocol.api_message import ApiMessage  # noqa: E402
from kafka.protocol.schemas.fields.codecs.types import BitField  # noqa: E402


def _kafka_python_classes() -> dict[tuple[int, str], Any]:
    found: dict[tuple[int, str], Any] = {}
    for info in pkgutil.walk_packages(kafka_protocol.__path__, "kafka.protocol."):
        if ".old" in info.name or "generate" in info.name:
            continue
        module = importlib.import_module(info.name)
        for value in vars(module).values():
            if (
                inspect.isclass(value)
                and issubclass(value, ApiMessage)
                and value is not ApiMessage
                and getattr(value, "_json", None)
            ):
                message: Any = value
                found[(message.API_KEY, message.type)] = message
    return found


THEIRS = _kafka_python_classes()
ALL_VERSIONS = [
    (key, version) for key, (lo, hi) in SUPPORTED_VERSIONS.items() for version in range(lo, hi + 1)
    if (key, "request") in THEIRS  # kafka-python has no inter-broker APIs (keys 4-7)
]
IDS = [f"{key.name}-v{version}" for key, version in ALL_VERSIONS]
ORACLE = settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def _build(cls: Any, values: dict[str, Any], version: int) -> Any:
    """A kafka-python data object from one of our body dicts."""
    kwargs = {}
    for field in cls._struct.fields.values():
        if not field.for_version_q(version) or field.name not in values:
            continue
        value = values[field.name]
        if value is not None and field.is_struct_array():
            value = [_build(field.data_class, item, version) for item in value]
        elif value is not None and field.is_struct():
            value = _build(field.data_class, value, version)
        elif getattr(field, "_type", None) is BitField:
            value = {bit for bit in range(32) if (value >> bit) & 1}
        kwargs[field.name] = value
    return cls(version=version, **kwargs)


def _common(ours: Any, theirs: Any) -> tuple[Any, Any]:
    """Both decoded forms restricted to the keys both have: kafka-python reports only the
    fields of the version (we report all), and adds a few derived convenience keys."""
    if isinstance(ours, dict) and isinstance(theirs, dict):
        keys = ours.keys() & theirs.keys()
        pairs = {k: _common(ours[k], theirs[k]) for k in keys}
        return {k: a for k, (a, _) in pairs.items()}, {k: b for k, (_, b) in pairs.items()}
    if isinstance(ours, list) and isinstance(theirs, list) and len(ours) == len(theirs):
        pairs_list = [_common(a, b) for a, b in zip(ours, theirs, strict=True)]
        return [a for a, _ in pairs_list], [b for _, b in pairs_list]
    if isinstance(ours, int) and (theirs is None or isinstance(theirs, set)):
        # kafka-python shows authorized-operation bit fields as sets (INT32_MIN as None)
        bits = {bit for bit in range(32) if (ours >> bit) & 1}
        return (None if bits == {31} else bits), theirs
    return ours, normalized(theirs)


def _assert_same(ours: dict[str, Any], theirs: dict[str, Any]) -> None:
    mine, other = _common(ours, theirs)
    assert mine == other


@pytest.mark.parametrize(("key", "version"), ALL_VERSIONS, ids=IDS)
@ORACLE
@given(data=st.data())
def test_requests_agree_with_kafka_python(key: ApiKey, version: int, data: st.DataObject) -> None:
    cls = THEIRS[(key, "request")]
    body = data.draw(body_strategy(APIS[key].request, version))
    ours = encode_request(key, version, 11, "client", body)

    decoded_there = cls.decode(ours[4:], version=version, header=True)
    assert decoded_there.header.correlation_id == 11
    there = decoded_there.to_dict(json=False)
    expected = normalized(expected_decoded(APIS[key].request.fields, version, body))
    _assert_same(expected, there)

    obj = _build(cls, body, version)
    obj.with_header(correlation_id=11, client_id="client")
    theirs = bytes(obj.encode(header=True, framed=True))
    assert theirs == ours
    header, offset = decode_request_header(theirs[4:])
    assert normalized(decode_request_body(header, theirs[4:], offset)) == expected


@pytest.mark.parametrize(("key", "version"), ALL_VERSIONS, ids=IDS)
@ORACLE
@given(data=st.data())
def test_responses_agree_with_kafka_python(key: ApiKey, version: int, data: st.DataObject) -> None:
    cls = THEIRS[(key, "response")]
    body = data.draw(body_strategy(APIS[key].response, version))
    if key == ApiKey.API_VERSIONS:
        body["error_code"] = 0  # kafka-python re-reads ApiVersions error bodies as v0
    ours = frame_bytes(encode_response(RequestHeader(key, version, 12, "c"), body))

    there = cls.decode(ours[4:], version=version, header=True).to_dict(json=False)
    expected = normalized(expected_decoded(APIS[key].response.fields, version, body))
    _assert_same(expected, there)

    # The other direction: bytes kafka-python encodes must decode to what it decodes itself.
    # (Its encoder rewrites a few fields, e.g. authorized operations, so compare decodings.)
    obj = _build(cls, body, version)
    obj.with_header(correlation_id=12)
    theirs = bytes(obj.encode(header=True, framed=True))
    correlation_id, decoded = decode_response(key, version, theirs[4:])
    assert correlation_id == 12
    _assert_same(normalized(decoded), cls.decode(theirs[4:], version=version, header=True).to_dict(json=False))
