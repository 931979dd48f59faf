"""Sans-IO Kafka wire protocol: schemas as data, one generic codec, framing and headers.

Both the client and the broker use this package, in opposite directions. Bodies are plain
dicts (nested structs are dicts, arrays are lists) holding every field of the schema.
"""

from kafkalite.protocol.api import SUPPORTED_VERSIONS, ApiKey
from kafkalite.protocol.framing import FrameDecoder, FrameTooLargeError
from kafkalite.protocol.headers import RequestHeader, decode_request_header
from kafkalite.protocol.messages import (
    api_versions_unsupported_response,
    decode_request_body,
    decode_response,
    encode_request,
    encode_response,
    frame_bytes,
)
from kafkalite.protocol.primitives import ProtocolEncodeError

__all__ = [
    "SUPPORTED_VERSIONS",
    "ApiKey",
    "FrameDecoder",
    "FrameTooLargeError",
    "ProtocolEncodeError",
    "RequestHeader",
    "api_versions_unsupported_response",
    "decode_request_body",
    "decode_request_header",
    "decode_response",
    "encode_request",
    "encode_response",
    "frame_bytes",
]
