"""Sans-IO pieces: SCRAM against RFC 7677's exchange, the server's refusals, PLAIN, JAAS,
the ACL decision rules, the SASL connection state table, and config errors naming keys."""

from __future__ import annotations

import base64
import itertools
import re
from collections.abc import Callable
from typing import Any

import pytest

from kafkalite.errors import ConfigError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import SaslAuthenticationFailedError
from kafkalite.protocol.sasl_plain import PlainError, parse_plain, plain_message
from kafkalite.protocol.scram import (
    ScramClient,
    ScramCredential,
    ScramError,
    ScramServer,
    decoy_credential,
)
from kafkalite_server.config import BrokerConfig
from kafkalite_server.network.listeners import resolve_listeners
from kafkalite_server.security.acls import (
    AclBinding,
    AclOperation,
    AclPermission,
    AuthorizerSettings,
    PatternType,
    Resource,
    ResourceType,
    authorize,
)
from kafkalite_server.security.authenticator import SaslAuthenticator, SaslState
from kafkalite_server.security.jaas import parse_jaas

# RFC 7677 section 3: user "user", password "pencil".
RFC_CLIENT_NONCE = "rOprNGfwEbeRWgbNEkqO"
RFC_SERVER_NONCE = "%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
RFC_SALT = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
SECRET = b"the cluster's decoy secret"


def decoy(user: str, mechanism: str = "SCRAM-SHA-256") -> ScramCredential:
    return decoy_credential(SECRET, mechanism, user, ())


def scram_server(mechanism: str, lookup: Callable[[str], ScramCredential | None],
                 **options: Any) -> ScramServer:
    return ScramServer(mechanism, lookup, decoy=lambda user: decoy(user, mechanism), **options)


