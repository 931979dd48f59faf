"""The broker's OAUTHBEARER token validation: Kafka's unsecured-JWS validator, and the hook
that plugs in a real one.

By default a listener validates tokens as Kafka's ``OAuthBearerUnsecuredValidatorCallbackHandler``
does, configured by the options of the listener's OAUTHBEARER JAAS entry
(``listener.name.<l>.oauthbearer.sasl.jaas.config``, else ``sasl.jaas.config``):

- ``unsecuredValidatorPrincipalClaimName`` (``sub``): the claim naming the principal;
- ``unsecuredValidatorScopeClaimName`` (``scope``): the claim listing the scope (a string of
  space-separated values, or a JSON list);
- ``unsecuredValidatorRequiredScope``: space-separated scope values every token must have;
- ``unsecuredValidatorAllowableClockSkewMs`` (0): how far ``exp`` and ``iat`` may be off.

A token must be a JWS with ``"alg":"none"`` and no signature, a string principal claim and a numeric ``exp``
still in the future (``iat``, when present, a number not in the future and before ``exp``).
Such tokens prove nothing: use them in development only.

``listener.name.<l>.oauthbearer.sasl.server.callback.handler.class`` names a Python class
(``module:Class``) instead: it is built with the JAAS options and implements
:class:`OAuthBearerValidator`, e.g. a JWT check against an identity provider's JWKS. It runs
on the broker's event loop, so it must not wait on the network: fetch keys ahead of time.
"""

from __future__ import annotations

import importlib
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol, runtime_checkable

from kafkalite.errors import ConfigError
from kafkalite.protocol.sasl_oauthbearer import (
    OAuthBearerFormatError,
    decode_unsecured_token,
    unsecured_token,
)

INVALID_TOKEN = "invalid_token"
INSUFFICIENT_SCOPE = "insufficient_scope"


@dataclass(frozen=True)
class OAuthBearerToken:
    """A validated token: who it names and until when (epoch milliseconds) it is good."""

    principal_name: str
    lifetime_ms: int
    scope: frozenset[str] = frozenset()


class OAuthBearerValidationError(Exception):
    """A token refused; ``status`` (and ``scope``) go into the JSON error the client sees,
    the message into the broker's log."""

    def __init__(self, message: str, status: str = INVALID_TOKEN,
                 scope: str | None = None) -> None:
        super().__init__(message)
        self.status = status
        self.scope = scope


@runtime_checkable
class OAuthBearerValidator(Protocol):
    """What ``sasl.server.callback.handler.class`` names: built as ``Class(options)`` with
    the listener's JAAS options, then asked about each token a client presents."""

    def validate(self, token: str, now_ms: int) -> OAuthBearerToken:
        """The token's principal and lifetime; OAuthBearerValidationError to refuse it."""
        ...


class UnsecuredValidator:
    """Kafka's OAuthBearerUnsecuredValidatorCallbackHandler."""

    def __init__(self, options: Mapping[str, str]) -> None:
        self.principal_claim = options.get("unsecuredValidatorPrincipalClaimName",
                                           "").strip() or "sub"
        self.scope_claim = options.get("unsecuredValidatorScopeClaimName", "").strip() or "scope"
        self.required_scope = frozenset(
            options.get("unsecuredValidatorRequiredScope", "").split())
        skew = options.get("unsecuredValidatorAllowableClockSkewMs", "").strip() or "0"
        try:
            self.allowable_clock_skew_ms = int(skew)
        except ValueError:
            raise ConfigError("unsecuredValidatorAllowableClockSkewMs",
                              f"{skew!r} is not a whole number of milliseconds") from None
        if self.allowable_clock_skew_ms < 0:
            raise ConfigError("unsecuredValidatorAllowableClockSkewMs", "must not be negative")

    def validate(self, token: str, now_ms: int) -> OAuthBearerToken:
        try:
            header, claims = decode_unsecured_token(token)
        except OAuthBearerFormatError as exc:
            raise OAuthBearerValidationError(str(exc)) from None
        if header.get("alg") != "none":
            raise OAuthBearerValidationError(
                f"the token is signed ({header.get('alg')!r}); this validator takes only "
                "unsecured tokens (alg none)")
        if not token.endswith("."):
            raise OAuthBearerValidationError("an unsecured token must not carry a signature")
        principal = claims.get(self.principal_claim)
        if not isinstance(principal, str) or not principal.strip():
            raise OAuthBearerValidationError(
                f"the token has no string {self.principal_claim!r} claim")
        expires = _number(claims, "exp")
        if expires is None:
            raise OAuthBearerValidationError("the token has no numeric 'exp' claim")
        skew = self.allowable_clock_skew_ms
        if now_ms - skew >= expires * 1000:
            raise OAuthBearerValidationError("the token has expired")
        issued = _number(claims, "iat")
        if issued is not None:
            if issued * 1000 > now_ms + skew:
                raise OAuthBearerValidationError("the token is issued in the future")
            if expires <= issued:
                raise OAuthBearerValidationError("the token expires before it is issued")
        scope = _scope(claims.get(self.scope_claim))
        missing = self.required_scope - scope
        if missing:
            raise OAuthBearerValidationError(
                f"the token's scope lacks {' '.join(sorted(missing))}", INSUFFICIENT_SCOPE,
                " ".join(sorted(self.required_scope)))
        return OAuthBearerToken(principal, int(expires * 1000), scope)


