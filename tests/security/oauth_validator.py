"""A validator plugged in through ``sasl.server.callback.handler.class`` by the tests:
opaque tokens ``<secret>.<user>``, accepted when the secret is the JAAS option ``secret``."""

from __future__ import annotations

from collections.abc import Mapping

from kafkalite_server.security.oauthbearer import OAuthBearerToken, OAuthBearerValidationError

LIFETIME_MS = 60_000


class SharedSecretValidator:
    def __init__(self, options: Mapping[str, str]) -> None:
        self.secret = options["secret"]

    def validate(self, token: str, now_ms: int) -> OAuthBearerToken:
        secret, _, user = token.partition(".")
        if secret != self.secret or not user:
            raise OAuthBearerValidationError("not signed with the shared secret")
        return OAuthBearerToken(user, now_ms + LIFETIME_MS)
