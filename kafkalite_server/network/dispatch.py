"""From one request frame to its response chunks (or a reason to close the connection).

Kafka's rules: an ApiVersions request above our range gets the v0-format error reply; an
unknown api key, an unsupported version of another API or an unreadable body closes the
connection (no reply is possible the client could parse); an unexpected failure inside a
handler is UNKNOWN_SERVER_ERROR where the response has a top-level error code, else the
connection closes too.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from time import monotonic, perf_counter
from typing import TYPE_CHECKING, Any, NoReturn

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol import (
    SUPPORTED_VERSIONS,
    ApiKey,
    RequestHeader,
    api_versions_unsupported_response,
    decode_request_body,
    decode_request_header,
    encode_response,
)
from kafkalite.protocol.api import APIS
from kafkalite.protocol.errors import UnknownServerError, UnsupportedVersionError
from kafkalite.protocol.schema import Versions
from kafkalite_server.handlers.registry import CloseConnection, RequestContext
from kafkalite_server.metrics.requests import request_name
from kafkalite_server.quotas.client_throttle import counts_handler_time
from kafkalite_server.quotas.handler_time import TimedCall

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker
    from kafkalite_server.network.session import Session

log = logging.getLogger(__name__)

_API_VERSIONS_MAX = SUPPORTED_VERSIONS[ApiKey.API_VERSIONS][1]


class Disconnect(Exception):
    """Close this connection; ``reason`` is already logged."""


async def dispatch(broker: Broker, frame: bytearray, peer: str,
                   session: Session | None = None,
                   on_appended: Callable[[], None] | None = None) -> list[Any] | None:
    """Response chunks for one request frame, None for no response; raises Disconnect.
    Before a SASL connection authenticates, anything but ApiVersions and the SASL requests
    closes it. ``on_appended``: see :attr:`RequestContext.on_appended`."""
    try:
        header, offset = decode_request_header(frame)
    except ProtocolDecodeError as exc:
        _refuse(peer, None, f"unreadable request header: {exc}")
    if session is not None and not session.allows(header.api_key):
        _refuse(peer, header, f"api key {header.api_key} before SASL authentication")
    if header.api_key == ApiKey.API_VERSIONS and header.api_version > _API_VERSIONS_MAX:
        return [api_versions_unsupported_response(header.correlation_id)]
    handler = broker.handlers.get(header.api_key)
    if handler is None:
        _refuse(peer, header, f"unknown api key {header.api_key}")
    if not broker.handlers.serves(header.api_key, header.api_version):
        _refuse(peer, header, f"unsupported version {header.api_version} of api key "
                              f"{header.api_key}")
    try:
        body = decode_request_body(header, frame, offset)
    except (ProtocolDecodeError, UnsupportedVersionError) as exc:
        _refuse(peer, header, f"unreadable request body: {exc}")
    context = RequestContext(header, broker, peer, session, on_appended)
    started = perf_counter()
    throttles = broker.client_throttles
    timed = TimedCall(handler(context, body)) if session is not None \
        and throttles.times_requests and counts_handler_time(header.api_key, body) else None
    try:
        response = await (handler(context, body) if timed is None else timed)
    except CloseConnection as exc:
        _refuse(peer, header, str(exc), level=logging.INFO)
    except Exception:
        log.exception("handler for api key %d v%d failed (client %r, correlation id %d)",
                      header.api_key, header.api_version, header.client_id,
                      header.correlation_id)
        response = _error_response(header)
        if response is None:
            raise Disconnect("handler failed") from None
    if session is not None:
        throttle_ms = throttles.throttle(
            header.api_key, body, response, len(frame), session.principal, header.client_id,
            None if timed is None else timed.seconds)
        if throttle_ms:
            session.mute_for(throttle_ms, monotonic())
    chunks = None if response is None else encode_response(header, response)
    broker.request_counters.record(request_name(header.api_key, body), header.api_version,
                                   (perf_counter() - started) * 1000)
    return chunks


def _refuse(peer: str, header: RequestHeader | None, reason: str,
            level: int = logging.WARNING) -> NoReturn:
    if header is None:
        log.log(level, "closing connection from %s: %s", peer, reason)
    else:
        log.log(level, "closing connection from %s (client id %r, correlation id %d): %s",
                peer, header.client_id, header.correlation_id, reason)
    raise Disconnect(reason)


def _error_response(header: RequestHeader) -> dict[str, Any] | None:
    """UNKNOWN_SERVER_ERROR in the response's top-level error code, if it has one."""
    api = APIS[ApiKey(header.api_key)]
    for field in api.response.fields:
        if field.name == "error_code" and header.api_version in Versions.parse(field.versions):
            return {"error_code": UnknownServerError.errno}
    return None
