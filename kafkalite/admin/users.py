"""SCRAM users: DescribeUserScramCredentials and AlterUserScramCredentials (KIP-554),
answered by any broker. Passwords are salted and iterated here (PBKDF2); only the salted
password goes over the wire.
"""

from __future__ import annotations

import enum
import secrets
from collections.abc import Mapping, Sequence
from typing import Any

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import AnyBroker
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import error_for_code
from kafkalite.protocol.scram import salted_password


class ScramMechanism(enum.IntEnum):
    """SCRAM mechanisms by their wire codes (kafka-python's names)."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")


def scram_mechanism(value: ScramMechanism | str | int) -> ScramMechanism:
    """A mechanism by member, name (``"SCRAM-SHA-256"``, any case) or wire code."""
    if isinstance(value, str):
        mechanism = ScramMechanism[value.upper().replace("-", "_")]
    else:
        mechanism = ScramMechanism(value)
    if mechanism is ScramMechanism.UNKNOWN:
        raise ValueError("the SCRAM mechanism must not be UNKNOWN")
    return mechanism


class UserScramCredentialDeletion:
    """Remove ``user``'s credential for ``mechanism`` (alter_user_scram_credentials)."""

    def __init__(self, user: str, mechanism: ScramMechanism | str | int) -> None:
        self.user = user
        self.mechanism = scram_mechanism(mechanism)


class UserScramCredentialUpsertion:
    """Set ``user``'s credential for ``mechanism``: the password is salted and iterated
    here (PBKDF2), only the salted password goes to the broker."""

    DEFAULT_ITERATIONS = 4096

    def __init__(self, user: str, mechanism: ScramMechanism | str | int,
                 password: str | bytes, iterations: int | None = None,
                 salt: bytes | None = None) -> None:
        self.user = user
        self.mechanism = scram_mechanism(mechanism)
        self.iterations = iterations or self.DEFAULT_ITERATIONS
        self.salt = salt if salt is not None else secrets.token_bytes(24)
        text = password.decode("utf-8") if isinstance(password, bytes) else password
        self.salted_password = salted_password(self.mechanism.mechanism_name, text, self.salt,
                                               self.iterations)


Alteration = UserScramCredentialDeletion | UserScramCredentialUpsertion
UserKey = tuple[str, ...] | None
"""The users to describe (None: every user with a credential)."""


class DescribeUserScramCredentials(AdminApiHandler[UserKey, dict[str, dict[str, Any]]]):
    """``{user: {"error": None or message, "credential_infos": [{"mechanism",
    "iterations"}]}}``; a refusal of the whole request raises."""

    api_key = ApiKey.DESCRIBE_USER_SCRAM_CREDENTIALS

    def __init__(self) -> None:
        super().__init__(AnyBroker())

    def build_request(self, node: int, keys: Sequence[UserKey]) -> Request:
        (users,) = keys
        return Request(self.api_key,
                       {"users": None if users is None else [{"name": u} for u in users]})

    def handle_response(self, node: int, keys: Sequence[UserKey], body: Mapping[str, Any],
                        ) -> ApiResult[UserKey, dict[str, dict[str, Any]]]:
        (users,) = keys
        outcome: ApiResult[UserKey, dict[str, dict[str, Any]]] = ApiResult()
        if not outcome.error(users, body["error_code"], "describe_user_scram_credentials",
                             body["error_message"]):
            outcome.complete(users, {
                r["user"]: {"error": r["error_message"] if r["error_code"] else None,
                            "credential_infos": [
                                {"mechanism": ScramMechanism(c["mechanism"]),
                                 "iterations": c["iterations"]}
                                for c in r["credential_infos"]]}
                for r in body["results"]})
        return outcome


class AlterUserScramCredentials(AdminApiHandler[str, str | None]):
    """Each user's outcome: None, or the broker's error message (the keys are users)."""

    api_key = ApiKey.ALTER_USER_SCRAM_CREDENTIALS

    def __init__(self, alterations: Sequence[Alteration]) -> None:
        super().__init__(AnyBroker())
        self.alterations = alterations

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        wanted = [a for a in self.alterations if a.user in set(keys)]
        return Request(self.api_key, {
            "deletions": [{"name": a.user, "mechanism": a.mechanism} for a in wanted
                          if isinstance(a, UserScramCredentialDeletion)],
            "upsertions": [{"name": a.user, "mechanism": a.mechanism,
                            "iterations": a.iterations, "salt": a.salt,
                            "salted_password": a.salted_password} for a in wanted
                           if isinstance(a, UserScramCredentialUpsertion)]})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, str | None]:
        outcome: ApiResult[str, str | None] = ApiResult()
        for r in body["results"]:
            code = r["error_code"]
            if not outcome.routed(r["user"], code, f"changing the credentials of {r['user']!r}"):
                outcome.complete(r["user"], (r["error_message"] or error_for_code(code).message)
                                 if code else None)
        return outcome
