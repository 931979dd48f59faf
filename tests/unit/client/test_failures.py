"""Connection failures said for a person, the last one per address, and timeouts that name
them; config typos that suggest the nearest key."""

from __future__ import annotations

import errno
import ssl
import threading

import pytest

from kafkalite import AdminClient, Consumer, Producer
from kafkalite.client.client import KafkaClient
from kafkalite.client.connection_state import ConnectionState
from kafkalite.client.failures import (
    ConnectionFailures,
    address_of,
    describe_close,
    describe_connect_error,
    describe_tls_error,
    looks_like_tls,
)
from kafkalite.errors import (
    BrokerUnreachableError,
    ConfigError,
    KafkaConnectionError,
    KafkaTimeoutError,
    UnknownConfigError,
)
from kafkalite.properties import nearest_key


def test_addresses_and_refused_connects() -> None:
    assert address_of("::1", 9092) == "[::1]:9092"
    assert describe_connect_error("localhost:39099", errno.ECONNREFUSED) == \
        "connection refused at localhost:39099"
    assert describe_connect_error("10.0.0.9:9092", errno.EHOSTUNREACH).startswith(
        "cannot connect to 10.0.0.9:9092: ")


def test_tls_failures_name_the_verification_result_or_the_protocol() -> None:
    untrusted = ssl.SSLCertVerificationError(1, "certificate verify failed")
    untrusted.verify_message = "self-signed certificate in certificate chain"
    message = describe_tls_error("b:9093", untrusted)
    assert "TLS handshake with b:9093 failed: CERTIFICATE_VERIFY_FAILED" in message
    assert "ssl_cafile" in message
    mismatch = ssl.SSLCertVerificationError(1, "certificate verify failed")
    mismatch.verify_message = "Hostname mismatch, certificate is not valid for 'b'."
    assert "ssl_check_hostname" in describe_tls_error("b:9093", mismatch)
    for eof in (ssl.SSLEOFError(8, "EOF occurred in violation of protocol"),
                ConnectionResetError(errno.ECONNRESET, "reset")):
        assert describe_tls_error("b:9092", eof) == (
            "the broker at b:9092 closed the connection during the TLS handshake: is "
            "`security_protocol` right? (this listener may not speak TLS)")


def test_a_close_before_any_answer_to_a_plaintext_client_asks_about_the_protocol() -> None:
    hint = "is `security_protocol` right?"
    assert hint in describe_close("b:9093", ConnectionState.NEGOTIATING, tls=False,
                                  answered=False)
    assert hint not in describe_close("b:9093", ConnectionState.NEGOTIATING, tls=False,
                                      answered=True)
    assert hint not in describe_close("b:9093", ConnectionState.READY, tls=False,
                                      answered=True)
    assert looks_like_tls(b"\x15\x03\x03\x00\x02\x02\x46")
    assert not looks_like_tls(b"\x00\x00\x00\x10\x00\x00")


def test_the_last_failure_of_each_address_until_it_connects() -> None:
    failures = ConnectionFailures()
    assert failures.describe() is None
    failures.failed("a:1", KafkaConnectionError("connection refused at a:1"))
    failures.failed("b:2", KafkaConnectionError("connection refused at b:2"))
    failures.failed("a:1", KafkaConnectionError("cannot connect to a:1: timed out"))
    assert failures.describe() == "cannot connect to a:1: timed out; connection refused at b:2"
    assert str(failures.last_error()) == "cannot connect to a:1: timed out"
    failures.connected("a:1")
    assert failures.describe() == "connection refused at b:2"
    for port in range(3, 7):
        failures.failed(f"c:{port}", KafkaConnectionError(f"connection refused at c:{port}"))
    assert failures.describe() == ("connection refused at c:6; connection refused at c:5; "
                                   "connection refused at c:4 (and 2 more addresses failing)")


