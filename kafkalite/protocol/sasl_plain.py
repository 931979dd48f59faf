"""SASL PLAIN (RFC 4616): ``authzid NUL authcid NUL password`` in UTF-8, sans-IO."""

from __future__ import annotations

from kafkalite.errors import KafkaError


class PlainError(KafkaError):
    """A PLAIN message that is not ``[authzid] NUL user NUL password``."""


def plain_message(user: str, password: str) -> bytes:
    return b"\0" + user.encode("utf-8") + b"\0" + password.encode("utf-8")


def parse_plain(message: bytes) -> tuple[str, str]:
    """(user, password); the authorization id must be empty or the user (Kafka's rule)."""
    parts = bytes(message).split(b"\0")
    if len(parts) != 3:
        raise PlainError("PLAIN needs exactly two NUL separators")
    try:
        authzid, user, password = (part.decode("utf-8") for part in parts)
    except UnicodeDecodeError:
        raise PlainError("PLAIN message is not UTF-8") from None
    if not user or not password:
        raise PlainError("PLAIN needs a user and a password")
    if authzid and authzid != user:
        raise PlainError("the authorization id must be empty or the user")
    return user, password
