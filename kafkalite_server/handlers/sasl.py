"""SaslHandshake (17) and SaslAuthenticate (36): the connection's SASL exchange.

The state lives on the connection (:class:`~kafkalite_server.network.session.Session`);
these handlers translate. A refused mechanism or a failed exchange is answered (with
UNSUPPORTED_SASL_MECHANISM or SASL_AUTHENTICATION_FAILED, the same message whether the user
exists or not) and the connection then closes. A successful SaslAuthenticate v1+ tells the
client its session lifetime (KIP-368); a SaslHandshake on an authenticated connection
re-authenticates it.
"""

from __future__ import annotations

import logging
from typing import Any

from kafkalite.protocol.errors import BrokerResponseError, IllegalSaslStateError
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import declares

log = logging.getLogger(__name__)

_LOGIN = "the login itself: until it succeeds there is no principal to authorize"


@declares(open_because=_LOGIN)
async def handle_sasl_handshake(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    session = ctx.session
    authenticator = None if session is None else session.authenticator
    if authenticator is None:
        return {"error_code": IllegalSaslStateError.errno, "mechanisms": []}
    try:
        authenticator.handshake(body["mechanism"], ctx.api_version)
    except BrokerResponseError as exc:
        assert session is not None
        if authenticator.failed:  # else a refused re-authentication: the session goes on
            session.close_reason = exc.context
        return {"error_code": exc.errno, "mechanisms": list(authenticator.mechanisms)}
    return {"error_code": 0, "mechanisms": list(authenticator.mechanisms)}


@declares(open_because=_LOGIN)
async def handle_sasl_authenticate(ctx: RequestContext,
                                   body: dict[str, Any]) -> dict[str, Any]:
    session = ctx.session
    authenticator = None if session is None else session.authenticator
    if session is None or authenticator is None:
        return {"error_code": IllegalSaslStateError.errno,
                "error_message": "this listener does not use SASL", "auth_bytes": b""}
    try:
        reply = authenticator.authenticate(body["auth_bytes"])
    except BrokerResponseError as exc:
        session.close_reason = f"failed {authenticator.mechanism} authentication: " \
                               f"{exc.context}"
        return {"error_code": exc.errno, "error_message": exc.context, "auth_bytes": b"",
                "session_lifetime_ms": 0}
    if authenticator.authenticated and authenticator.user is not None:
        session.authenticated_as(authenticator.user)
        log.debug("%s: %s with %s, session lifetime %d ms", ctx.peer,
                  "re-authenticated" if authenticator.reauthentications else "authenticated",
                  authenticator.mechanism, authenticator.session_lifetime_ms)
    return {"error_code": 0, "error_message": None, "auth_bytes": reply,
            "session_lifetime_ms": authenticator.session_lifetime_ms}
