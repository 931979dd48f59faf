"""SCRAM-SHA-256 and SCRAM-SHA-512 (RFC 5802, RFC 7677), sans-IO, for both ends.

The client and the server are each a small state machine fed one message at a time; every
transition is in the ``_TRANSITIONS`` table of its class. Nothing here touches a socket: the
broker and the SDK move the bytes (inside SaslAuthenticate requests). Randomness is
injected (``nonce``), so tests are deterministic.

Credentials are kept the way Kafka keeps them: salt, iteration count, StoredKey and
ServerKey, never the password nor the salted password.

A user the server does not know is offered a decoy credential (:func:`decoy_credential`),
so its server-first message cannot be told from a real user's: a salt derived from a secret
and the user name (the same on every attempt, and on every broker sharing the secret), a
salt length and iteration count drawn from those of the stored credentials, and keys no
password matches, so the exchange fails at the proof exactly like a wrong password.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum

from kafkalite.errors import KafkaError

MECHANISMS: dict[str, str] = {"SCRAM-SHA-256": "sha256", "SCRAM-SHA-512": "sha512"}
"""SCRAM mechanism name -> hashlib name."""
MECHANISM_CODES: dict[str, int] = {"SCRAM-SHA-256": 1, "SCRAM-SHA-512": 2}
"""The mechanism numbers of DescribeUserScramCredentials / AlterUserScramCredentials."""
MIN_ITERATIONS = 4096
MAX_ITERATIONS = 16384
"""Kafka's bounds on the iteration count of a stored credential."""
DEFAULT_SALT_BYTES = 32
"""The salt of a credential made here from a password (and of decoys before any user)."""
_GS2_HEADER = "n,,"
"""No channel binding, no authorization identity (all Kafka clients send this)."""


class ScramError(KafkaError):
    """A SCRAM message is malformed, out of order, or fails verification."""


def new_nonce() -> str:
    return secrets.token_urlsafe(24)


@dataclass(frozen=True)
class ScramCredential:
    """What the server stores for one user and mechanism."""

    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    @classmethod
    def from_salted_password(cls, mechanism: str, salt: bytes, salted: bytes,
                             iterations: int) -> ScramCredential:
        digest = MECHANISMS[mechanism]
        client_key = _hmac(digest, salted, b"Client Key")
        return cls(salt, hashlib.new(digest, client_key).digest(),
                   _hmac(digest, salted, b"Server Key"), iterations)

    @classmethod
    def from_password(cls, mechanism: str, password: str, iterations: int = MIN_ITERATIONS,
                      salt: bytes | None = None) -> ScramCredential:
        salt = secrets.token_bytes(DEFAULT_SALT_BYTES) if salt is None else salt
        return cls.from_salted_password(mechanism, salt,
                                        salted_password(mechanism, password, salt, iterations),
                                        iterations)

    def to_text(self) -> str:
        """Kafka's ZooKeeper form: ``salt=..,stored_key=..,server_key=..,iterations=N``."""
        return (f"salt={_b64(self.salt)},stored_key={_b64(self.stored_key)},"
                f"server_key={_b64(self.server_key)},iterations={self.iterations}")

    @classmethod
    def from_text(cls, text: str) -> ScramCredential:
        try:
            fields = dict(part.split("=", 1) for part in text.split(","))
            return cls(_unb64(fields["salt"]), _unb64(fields["stored_key"]),
                       _unb64(fields["server_key"]), int(fields["iterations"]))
        except (KeyError, ValueError) as exc:
            raise ScramError(f"unreadable SCRAM credential: {exc!r}") from None


CredentialShape = tuple[int, int]
"""(salt length in bytes, iteration count) of a stored credential."""


def decoy_credential(secret: bytes, mechanism: str, user: str,
                     shapes: Sequence[CredentialShape]) -> ScramCredential:
    """The credential offered to ``user``, whom the server does not know, for
    ``mechanism``: everything derived from ``secret`` (which must stay secret and be the
    same on every broker of a cluster) and the user name, so each attempt and each broker
    offers the same salt. Its (salt length, iterations) is one of ``shapes``, the stored
    credentials' (with their frequencies), chosen by the same derivation; with no stored
    credential, what :meth:`ScramCredential.from_password` makes."""
    seed = _hmac("sha256", secret, f"{mechanism}\0{user}".encode())
    if shapes:
        ordered = sorted(shapes)
        length, iterations = ordered[int.from_bytes(seed[:8], "big") % len(ordered)]
    else:
        length, iterations = DEFAULT_SALT_BYTES, MIN_ITERATIONS
    key_size = hashlib.new(MECHANISMS[mechanism]).digest_size
    return ScramCredential(_expand(secret, b"salt" + seed, length),
                           _expand(secret, b"stored key" + seed, key_size),
                           _expand(secret, b"server key" + seed, key_size), iterations)


