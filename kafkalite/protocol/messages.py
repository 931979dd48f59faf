"""Whole request and response frames: header + body, with the 4-byte size prefix."""

from __future__ import annotations

import struct
from collections.abc import Mapping
from typing import Any

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.api import SUPPORTED_VERSIONS, Api, ApiKey, api_for, is_supported
from kafkalite.protocol.errors import UnsupportedVersionError
from kafkalite.protocol.headers import (
    RequestHeader,
    decode_response_header,
    encode_request_header,
    encode_response_header,
)
from kafkalite.protocol.primitives import BYTES_LIKE, Buffer
from kafkalite.protocol.schema import join_bytes
from kafkalite.protocol.schemas.api_versions import API_VERSIONS_RESPONSE

_SIZE = struct.Struct(">i")


def _supported_api(api_key: int, api_version: int) -> Api:
    api = api_for(api_key)
    if api is None or not is_supported(api_key, api_version):
        raise UnsupportedVersionError(f"api key {api_key} version {api_version}")
    return api


def encode_request(
    api_key: int,
    api_version: int,
    correlation_id: int,
    client_id: str | None,
    body: Mapping[str, Any],
) -> bytes:
    """A whole request frame, size prefix included."""
    api = _supported_api(api_key, api_version)
    out: list[Any] = [
        b"",
        encode_request_header(RequestHeader(api_key, api_version, correlation_id, client_id)),
    ]
    api.request.encode_into(body, api_version, out)
    out[0] = _SIZE.pack(sum(map(_chunk_size, out)))
    return join_bytes(out)


def decode_request_body(header: RequestHeader, frame: Buffer, offset: int) -> dict[str, Any]:
    """Decodes the body after the header. Bytes after a complete body are ignored, as
    Kafka's broker ignores them: librdkafka's AlterUserScramCredentials, for one, ends its
    body with a second empty tag section, and Kafka accepts it."""
    api = _supported_api(header.api_key, header.api_version)
    body, _end = api.request.decode(frame, offset, header.api_version)
    return body


def encode_response(header: RequestHeader, body: Mapping[str, Any]) -> list[bytes | object]:
    """Chunks of a whole response frame: bytes runs joined, opaque record chunks (objects
    with ``__len__``, e.g. file regions to sendfile) kept as they are. The first chunk
    starts with the size prefix, which counts opaque chunks by ``len()``."""
    api = _supported_api(header.api_key, header.api_version)
    parts: list[Any] = [
        encode_response_header(header.api_key, header.api_version, header.correlation_id)
    ]
    api.response.encode_into(body, header.api_version, parts)
    size = sum(map(_chunk_size, parts))
    chunks: list[bytes | object] = []
    run: list[Any] = [_SIZE.pack(size)]
    for part in parts:
        if isinstance(part, BYTES_LIKE):
            run.append(part)
        else:
            chunks.append(b"".join(run))
            chunks.append(part)
            run = []
    if run:
        chunks.append(b"".join(run))
    return chunks


def decode_response(api_key: int, api_version: int, frame: Buffer) -> tuple[int, dict[str, Any]]:
    """Decodes a response frame (without its size prefix): (correlation id, body).

    A broker answers an ApiVersions version it does not support with a v0-format body
    (error 35 and its own range); such replies are read as v0, as Kafka's clients do.
    """
    api = _supported_api(api_key, api_version)
    correlation_id, pos = decode_response_header(api_key, api_version, frame)
    try:
        return correlation_id, _decode_body(api, api_version, frame, pos)
    except ProtocolDecodeError:
        if api_key != ApiKey.API_VERSIONS or api_version == 0:
            raise
        return correlation_id, _decode_body(api, 0, frame, pos)


def _decode_body(api: Api, api_version: int, frame: Buffer, pos: int) -> dict[str, Any]:
    """The response body; bytes after it are ignored, as Kafka's Java client and librdkafka
    ignore them, and as the broker ignores them after a request (:func:`decode_request_body`):
    librdkafka's mock broker ends Metadata v9+ with a second empty tag section."""
    body, _end = api.response.decode(frame, pos, api_version)
    return body


def frame_bytes(chunks: list[bytes | object]) -> bytes:
    """Joins the chunks of :func:`encode_response` when all of them are bytes-like."""
    for chunk in chunks:
        if not isinstance(chunk, BYTES_LIKE):
            raise TypeError(f"cannot join an opaque {type(chunk).__name__} chunk into bytes")
    return b"".join(chunks)  # type: ignore[arg-type]


def api_versions_unsupported_response(correlation_id: int) -> bytes:
    """The frame a broker sends for an ApiVersions request above its maximum: header v0 and
    a v0-format body (error 35 plus our ApiVersions range), which every client can read."""
    lo, hi = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS]
    body = {
        "error_code": UnsupportedVersionError.errno,
        "api_keys": [{"api_key": ApiKey.API_VERSIONS, "min_version": lo, "max_version": hi}],
    }
    header = encode_response_header(ApiKey.API_VERSIONS, 0, correlation_id)
    payload = header + API_VERSIONS_RESPONSE.encode(body, 0)
    return _SIZE.pack(len(payload)) + payload


def _chunk_size(chunk: Any) -> int:
    return chunk.nbytes if isinstance(chunk, memoryview) else len(chunk)
