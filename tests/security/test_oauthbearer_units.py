"""OAUTHBEARER without a broker: the client message, unsecured tokens, Kafka's unsecured
validator with a fixed clock, and the authenticator's refusal handshake."""

from __future__ import annotations

import json

import pytest

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import SaslAuthenticationFailedError
from kafkalite.protocol.sasl_oauthbearer import (
    ClientResponse,
    OAuthBearerFormatError,
    client_response,
    parse_client_response,
    unsecured_token,
)
from kafkalite_server.security.authenticator import SaslAuthenticator
from kafkalite_server.security.oauthbearer import (
    OAuthBearerToken,
    OAuthBearerValidationError,
    UnsecuredValidator,
    load_validator,
)

NOW_MS = 1_700_000_000_000
NOW_S = NOW_MS // 1000


def test_the_client_message_round_trips_with_extensions_and_an_authzid() -> None:
    message = client_response("a.b.", {"traceId": "123"}, authzid="alice")
    assert message == b"n,a=alice,\x01auth=Bearer a.b.\x01traceId=123\x01\x01"
    assert parse_client_response(message) == ClientResponse("a.b.", "alice",
                                                            {"traceId": "123"})
    assert parse_client_response(b"n,,\x01auth=Bearer tok\x01\x01") == ClientResponse("tok")


@pytest.mark.parametrize("message, problem", [
    (b"y,,\x01auth=Bearer t\x01\x01", "GS2 header"),
    (b"n,,\x01auth=Bearer t\x01", "framed"),
    (b"n,,\x01\x01", "not a key=value"),
    (b"n,,\x01x=1\x01\x01", "no auth=Bearer"),
    (b"n,,\x01auth=Basic t\x01\x01", "Bearer <token>"),
    (b"n,,\x01auth=Bearer t\x01a1=x\x01\x01", "extension name"),
    (b"\xff", "UTF-8"),
])
def test_malformed_client_messages_say_what_is_wrong(message: bytes, problem: str) -> None:
    with pytest.raises(OAuthBearerFormatError, match=problem):
        parse_client_response(message)


def validator(**options: str) -> UnsecuredValidator:
    return UnsecuredValidator(options)


def test_an_unsecured_token_names_its_subject_until_it_expires() -> None:
    token = unsecured_token({"sub": "alice", "iat": NOW_S, "exp": NOW_S + 60,
                             "scope": "a b"})
    assert validator().validate(token, NOW_MS) == OAuthBearerToken(
        "alice", (NOW_S + 60) * 1000, frozenset({"a", "b"}))
    with pytest.raises(OAuthBearerValidationError, match="expired"):
        validator().validate(token, (NOW_S + 60) * 1000)
    skewed = validator(unsecuredValidatorAllowableClockSkewMs="1000")
    assert skewed.validate(token, (NOW_S + 60) * 1000).principal_name == "alice"


@pytest.mark.parametrize("claims, problem", [
    ({"exp": NOW_S + 60}, "no string 'sub'"),
    ({"sub": "alice"}, "no numeric 'exp'"),
    ({"sub": "alice", "exp": "soon"}, "'exp' claim is not a number"),
    ({"sub": "alice", "exp": NOW_S + 60, "iat": NOW_S + 30}, "issued in the future"),
    ({"sub": "alice", "exp": NOW_S - 60, "iat": NOW_S - 30}, "expired"),
    ({"sub": "alice", "exp": NOW_S + 60, "scope": 7}, "scope claim"),
])
def test_tokens_kafka_refuses_are_refused(claims: dict, problem: str) -> None:
    with pytest.raises(OAuthBearerValidationError, match=problem) as refused:
        validator().validate(unsecured_token(claims), NOW_MS)
    assert refused.value.status == "invalid_token"


def test_a_signed_token_is_refused_by_the_unsecured_validator() -> None:
    header = unsecured_token({"alg": "HS256"}).split(".")[1]  # {"alg":"HS256"} as a part
    payload = unsecured_token({"sub": "alice", "exp": NOW_S + 60}).split(".")[1]
    with pytest.raises(OAuthBearerValidationError, match="signed"):
        validator().validate(f"{header}.{payload}.c2ln", NOW_MS)
    unsigned = unsecured_token({"sub": "alice", "exp": NOW_S + 60})
    with pytest.raises(OAuthBearerValidationError, match="must not carry a signature"):
        validator().validate(unsigned + "c2ln", NOW_MS)


def test_claim_names_and_the_required_scope_come_from_the_jaas_options() -> None:
    custom = validator(unsecuredValidatorPrincipalClaimName="client_id",
                       unsecuredValidatorScopeClaimName="scp",
                       unsecuredValidatorRequiredScope="kafka.read kafka.write")
    token = unsecured_token({"client_id": "svc", "exp": NOW_S + 60,
                             "scp": ["kafka.read", "kafka.write", "other"]})
    assert custom.validate(token, NOW_MS).principal_name == "svc"
    narrow = unsecured_token({"client_id": "svc", "exp": NOW_S + 60, "scp": "kafka.read"})
    with pytest.raises(OAuthBearerValidationError) as refused:
        custom.validate(narrow, NOW_MS)
    assert (refused.value.status, refused.value.scope) == ("insufficient_scope",
                                                           "kafka.read kafka.write")
    with pytest.raises(ConfigError, match="unsecuredValidatorAllowableClockSkewMs"):
        validator(unsecuredValidatorAllowableClockSkewMs="-1")


def test_a_validator_class_is_loaded_by_module_and_name() -> None:
    key = "listener.name.x.oauthbearer.sasl.server.callback.handler.class"
    loaded = load_validator(key, "tests.security.oauth_validator:SharedSecretValidator",
                            {"secret": "s3"})
    assert loaded.validate("s3.bob", NOW_MS).principal_name == "bob"
    for bad, problem in [("no_colon", "module:Class"), ("tests.nowhere:X", "cannot load"),
                         ("builtins:dict", "no validate")]:
        with pytest.raises(ConfigError, match=problem):
            load_validator(key, bad, {})


def authenticator() -> SaslAuthenticator:
    def nobody(*_args: str) -> None:
        return None

    sasl = SaslAuthenticator(("OAUTHBEARER",), nobody, nobody, nobody,  # type: ignore[arg-type]
                             UnsecuredValidator({}), lambda: NOW_MS)
    sasl.handshake("OAUTHBEARER", 1)
    return sasl


def test_a_refused_token_is_answered_with_kafkas_json_then_fails_on_the_acknowledgement() -> None:
    sasl = authenticator()
    expired = unsecured_token({"sub": "alice", "exp": NOW_S - 1})
    challenge = sasl.authenticate(client_response(expired))
    assert json.loads(challenge) == {"status": "invalid_token"}
    assert not sasl.authenticated and not sasl.failed
    with pytest.raises(SaslAuthenticationFailedError, match="invalid_token"):
        sasl.authenticate(b"\x01")
    assert sasl.failed


def test_an_accepted_token_sets_the_user_and_the_token_lifetime() -> None:
    sasl = authenticator()
    assert sasl.authenticate(client_response(unsecured_token(
        {"sub": "alice", "exp": NOW_S + 60}))) == b""
    assert (sasl.user, sasl.session_lifetime_ms) == ("alice", 60_000)
    other = authenticator()
    challenge = other.authenticate(client_response(
        unsecured_token({"sub": "alice", "exp": NOW_S + 60}), authzid="admin"))
    assert json.loads(challenge) == {"status": "invalid_token"}
