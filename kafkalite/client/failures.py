"""Why a connection to a broker failed, said for a person, and the last failure per address.

A client that cannot reach its brokers times out somewhere far from the socket (waiting for
metadata, a coordinator, a leader). The timeout is only useful if it says why: "connection
refused at localhost:39099", "TLS handshake with ... failed: CERTIFICATE_VERIFY_FAILED", "the
broker ... closed the connection during the TLS handshake: is `security_protocol` right?".
The ``describe_*`` functions build those messages from what the socket reported;
:class:`ConnectionFailures` keeps the latest one of each address until it connects again,
so every timeout can name its cause (:meth:`KafkaClient.timeout_error
<kafkalite.client.client.KafkaClient.timeout_error>`).
"""

from __future__ import annotations

import errno
import os
import ssl
import threading

from kafkalite.client.connection_state import ConnectionState
from kafkalite.errors import KafkaConnectionError

_SECURITY_PROTOCOL_HINT = "is `security_protocol` right?"
_TLS_RECORD_TYPES = (0x15, 0x16)
"""The first byte of a TLS alert or handshake record: what a TLS listener sends back."""
_LISTED = 3
"""Addresses a description names before it says how many more there are."""


def address_of(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def describe_connect_error(address: str, code: int) -> str:
    """A failed TCP connect (the errno of ``connect`` or ``SO_ERROR``)."""
    if code == errno.ECONNREFUSED:
        return f"connection refused at {address}"
    name = errno.errorcode.get(code, str(code))
    return f"cannot connect to {address}: {os.strerror(code)} ({name})"


def describe_resolve_error(host: str, port: int, error: OSError) -> str:
    return f"cannot resolve the host of {address_of(host, port)}: {error.strerror or error}"


def describe_tls_error(address: str, error: BaseException) -> str:
    """A failed TLS handshake: the verification result, or what the broker did instead."""
    if isinstance(error, ssl.SSLCertVerificationError):
        detail = error.verify_message or str(error)
        hint = ("the certificate does not name this host (see ssl_check_hostname)"
                if "hostname" in detail.lower()
                else "is `ssl_cafile` the CA that signed the broker's certificate?")
        return (f"TLS handshake with {address} failed: CERTIFICATE_VERIFY_FAILED "
                f"({detail}): {hint}")
    if isinstance(error, ssl.SSLEOFError | ssl.SSLZeroReturnError | ConnectionError) or (
            isinstance(error, ssl.SSLError) and error.reason == "UNEXPECTED_EOF_WHILE_READING"):
        return (f"the broker at {address} closed the connection during the TLS handshake: "
                f"{_SECURITY_PROTOCOL_HINT} (this listener may not speak TLS)")
    if isinstance(error, ssl.SSLError) and error.reason == "WRONG_VERSION_NUMBER":
        return (f"TLS handshake with {address} failed: the broker did not answer in TLS: "
                f"{_SECURITY_PROTOCOL_HINT}")
    reason = getattr(error, "reason", None) or getattr(error, "strerror", None) or str(error)
    return f"TLS handshake with {address} failed: {reason}"


def describe_close(address: str, state: ConnectionState, *, tls: bool,
                   answered: bool) -> str:
    """The broker closed the connection while it was in ``state``; ``answered``: it had
    sent something back on this connection before."""
    if state is ConnectionState.NEGOTIATING and not answered and not tls:
        return (f"the broker at {address} closed the connection before answering "
                f"ApiVersions: {_SECURITY_PROTOCOL_HINT} (a TLS listener closes plaintext "
                "connections)")
    return f"the broker at {address} closed the connection"


def looks_like_tls(first_bytes: bytes | bytearray | memoryview) -> bool:
    """Whether the first bytes a broker sent are a TLS record, not a Kafka response."""
    return len(first_bytes) >= 2 and first_bytes[0] in _TLS_RECORD_TYPES \
        and first_bytes[1] == 0x03


def describe_tls_answer(address: str) -> str:
    return (f"the broker at {address} answered in TLS: set `security_protocol` to SSL or "
            "SASL_SSL for this listener")


class ConnectionFailures:
    """The last error of each broker address that has not connected since it failed.

    Written by the client's I/O thread, read by any thread that times out.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._errors: dict[str, BaseException] = {}

    def failed(self, address: str, error: BaseException) -> None:
        with self._lock:
            self._errors.pop(address, None)  # the newest failure last
            self._errors[address] = error

    def connected(self, address: str) -> None:
        with self._lock:
            self._errors.pop(address, None)

    def last_error(self) -> BaseException | None:
        with self._lock:
            return next(reversed(self._errors.values()), None)

    def describe(self) -> str | None:
        """Each failing address's last error, newest first (None: no address failing)."""
        with self._lock:
            errors = list(reversed(self._errors.values()))
        if not errors:
            return None
        described = "; ".join(str(error) for error in errors[:_LISTED])
        if len(errors) > _LISTED:
            described += f" (and {len(errors) - _LISTED} more addresses failing)"
        return described


def connection_error(message: str, cause: BaseException | None = None) -> KafkaConnectionError:
    """A KafkaConnectionError with ``message``, chained to the socket's own exception."""
    error = KafkaConnectionError(message)
    error.__cause__ = cause
    return error
