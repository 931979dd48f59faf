"""SASL OAUTHBEARER messages (RFC 7628, as Kafka speaks it), sans-IO, for both sides.

The client's one message is a GS2 header (``n,,`` or ``n,a=<authzid>,``) then ``\\x01``-
separated key/value pairs, ``auth=Bearer <token>`` and any SASL extensions, closed by
``\\x01\\x01``. A server that refuses the token answers a JSON error
(``{"status":"invalid_token"}``) as a challenge; the client acknowledges it with a lone
``\\x01`` and the server then fails the exchange.

Kafka's default tokens are unsecured JWS (RFC 7515 with ``"alg":"none"``): base64url
header, ``.``, base64url claims, ``.``, and an empty signature.
"""

from __future__ import annotations

import base64
import binascii
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

MECHANISM = "OAUTHBEARER"
SEPARATOR = "\x01"
ERROR_ACKNOWLEDGEMENT = SEPARATOR.encode()
"""What a client sends after a server's JSON error, so that the server fails the exchange."""

AUTH_KEY = "auth"
_EXTENSION_KEY = re.compile(r"[A-Za-z]+")
_EXTENSION_VALUE = re.compile(r"[\x21-\x7E \t\r\n]+")
_AUTH_VALUE = re.compile(r"(?P<scheme>\w+) +(?P<token>[-_.a-zA-Z0-9]+)")
_GS2_HEADER = re.compile(r"n,(?:a=(?P<authzid>[^,]*))?,")


class OAuthBearerFormatError(ValueError):
    """A client message or a token that does not have OAUTHBEARER's shape."""


@dataclass(frozen=True)
class ClientResponse:
    """What a client's OAUTHBEARER message carries."""

    token: str
    authzid: str | None = None
    extensions: Mapping[str, str] = field(default_factory=dict)


def client_response(token: str, extensions: Mapping[str, str] | None = None,
                    authzid: str | None = None) -> bytes:
    """The client's message; OAuthBearerFormatError for an extension Kafka would refuse."""
    pairs = [f"{AUTH_KEY}=Bearer {token}"]
    for key, value in (extensions or {}).items():
        _check_extension(key, value)
        pairs.append(f"{key}={value}")
    header = "n,," if authzid is None else f"n,a={authzid},"
    return (header + SEPARATOR + SEPARATOR.join(pairs) + SEPARATOR * 2).encode("utf-8")


def parse_client_response(data: bytes) -> ClientResponse:
    """The token, authorization id and extensions of a client's message."""
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        raise OAuthBearerFormatError("the message is not UTF-8") from None
    header = _GS2_HEADER.match(text)
    if header is None:
        raise OAuthBearerFormatError("the message does not start with a GS2 header (n,,)")
    rest = text[header.end():]
    if not rest.startswith(SEPARATOR) or not rest.endswith(SEPARATOR * 2):
        raise OAuthBearerFormatError("the key/value pairs are not framed by \\x01 ... \\x01\\x01")
    pairs: dict[str, str] = {}
    for pair in rest[1:-2].split(SEPARATOR):
        key, equals, value = pair.partition("=")
        if not equals:
            raise OAuthBearerFormatError(f"{pair[:30]!r} is not a key=value pair")
        pairs[key] = value
    auth = pairs.pop(AUTH_KEY, None)
    if auth is None:
        raise OAuthBearerFormatError("the message has no auth=Bearer <token> pair")
    match = _AUTH_VALUE.fullmatch(auth)
    if match is None or match["scheme"].lower() != "bearer":
        raise OAuthBearerFormatError("the auth pair is not 'Bearer <token>'")
    for key, value in pairs.items():
        _check_extension(key, value)
    return ClientResponse(match["token"], header["authzid"], pairs)


def _check_extension(key: str, value: str) -> None:
    if key == AUTH_KEY or not _EXTENSION_KEY.fullmatch(key):
        raise OAuthBearerFormatError(f"{key!r} is not a valid SASL extension name")
    if not _EXTENSION_VALUE.fullmatch(value):
        raise OAuthBearerFormatError(f"the value of SASL extension {key!r} is not valid")


def error_challenge(status: str, scope: str | None = None) -> bytes:
    """The server's JSON error, as Kafka writes it."""
    error: dict[str, str] = {"status": status}
    if scope is not None:
        error["scope"] = scope
    return json.dumps(error, separators=(",", ":")).encode("utf-8")


def _b64url(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def _unb64url(part: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(part + "=" * (-len(part) % 4))
    except (binascii.Error, ValueError):
        raise OAuthBearerFormatError("a token part is not base64url") from None


def unsecured_token(claims: Mapping[str, Any]) -> str:
    """An unsecured JWS (``"alg":"none"``, empty signature) carrying ``claims``, as Kafka's
    OAuthBearerUnsecuredLoginCallbackHandler and librdkafka make for development."""
    header = _b64url(json.dumps({"alg": "none"}, separators=(",", ":")).encode())
    payload = _b64url(json.dumps(dict(claims), separators=(",", ":")).encode())
    return f"{header}.{payload}."


def decode_unsecured_token(token: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """(header, claims) of a JWS in compact form; the signature is not looked at (the
    caller refuses anything but ``alg: none``)."""
    parts = token.split(".")
    if len(parts) != 3:
        raise OAuthBearerFormatError("a JWS has three '.'-separated parts")
    try:
        header, claims = (json.loads(_unb64url(part)) for part in parts[:2])
    except (json.JSONDecodeError, UnicodeDecodeError):
        raise OAuthBearerFormatError("the token's header or claims are not JSON") from None
    if not isinstance(header, dict) or not isinstance(claims, dict):
        raise OAuthBearerFormatError("the token's header and claims must be JSON objects")
    return header, claims
