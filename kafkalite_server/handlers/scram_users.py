"""DescribeUserScramCredentials (50) and AlterUserScramCredentials (51).

Describing SCRAM users needs Describe on the Cluster, changing them Alter
(CLUSTER_AUTHORIZATION_FAILED otherwise), as in Kafka. The client sends a salt and the
salted password (never the password); the broker keeps salt, StoredKey, ServerKey and the
iteration count (Kafka's bounds: 4096-16384), persisted before they take effect. Each user
succeeds or fails on its own: a user named twice for one mechanism is DUPLICATE_RESOURCE,
an unknown mechanism UNSUPPORTED_SASL_MECHANISM, deleting a credential that does not exist
RESOURCE_NOT_FOUND.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    DuplicateResourceError,
    ResourceNotFoundError,
    UnacceptableCredentialError,
    UnsupportedSaslMechanismError,
)
from kafkalite.protocol.scram import (
    MAX_ITERATIONS,
    MECHANISM_CODES,
    MIN_ITERATIONS,
    ScramCredential,
)
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import ALTER_CLUSTER, DESCRIBE_CLUSTER, declares

_MECHANISM_NAMES = {code: name for name, code in MECHANISM_CODES.items()}


@declares(DESCRIBE_CLUSTER)
async def handle_describe_user_scram_credentials(ctx: RequestContext,
                                                 body: dict[str, Any]) -> dict[str, Any]:
    response: dict[str, Any] = {"throttle_time_ms": 0, "error_code": 0,
                                "error_message": None, "results": []}
    if not DESCRIBE_CLUSTER.allows(ctx):
        return {**response, "error_code": DESCRIBE_CLUSTER.error.errno}
    stored = ctx.broker.security.store.credentials()
    wanted = [entry["name"] for entry in body["users"] or ()] or sorted(stored)
    counts: dict[str, int] = {}
    for user in wanted:
        counts[user] = counts.get(user, 0) + 1
    for user in dict.fromkeys(wanted):
        if counts[user] > 1:
            response["results"].append({"user": user, "error_code": DuplicateResourceError.errno,
                                        "error_message": "user named twice",
                                        "credential_infos": []})
        elif user not in stored:
            response["results"].append({"user": user, "error_code": ResourceNotFoundError.errno,
                                        "error_message": "no SCRAM credentials for the user",
                                        "credential_infos": []})
        else:
            response["results"].append({
                "user": user, "error_code": 0, "error_message": None,
                "credential_infos": [{"mechanism": MECHANISM_CODES[m],
                                      "iterations": c.iterations}
                                     for m, c in sorted(stored[user].items())]})
    return response


@declares(ALTER_CLUSTER)
async def handle_alter_user_scram_credentials(ctx: RequestContext,
                                              body: dict[str, Any]) -> dict[str, Any]:
    deletions = body["deletions"]
    upsertions = body["upsertions"]
    users = list(dict.fromkeys([d["name"] for d in deletions] + [u["name"] for u in upsertions]))
    if not ALTER_CLUSTER.allows(ctx):
        return {"throttle_time_ms": 0, "results": [
            {"user": user, "error_code": ALTER_CLUSTER.error.errno,
             "error_message": None} for user in users]}
    store = ctx.broker.security.store
    stored = store.credentials()
    errors: dict[str, tuple[int, str]] = {}
    seen: set[tuple[str, int]] = set()
    for entry in [*deletions, *upsertions]:
        key = (entry["name"], entry["mechanism"])
        if key in seen:
            errors.setdefault(entry["name"], (DuplicateResourceError.errno,
                                              "a user and mechanism appear twice"))
        seen.add(key)
        if entry["mechanism"] not in _MECHANISM_NAMES:
            errors.setdefault(entry["name"], (UnsupportedSaslMechanismError.errno,
                                              f"unknown SCRAM mechanism {entry['mechanism']}"))
        if not entry["name"]:
            errors.setdefault(entry["name"], (UnacceptableCredentialError.errno,
                                              "the user name is empty"))
    for entry in deletions:
        mechanism = _MECHANISM_NAMES.get(entry["mechanism"])
        if mechanism is not None and mechanism not in stored.get(entry["name"], {}):
            errors.setdefault(entry["name"], (ResourceNotFoundError.errno,
                                              f"no {mechanism} credential to delete"))
    upserts = []
    for entry in upsertions:
        mechanism = _MECHANISM_NAMES.get(entry["mechanism"])
        if not MIN_ITERATIONS <= entry["iterations"] <= MAX_ITERATIONS:
            errors.setdefault(entry["name"], (UnacceptableCredentialError.errno,
                                              f"iterations must be in [{MIN_ITERATIONS}, "
                                              f"{MAX_ITERATIONS}]"))
        elif not entry["salted_password"] or not entry["salt"]:
            errors.setdefault(entry["name"], (UnacceptableCredentialError.errno,
                                              "empty salt or salted password"))
        elif mechanism is not None:
            upserts.append((entry["name"], mechanism, ScramCredential.from_salted_password(
                mechanism, bytes(entry["salt"]),
                bytes(entry["salted_password"]), entry["iterations"])))
    upserts = [u for u in upserts if u[0] not in errors]
    removals = [(d["name"], _MECHANISM_NAMES[d["mechanism"]]) for d in deletions
                if d["name"] not in errors]
    try:
        if upserts or removals:
            await ctx.broker.security.alter_credentials(upserts, removals)
    except BrokerResponseError as exc:
        for user in users:
            errors.setdefault(user, (exc.errno, exc.context))
    return {"throttle_time_ms": 0, "results": [
        {"user": user, "error_code": errors.get(user, (0, None))[0],
         "error_message": errors.get(user, (0, None))[1]} for user in users]}