def _number(claims: Mapping[str, Any], name: str) -> float | None:
    value = claims.get(name)
    if name in claims and (isinstance(value, bool) or not isinstance(value, int | float)):
        raise OAuthBearerValidationError(f"the token's {name!r} claim is not a number")
    return value


def _scope(value: Any) -> frozenset[str]:
    if value is None:
        return frozenset()
    if isinstance(value, str):
        return frozenset(value.split())
    if isinstance(value, list) and all(isinstance(item, str) for item in value):
        return frozenset(value)
    raise OAuthBearerValidationError("the token's scope claim is neither a string nor a list "
                                     "of strings")


def load_validator(key: str, class_path: str | None,
                   options: Mapping[str, str]) -> OAuthBearerValidator:
    """The validator a listener uses: the class ``class_path`` (``module:Class``, set by
    ``key``) if given, else :class:`UnsecuredValidator`; ConfigError naming ``key`` when the
    class cannot be loaded or is not a validator."""
    if class_path is None or not class_path.strip():
        return UnsecuredValidator(options)
    module_name, colon, class_name = class_path.strip().partition(":")
    if not colon or not module_name or not class_name:
        raise ConfigError(key, f"{class_path!r} is not 'module:Class'")
    try:
        cls = getattr(importlib.import_module(module_name), class_name)
    except (ImportError, AttributeError) as exc:
        raise ConfigError(key, f"cannot load {class_path!r}: {exc}") from None
    validator = cls(options)
    if not isinstance(validator, OAuthBearerValidator):
        raise ConfigError(key, f"{class_path!r} has no validate(token, now_ms) method")
    return validator


class UnsecuredLoginTokens:
    """Kafka's OAuthBearerUnsecuredLoginCallbackHandler: the tokens a broker logs in to the
    others with when ``sasl.mechanism.inter.broker.protocol=OAUTHBEARER``, from the options
    of its JAAS entry: ``unsecuredLoginStringClaim_<name>="value"`` (``sub`` is required),
    ``unsecuredLoginNumberClaim_<name>``, ``unsecuredLoginListClaim_<name>`` (the value's
    first character separates the items), and ``unsecuredLoginLifetimeSeconds`` (3600). A
    fresh token is made at every login."""

    def __init__(self, key: str, options: Mapping[str, str],
                 now_s: Callable[[], float] = time.time) -> None:
        self._now_s = now_s
        self._claims: dict[str, object] = {}
        for option, value in options.items():
            kind, _, name = option.partition("Claim_")
            if not name:
                continue
            if kind == "unsecuredLoginString":
                self._claims[name] = value
            elif kind == "unsecuredLoginNumber":
                try:
                    self._claims[name] = float(value) if "." in value else int(value)
                except ValueError:
                    raise ConfigError(key, f"{option} is not a number: {value!r}") from None
            elif kind == "unsecuredLoginList":
                self._claims[name] = [item for item in value[1:].split(value[:1]) if item] \
                    if value else []
        if not isinstance(self._claims.get("sub"), str) or not self._claims["sub"]:
            raise ConfigError(key, "an OAUTHBEARER login needs unsecuredLoginStringClaim_sub "
                                   "(the broker's principal) in its JAAS entry")
        lifetime = options.get("unsecuredLoginLifetimeSeconds", "3600")
        try:
            self._lifetime_s = int(lifetime)
        except ValueError:
            raise ConfigError(key, f"unsecuredLoginLifetimeSeconds is not a whole number: "
                                   f"{lifetime!r}") from None

    def token(self) -> str:
        now = int(self._now_s())
        return unsecured_token({**self._claims, "iat": now, "exp": now + self._lifetime_s})