def test_scram_sha_256_client_matches_rfc_7677() -> None:
    client = ScramClient("SCRAM-SHA-256", "user", "pencil", nonce=lambda: RFC_CLIENT_NONCE)
    assert client.first_message() == b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO"
    final = client.receive(b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                           b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    assert final == (b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert client.receive(b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4=") is None
    assert client.complete


def test_scram_server_matches_rfc_7677_and_stores_no_password() -> None:
    credential = ScramCredential.from_password("SCRAM-SHA-256", "pencil", 4096, RFC_SALT)
    assert b"pencil" not in credential.to_text().encode()
    assert ScramCredential.from_text(credential.to_text()) == credential
    server = scram_server("SCRAM-SHA-256", {"user": credential}.get,
                         nonce=lambda: RFC_SERVER_NONCE)
    first = server.receive(b"n,,n=user,r=rOprNGfwEbeRWgbNEkqO")
    assert first == (b"r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                     b"s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")
    final = server.receive(b"c=biws,r=rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0,"
                           b"p=dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    assert final == b"v=6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert server.complete and server.user == "user"


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_round_trip_and_wrong_password(mechanism: str) -> None:
    stored = {"bob": ScramCredential.from_password(mechanism, "s3cret", 4096)}
    for password, ok in (("s3cret", True), ("wrong", False)):
        client = ScramClient(mechanism, "bob", password)
        server = scram_server(mechanism, stored.get)
        final = client.receive(server.receive(client.first_message()))
        assert final is not None
        if ok:
            assert client.receive(server.receive(final)) is None and server.complete
        else:
            with pytest.raises(ScramError, match="invalid credentials"):
                server.receive(final)


def _server_first(mechanism: str, stored: dict[str, ScramCredential], user: str,
                  secret: bytes = SECRET) -> tuple[ScramServer, ScramClient, dict[str, str]]:
    shapes = [(len(c.salt), c.iterations) for c in stored.values()]
    server = ScramServer(mechanism, stored.get,
                         decoy=lambda name: decoy_credential(secret, mechanism, name, shapes))
    client = ScramClient(mechanism, user, "a guess")
    first = server.receive(client.first_message())
    return server, client, dict(part.split("=", 1) for part in first.decode().split(","))


def _message(fields: dict[str, str]) -> bytes:
    return ",".join(f"{key}={value}" for key, value in fields.items()).encode()


def test_scram_unknown_user_is_offered_what_a_real_user_is() -> None:
    """The issue's probe: real users got 64-byte salts and 8192 iterations, an unknown user
    32 bytes and 4096. Now the unknown user gets the stored credentials' shape, the same salt
    on every attempt and from every broker sharing the secret, and fails at the proof with
    the words a wrong password gets."""
    mechanism = "SCRAM-SHA-512"
    stored = {user: ScramCredential.from_password(mechanism, "pw", 8192, salt=bytes([i]) * 64)
              for i, user in enumerate(("alice", "bob"))}
    _, _, real = _server_first(mechanism, stored, "alice")
    server, client, fake = _server_first(mechanism, stored, "mallory")
    assert (len(base64.b64decode(fake["s"])), fake["i"]) == \
        (len(base64.b64decode(real["s"])), real["i"]) == (64, "8192")
    assert _server_first(mechanism, stored, "mallory")[2]["s"] == fake["s"]  # every attempt
    assert _server_first(mechanism, dict(stored), "mallory")[2]["s"] == fake["s"]  # any broker
    assert _server_first(mechanism, stored, "trudy")[2]["s"] != fake["s"]
    assert _server_first(mechanism, stored, "mallory", b"other")[2]["s"] != fake["s"]
    with pytest.raises(ScramError) as unknown:
        server.receive(client.receive(_message(fake)) or b"")
    wrong_server, wrong_client, real_first = _server_first(mechanism, stored, "alice")
    with pytest.raises(ScramError) as wrong:
        wrong_server.receive(wrong_client.receive(_message(real_first)) or b"")
    assert str(unknown.value) == str(wrong.value) == "invalid credentials"


def test_scram_decoys_take_every_stored_shape_in_proportion_and_default_without_users() -> None:
    shapes = [(24, 4096)] * 3 + [(64, 8192)]
    offered = [decoy_credential(SECRET, "SCRAM-SHA-256", f"user-{i}", shapes) for i in range(400)]
    counts = {shape: sum((len(c.salt), c.iterations) == shape for c in offered)
              for shape in set(shapes)}
    assert set(counts) == {(24, 4096), (64, 8192)} and sum(counts.values()) == 400
    assert counts[(24, 4096)] > counts[(64, 8192)] > 0
    assert all(len(c.stored_key) == len(c.server_key) == 32 for c in offered)
    lone = decoy_credential(SECRET, "SCRAM-SHA-512", "anyone", ())
    assert (len(lone.salt), lone.iterations, len(lone.stored_key)) == (32, 4096, 64)


def test_scram_server_refuses_a_wrong_nonce_a_bad_proof_and_garbage() -> None:
    stored = {"bob": ScramCredential.from_password("SCRAM-SHA-256", "pw", 4096)}
    client = ScramClient("SCRAM-SHA-256", "bob", "pw")
    server = scram_server("SCRAM-SHA-256", stored.get)
    final = client.receive(server.receive(client.first_message())) or b""
    tampered = final.replace(b"r=", b"r=X", 1)
    with pytest.raises(ScramError, match="nonce"):
        server.receive(tampered)
    with pytest.raises(ScramError, match="no message expected"):
        server.receive(final)  # the exchange is over after a failure
    client = ScramClient("SCRAM-SHA-256", "bob", "pw")
    server = scram_server("SCRAM-SHA-256", stored.get)
    final = client.receive(server.receive(client.first_message())) or b""
    forged = final.rsplit(b"p=", 1)[0] + b"p=" + base64.b64encode(b"\0" * 32)
    with pytest.raises(ScramError, match="invalid credentials"):
        server.receive(forged)
    for garbage in (b"", b"\xff\xfe", b"n,,", b"x=1", b"n,,n=bob"):
        with pytest.raises(ScramError):
            scram_server("SCRAM-SHA-256", stored.get).receive(garbage)


def test_scram_client_refuses_a_server_that_does_not_extend_its_nonce() -> None:
    client = ScramClient("SCRAM-SHA-256", "u", "p", nonce=lambda: "abc")
    client.first_message()
    with pytest.raises(ScramError, match="nonce"):
        client.receive(b"r=zzz,s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096")


def test_plain_messages() -> None:
    assert parse_plain(plain_message("alice", "pw")) == ("alice", "pw")
    assert parse_plain(b"alice\0alice\0pw") == ("alice", "pw")
    for bad in (b"", b"alice", b"\0alice\0", b"mallory\0alice\0pw", b"\0\xff\0pw"):
        with pytest.raises(PlainError):
            parse_plain(bad)


def test_jaas_users_and_errors() -> None:
    entry = parse_jaas("k", 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                            'username="admin" password="admin-secret" user_admin="admin-secret" '
                            'user_alice="a \\"quoted\\" pw";')
    assert entry.plain_users() == {"admin": "admin-secret", "alice": 'a "quoted" pw'}
    for bad in ("PlainLoginModule required user_a=\"x\"", "PlainLoginModule maybe;",
                'PlainLoginModule required user_a="x" junk;'):
        with pytest.raises(ConfigError, match=r"^k: "):
            parse_jaas("k", bad)


def _acl(principal: str, operation: AclOperation, permission: AclPermission,
         name: str = "orders", pattern: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(ResourceType.TOPIC, name, pattern, principal, "*", operation, permission)


TOPIC = Resource(ResourceType.TOPIC, "orders")
CLOSED = AuthorizerSettings(frozenset({"User:root"}), False)


def test_acl_decisions() -> None:
    allow = _acl("User:alice", AclOperation.WRITE, AclPermission.ALLOW)
    deny = _acl("User:*", AclOperation.WRITE, AclPermission.DENY)
    assert authorize(CLOSED, [allow], "User:alice", "1.2.3.4", AclOperation.WRITE, TOPIC)
    assert not authorize(CLOSED, [allow], "User:bob", "1.2.3.4", AclOperation.WRITE, TOPIC)
    assert not authorize(CLOSED, [allow, deny], "User:alice", "h", AclOperation.WRITE, TOPIC)
    assert authorize(CLOSED, [deny], "User:root", "h", AclOperation.WRITE, TOPIC)
    assert not authorize(CLOSED, [], "User:alice", "h", AclOperation.READ, TOPIC)
    assert authorize(AuthorizerSettings(frozenset(), True), [], "User:x", "h",
                     AclOperation.READ, TOPIC)
    # Write implies Describe; a prefixed ACL covers every topic it starts.
    assert authorize(CLOSED, [allow], "User:alice", "h", AclOperation.DESCRIBE, TOPIC)
    prefixed = _acl("User:bob", AclOperation.READ, AclPermission.ALLOW, "ord",
                    PatternType.PREFIXED)
    assert authorize(CLOSED, [prefixed], "User:bob", "h", AclOperation.READ, TOPIC)
    assert not authorize(CLOSED, [prefixed], "User:bob", "h", AclOperation.READ,
                         Resource(ResourceType.TOPIC, "audit"))
    host_bound = AclBinding(ResourceType.TOPIC, "*", PatternType.LITERAL, "User:bob",
                            "10.0.0.1", AclOperation.ALL, AclPermission.ALLOW)
    assert authorize(CLOSED, [host_bound], "User:bob", "10.0.0.1", AclOperation.READ, TOPIC)
    assert not authorize(CLOSED, [host_bound], "User:bob", "10.0.0.2", AclOperation.READ,
                         TOPIC)


def test_sasl_state_table_limits_requests_until_authenticated() -> None:
    auth = SaslAuthenticator(("PLAIN",), {"alice": "pw"}.get, lambda user, mech: None,
                             lambda user, mech: decoy(user, mech))
    assert auth.allows(ApiKey.API_VERSIONS) and not auth.allows(ApiKey.METADATA)
    auth.handshake("PLAIN", 1)
    assert auth.state is SaslState.AUTHENTICATE and not auth.allows(ApiKey.API_VERSIONS)
    assert auth.authenticate(plain_message("alice", "pw")) == b""
    assert auth.authenticated and auth.allows(ApiKey.PRODUCE)
    for token in (plain_message("alice", "nope"), plain_message("ghost", "pw"), b"\0\0\0"):
        auth = SaslAuthenticator(("PLAIN",), {"alice": "pw"}.get, lambda user, mech: None,
                                 lambda user, mech: decoy(user, mech))
        auth.handshake("PLAIN", 1)
        with pytest.raises(SaslAuthenticationFailedError):
            auth.authenticate(token)
        assert auth.failed and not auth.allows(ApiKey.SASL_AUTHENTICATE)


@pytest.mark.parametrize("settings, key", [
    ({"listeners": "PLAINTEXT://127.0.0.1"}, "listeners"),
    ({"listeners": "A://h:1,A://h:2"}, "listeners"),
    ({"listeners": "INTERNAL://h:1"}, "listener.security.protocol.map"),
    ({"listener.security.protocol.map": "X:TLS"}, "listener.security.protocol.map"),
    ({"listeners": "PLAINTEXT://h:1", "inter.broker.listener.name": "NOPE"},
     "inter.broker.listener.name"),
    ({"listeners": "PLAINTEXT://h:1", "advertised.listeners": "SSL://h:2"},
     "advertised.listeners"),
    ({"ssl.client.auth": "always"}, "ssl.client.auth"),
    ({"ssl.keystore.type": "JKS"}, "ssl.keystore.type"),
    ({"super.users": "alice"}, "super.users"),
    ({"listener.name.sasl_ssl.bogus": "1"}, "listener.name.sasl_ssl.bogus"),
])
def test_bad_listener_settings_name_the_key(settings: dict[str, str], key: str) -> None:
    with pytest.raises(ConfigError, match=rf"^{re.escape(key)}: "):
        resolve_listeners(BrokerConfig.from_properties(settings))


def test_listeners_default_and_several() -> None:
    (default,) = resolve_listeners(BrokerConfig())
    assert (default.name, default.protocol, default.host) == ("PLAINTEXT", "PLAINTEXT",
                                                             "127.0.0.1")
    listeners = resolve_listeners(BrokerConfig.from_properties({
        "listeners": "EXTERNAL://0.0.0.0:9094,INTERNAL://127.0.0.1:9092",
        "advertised.listeners": "EXTERNAL://kafka.example.com:9094",
        "listener.security.protocol.map": "EXTERNAL:SASL_SSL,INTERNAL:PLAINTEXT",
        "inter.broker.listener.name": "INTERNAL"}))
    assert [(item.name, item.protocol) for item in listeners] == [("INTERNAL", "PLAINTEXT"),
                                                         ("EXTERNAL", "SASL_SSL")]
    assert listeners[1].advertised_host == "kafka.example.com"


def test_passwords_are_not_described() -> None:
    config = BrokerConfig.from_properties({"ssl.key.password": "hunter2",
                                           "sasl.jaas.config": "x required;"})
    described = {key: value for key, value, _default in config.describe()}
    assert described["ssl.key.password"] is None and described["sasl.jaas.config"] is None
    assert "hunter2" not in repr(list(itertools.chain(config.describe())))


def test_scram_server_accepts_librdkafkas_doubled_client_nonce_but_nothing_else() -> None:
    """librdkafka < 2.6.1 sends r=<client nonce><server nonce> (Kafka 3.x accepts it)."""
    import hashlib
    import hmac

    from kafkalite.protocol.scram import salted_password

    credential = ScramCredential.from_password("SCRAM-SHA-256", "pw", 4096, b"salt")

    def final_for(nonce: str) -> tuple[ScramServer, bytes]:
        server = scram_server("SCRAM-SHA-256", {"bob": credential}.get, nonce=lambda: "sn")
        server_first = server.receive(b"n,,n=bob,r=cn").decode()
        without_proof = f"c=biws,r={nonce}"
        auth = f"n=bob,r=cn,{server_first},{without_proof}".encode()
        salted = salted_password("SCRAM-SHA-256", "pw", b"salt", 4096)
        client_key = hmac.new(salted, b"Client Key", "sha256").digest()
        signature = hmac.new(hashlib.sha256(client_key).digest(), auth, "sha256").digest()
        proof = bytes(a ^ b for a, b in zip(client_key, signature, strict=True))
        return server, f"{without_proof},p={base64.b64encode(proof).decode()}".encode()

    for nonce in ("cnsn", "cncnsn"):
        server, final = final_for(nonce)
        assert server.receive(final).startswith(b"v=")
    for nonce in ("sn", "xxcnsn", "cnsnx"):
        server, final = final_for(nonce)
        with pytest.raises(ScramError, match="nonce"):
            server.receive(final)


def test_listeners_travel_in_update_metadata_and_broker_registrations() -> None:
    from kafkalite.protocol import decode_request_body, decode_request_header, encode_request
    from kafkalite_server.cluster import metadata_layout, wire
    from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
    from kafkalite_server.cluster.messages import UpdateMetadata

    listeners = (("INTERNAL", "10.0.0.1", 9092, "PLAINTEXT"),
                 ("EXTERNAL", "kafka.example.com", 9094, "SASL_SSL"))
    endpoint = BrokerEndpoint(1, "10.0.0.1", 9092, "r1", listeners)
    assert endpoint.on("EXTERNAL").host == "kafka.example.com"
    assert endpoint.on("EXTERNAL").port == 9094 and endpoint.on(None) == endpoint
    api_key, version, body = wire.to_request(UpdateMetadata(1, 4, (), (endpoint,)))
    frame = encode_request(api_key, version, 9, "controller", body)[4:]
    header, offset = decode_request_header(frame)
    decoded = wire.update_metadata_from(decode_request_body(header, frame, offset))
    assert decoded.live_brokers == (endpoint,)
    assert metadata_layout.decode_broker(1, metadata_layout.encode_broker(endpoint, 0)) == endpoint