def test_a_timeout_names_the_cause_only_when_connections_failed() -> None:
    client = KafkaClient(bootstrap_servers="127.0.0.1:1")
    try:
        plain = client.timeout_error("no metadata update within 1 s")
        assert type(plain) is KafkaTimeoutError
        assert str(plain) == "no metadata update within 1 s"
        refused = KafkaConnectionError("connection refused at 127.0.0.1:1")
        client.connection_failures.failed("127.0.0.1:1", refused)
        error = client.timeout_error("no metadata update within 1 s")
        assert isinstance(error, BrokerUnreachableError)
        assert isinstance(error, KafkaTimeoutError) and isinstance(error, KafkaConnectionError)
        assert str(error) == "no metadata update within 1 s: connection refused at 127.0.0.1:1"
        assert error.__cause__ is refused
    finally:
        client.close()


def test_an_unreachable_client_knows_since_when() -> None:
    client = KafkaClient(bootstrap_servers="127.0.0.1:1", reconnect_backoff_ms=10)
    try:
        assert client.unreachable_since() is None
        with pytest.raises(KafkaConnectionError, match=r"connection refused at 127\.0\.0\.1:1"):
            client.send(-1, 18, {}).get(10)
        done = threading.Event()
        client.call_soon(done.set)
        done.wait(10)
        assert client.unreachable_since() is not None
        assert client.connection_failures.describe() == "connection refused at 127.0.0.1:1"
    finally:
        client.close()


@pytest.mark.parametrize("typed, meant", [
    ("linger_mss", "linger_ms"), ("linger.ms", "linger_ms"), ("Linger_Ms", "linger_ms"),
    ("bootstrap_server", "bootstrap_servers"), ("request_timeout", "request_timeout_ms"),
    ("qwertyuiop", None),
])
def test_the_nearest_key(typed: str, meant: str | None) -> None:
    known = ("linger_ms", "bootstrap_servers", "request_timeout_ms", "retries")
    assert nearest_key(typed, known) == meant


@pytest.mark.parametrize("make, key, message", [
    (Producer, "linger_mss", "unknown producer config 'linger_mss': did you mean linger_ms?"),
    (Consumer, "group.id", "unknown consumer config 'group.id': did you mean group_id?"),
    (AdminClient, "request_timeout",
     "unknown client config 'request_timeout': did you mean request_timeout_ms?"),
    (Producer, "zzzzzz", "unknown producer config 'zzzzzz'"),
])
def test_config_typos_suggest_the_nearest_key(make: type, key: str, message: str) -> None:
    with pytest.raises(UnknownConfigError) as info:
        make(bootstrap_servers="127.0.0.1:1", **{key: 5})
    assert str(info.value) == message
    assert info.value.key == key
    assert isinstance(info.value, ConfigError)


@pytest.mark.parametrize("argv, message", [
    (["produce", "t", "-X", "linger.mss=5"],
     "unknown producer setting 'linger.mss': did you mean linger.ms?"),
    (["produce", "t", "-X", "linger_mss=5"],
     "unknown producer setting 'linger_mss': did you mean linger_ms?"),
    (["consume", "t", "-X", "fetch.max.byte=5"],
     "unknown consumer setting 'fetch.max.byte': did you mean fetch.max.bytes?"),
    (["produce", "t", "-X", "linger.ms=soon"], "linger.ms: must be an integer"),
    (["perf", "produce", "t", "--records", "1", "--record-size", "1", "--throughput", "-1",
      "--producer-props", "bootstrap.servers=h:1", "batch.sise=5"],
     "unknown producer setting 'batch.sise': did you mean batch.size?"),
])
def test_the_cli_names_a_setting_as_the_user_typed_it(
        argv: list[str], message: str, capsys: pytest.CaptureFixture[str]) -> None:
    from kafkalite.cli.main import main

    with pytest.raises(SystemExit) as info:
        main(argv)
    assert info.value.code == 2
    assert message in capsys.readouterr().err
