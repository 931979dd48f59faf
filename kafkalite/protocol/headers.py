"""Request and response headers, and the rules for which header version an API uses.

Request header v1 = api_key, api_version, correlation_id, client_id (int16-length nullable
string, never compact); v2 adds a tag buffer. Response header v0 = correlation_id; v1 adds
a tag buffer. Flexible versions use the newer header, except that ApiVersions responses
always use v0 so that any client can read the error of a version it guessed too high.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.api import ApiKey, api_for, is_supported
from kafkalite.protocol.primitives import STRING, Buffer
from kafkalite.protocol.schema import decode_tag_buffer

_FIXED = struct.Struct(">hhi")
_CORRELATION = struct.Struct(">i")
_decode_client_id = STRING.decoder(0, False, True)
_encode_client_id = STRING.encoder(0, False, True)
EMPTY_TAGS = b"\x00"


@dataclass
class RequestHeader:
    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None


def is_flexible(api_key: int, api_version: int) -> bool:
    api = api_for(api_key)
    return api is not None and api.request.is_flexible(api_version)


def request_header_version(api_key: int, api_version: int) -> int:
    """2 for flexible versions we serve and for ApiVersions >= 3 (any, even unsupported),
    else 1, so the broker can read the header of any request and answer or log it."""
    if api_key == ApiKey.API_VERSIONS and api_version >= 3:
        return 2
    if is_supported(api_key, api_version) and is_flexible(api_key, api_version):
        return 2
    return 1


def response_header_version(api_key: int, api_version: int) -> int:
    if api_key == ApiKey.API_VERSIONS:
        return 0
    return 1 if is_flexible(api_key, api_version) else 0


def encode_request_header(header: RequestHeader) -> bytes:
    out: list[bytes] = [
        _FIXED.pack(header.api_key, header.api_version, header.correlation_id)
    ]
    _encode_client_id(header.client_id, out)
    if request_header_version(header.api_key, header.api_version) == 2:
        out.append(EMPTY_TAGS)
    return b"".join(out)


def decode_request_header(frame: Buffer) -> tuple[RequestHeader, int]:
    """Reads the header of any request; returns it and the offset of the body."""
    try:
        api_key, api_version, correlation_id = _FIXED.unpack_from(frame, 0)
    except struct.error:
        raise ProtocolDecodeError(
            f"request header truncated: {len(frame)} bytes, need at least 10"
        ) from None
    try:
        client_id, pos = _decode_client_id(frame, _FIXED.size)
        if request_header_version(api_key, api_version) == 2:
            pos = decode_tag_buffer(frame, pos, {}, {})
    except ProtocolDecodeError as exc:
        raise ProtocolDecodeError(f"request header (api key {api_key}): {exc}") from None
    return RequestHeader(api_key, api_version, correlation_id, client_id), pos


def encode_response_header(api_key: int, api_version: int, correlation_id: int) -> bytes:
    prefix = _CORRELATION.pack(correlation_id)
    if response_header_version(api_key, api_version) == 1:
        return prefix + EMPTY_TAGS
    return prefix


def decode_response_header(api_key: int, api_version: int, frame: Buffer) -> tuple[int, int]:
    """Returns (correlation id, body offset)."""
    try:
        (correlation_id,) = _CORRELATION.unpack_from(frame, 0)
    except struct.error:
        raise ProtocolDecodeError(f"response header truncated: {len(frame)} bytes") from None
    pos = 4
    if response_header_version(api_key, api_version) == 1:
        pos = decode_tag_buffer(frame, pos, {}, {})
    return correlation_id, pos