def _expand(key: bytes, info: bytes, length: int) -> bytes:
    """``length`` pseudo-random bytes from ``key`` and ``info`` (HMAC in counter mode)."""
    blocks = (_hmac("sha256", key, info + counter.to_bytes(4, "big"))
              for counter in range(-(-length // 32)))
    return b"".join(blocks)[:length]


def salted_password(mechanism: str, password: str, salt: bytes, iterations: int) -> bytes:
    """Hi(password, salt, i) of RFC 5802: PBKDF2 with the mechanism's HMAC."""
    return hashlib.pbkdf2_hmac(MECHANISMS[mechanism], password.encode("utf-8"), salt,
                               iterations)


def _hmac(digest: str, key: bytes, message: bytes) -> bytes:
    return hmac.new(key, message, digest).digest()


def _xor(left: bytes, right: bytes) -> bytes:
    return bytes(a ^ b for a, b in zip(left, right, strict=True))


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    try:
        return base64.b64decode(text.encode("ascii"), validate=True)
    except (ValueError, UnicodeEncodeError):
        raise ScramError("invalid base64") from None


def _escape(name: str) -> str:
    return name.replace("=", "=3D").replace(",", "=2C")


def _unescape(name: str) -> str:
    if "=" in name.replace("=3D", "").replace("=2C", ""):
        raise ScramError("bad escape in the user name")
    return name.replace("=2C", ",").replace("=3D", "=")


def _attributes(message: bytes) -> list[tuple[str, str]]:
    """``a=value,b=value`` as (attribute, value) pairs, in order."""
    try:
        text = message.decode("utf-8")
    except UnicodeDecodeError:
        raise ScramError("the message is not UTF-8") from None
    pairs = []
    for part in text.split(","):
        if len(part) < 2 or part[1] != "=":
            raise ScramError(f"malformed attribute {part[:20]!r}")
        pairs.append((part[0], part[2:]))
    return pairs


def _require(pairs: list[tuple[str, str]], names: str) -> list[str]:
    """The values of the leading attributes, which must be ``names`` in that order."""
    if len(pairs) < len(names) or [name for name, _ in pairs[:len(names)]] != list(names):
        raise ScramError(f"expected attributes {','.join(names)}")
    return [value for _, value in pairs[:len(names)]]


class _Step(Enum):
    FIRST = "first"
    FINAL = "final"
    DONE = "done"
    FAILED = "failed"


_SERVER_TRANSITIONS = {_Step.FIRST: ("_on_client_first", _Step.FINAL),
                       _Step.FINAL: ("_on_client_final", _Step.DONE)}
"""state -> (handler of the incoming message, next state); a failure moves to FAILED."""
_CLIENT_TRANSITIONS = {_Step.FIRST: ("_on_server_first", _Step.FINAL),
                       _Step.FINAL: ("_on_server_final", _Step.DONE)}


class ScramServer:
    """The broker's side of one exchange. ``lookup(user)`` returns the stored credential or
    None; an unknown user is offered ``decoy(user)`` (see :func:`decoy_credential`) and
    fails exactly like a wrong password (after the same messages).

    The client-final nonce must be the server's (client + server part), or, as Kafka 3.x
    accepts, the client part followed by it: librdkafka before 2.6.1 prepends its nonce a
    second time. The proof is checked over the message as sent, so nothing else loosens.
    """

    def __init__(self, mechanism: str,
                 lookup: Callable[[str], ScramCredential | None], *,
                 decoy: Callable[[str], ScramCredential],
                 nonce: Callable[[], str] = new_nonce) -> None:
        if mechanism not in MECHANISMS:
            raise ScramError(f"unknown SCRAM mechanism {mechanism!r}")
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._lookup = lookup
        self._decoy = decoy
        self._nonce = nonce
        self._step = _Step.FIRST
        self.user: str | None = None
        self._credential: ScramCredential | None = None
        self._client_first_bare = ""
        self._server_first = ""
        self._full_nonce = ""
        self._client_nonce = ""
        self._known = False

    @property
    def complete(self) -> bool:
        return self._step is _Step.DONE

    def receive(self, message: bytes) -> bytes:
        """The reply to a client message; ScramError (the exchange is then over) if the
        message is malformed or the proof is wrong."""
        transition = _SERVER_TRANSITIONS.get(self._step)
        if transition is None:
            raise ScramError(f"no message expected in state {self._step.value}")
        handler, following = transition
        try:
            reply = getattr(self, handler)(message)
        except ScramError:
            self._step = _Step.FAILED
            raise
        self._step = following
        return reply

    def _on_client_first(self, message: bytes) -> bytes:
        text = message.decode("utf-8", errors="replace")
        header, sep, bare = text.partition(",")
        authzid, sep2, bare = bare.partition(",")
        if not sep or not sep2 or header not in ("n", "y") or (
                authzid and not authzid.startswith("a=")):
            raise ScramError("client-first-message needs a gs2 header without channel binding")
        pairs = _attributes(bare.encode("utf-8"))
        user, client_nonce = _require(pairs, "nr")
        if not client_nonce:
            raise ScramError("empty client nonce")
        self.user = _unescape(user)
        if authzid and authzid[2:] != user:
            raise ScramError("authorization id differs from the user")
        found = self._lookup(self.user)
        self._credential = found if found is not None else self._decoy(self.user)
        self._known = found is not None
        self._client_first_bare = bare
        self._client_nonce = client_nonce
        self._full_nonce = client_nonce + self._nonce()
        self._server_first = (f"r={self._full_nonce},s={_b64(self._credential.salt)},"
                              f"i={self._credential.iterations}")
        return self._server_first.encode()

    def _on_client_final(self, message: bytes) -> bytes:
        pairs = _attributes(message)
        channel, nonce = _require(pairs, "cr")
        if pairs[-1][0] != "p":
            raise ScramError("client-final-message has no proof")
        if channel not in ("biws", "eSws"):
            raise ScramError("channel binding is not supported")
        if nonce not in (self._full_nonce, self._client_nonce + self._full_nonce):
            raise ScramError("the nonce does not match")
        proof = _unb64(pairs[-1][1])
        without_proof = message.decode("utf-8").rsplit(",p=", 1)[0]
        auth_message = ",".join((self._client_first_bare, self._server_first,
                                 without_proof)).encode()
        credential = self._credential
        assert credential is not None
        signature = _hmac(self._digest, credential.stored_key, auth_message)
        if len(proof) != len(signature):
            raise ScramError("invalid credentials")
        client_key = _xor(proof, signature)
        valid = hmac.compare_digest(hashlib.new(self._digest, client_key).digest(),
                                    credential.stored_key)
        if not valid or not self._known:
            raise ScramError("invalid credentials")
        server_signature = _hmac(self._digest, credential.server_key, auth_message)
        return f"v={_b64(server_signature)}".encode()


class ScramClient:
    """The client's side: :meth:`first_message`, then :meth:`receive` twice (the second
    returns None: nothing more to send)."""

    def __init__(self, mechanism: str, user: str, password: str, *,
                 nonce: Callable[[], str] = new_nonce) -> None:
        if mechanism not in MECHANISMS:
            raise ScramError(f"unknown SCRAM mechanism {mechanism!r}")
        self.mechanism = mechanism
        self._digest = MECHANISMS[mechanism]
        self._password = password
        self._client_nonce = nonce()
        self._bare = f"n={_escape(user)},r={self._client_nonce}"
        self._step = _Step.FIRST
        self._server_signature = b""

    @property
    def complete(self) -> bool:
        return self._step is _Step.DONE

    def first_message(self) -> bytes:
        return (_GS2_HEADER + self._bare).encode("utf-8")

    def receive(self, message: bytes) -> bytes | None:
        transition = _CLIENT_TRANSITIONS.get(self._step)
        if transition is None:
            raise ScramError(f"no message expected in state {self._step.value}")
        handler, following = transition
        try:
            reply = getattr(self, handler)(message)
        except ScramError:
            self._step = _Step.FAILED
            raise
        self._step = following
        return reply

    def _on_server_first(self, message: bytes) -> bytes:
        pairs = _attributes(message)
        if pairs and pairs[0][0] == "e":
            raise ScramError(f"the server refused: {pairs[0][1]}")
        nonce, salt, iterations = _require(pairs, "rsi")
        if not nonce.startswith(self._client_nonce) or nonce == self._client_nonce:
            raise ScramError("the server nonce does not extend ours")
        try:
            count = int(iterations)
        except ValueError:
            raise ScramError("bad iteration count") from None
        if count < 1:
            raise ScramError("bad iteration count")
        salted = salted_password(self.mechanism, self._password, _unb64(salt), count)
        without_proof = f"c=biws,r={nonce}"
        auth_message = ",".join((self._bare, message.decode("utf-8"), without_proof)).encode()
        client_key = _hmac(self._digest, salted, b"Client Key")
        stored_key = hashlib.new(self._digest, client_key).digest()
        proof = _xor(client_key, _hmac(self._digest, stored_key, auth_message))
        self._server_signature = _hmac(self._digest,
                                       _hmac(self._digest, salted, b"Server Key"),
                                       auth_message)
        return f"{without_proof},p={_b64(proof)}".encode()

    def _on_server_final(self, message: bytes) -> None:
        pairs = _attributes(message)
        if pairs and pairs[0][0] == "e":
            raise ScramError(f"the server refused: {pairs[0][1]}")
        (verifier,) = _require(pairs, "v")
        if not hmac.compare_digest(_unb64(verifier), self._server_signature):
            raise ScramError("the server's signature is wrong")
        return None
