"""ACLs and SCRAM credentials of a standalone broker (or of an EmbeddedCluster sharing one
controller), in the metadata directory next to ``cluster-metadata.json``.

``security-metadata.json`` (written atomically, like the metadata image)::

    {"version": 1,
     "acls": [{"resource_type": "TOPIC", "name": "orders", "pattern": "LITERAL",
               "principal": "User:alice", "host": "*", "operation": "WRITE",
               "permission": "ALLOW"}, ...],
     "scram": {"alice": {"SCRAM-SHA-256": "salt=...,stored_key=...,server_key=...,
                                           iterations=4096"}},
     "scram_decoy_secret": "<base64>"}

``scram_decoy_secret`` (made at the first SCRAM login of an unknown user) keeps the decoy
salts offered to unknown users the same across restarts: a salt that changed with every
restart would tell an unknown user from a real one.

Persist before apply: each change builds the new state, saves it, and only then replaces
the one in memory, so a failed save (a full disk) changes nothing.
"""

from __future__ import annotations

import base64
import json
import secrets
from pathlib import Path

from kafkalite.protocol.scram import ScramCredential, ScramError
from kafkalite_server.cluster.image import MetadataFileError, write_atomically
from kafkalite_server.security.acls import AclBinding

SECURITY_FILE = "security-metadata.json"
_FORMAT_VERSION = 1
DECOY_SECRET_BYTES = 32

Credentials = dict[str, dict[str, ScramCredential]]


class FileSecurityStore:
    def __init__(self, directory: Path) -> None:
        self.path = directory / SECURITY_FILE
        self._acls: list[AclBinding] = []
        self._scram: Credentials = {}
        self._decoy_secret: bytes | None = None
        if self.path.exists():
            self._load()

    def _load(self) -> None:
        try:
            raw = json.loads(self.path.read_text(encoding="utf-8"))
            self._acls = [AclBinding.from_json(entry) for entry in raw["acls"]]
            self._scram = {user: {mechanism: ScramCredential.from_text(text)
                                  for mechanism, text in mechanisms.items()}
                           for user, mechanisms in raw["scram"].items()}
            secret = raw.get("scram_decoy_secret")
            self._decoy_secret = None if secret is None else base64.b64decode(secret)
        except (OSError, ValueError, KeyError, TypeError, ScramError) as exc:
            raise MetadataFileError(f"{self.path}: {exc!r}") from None

    def _save(self, acls: list[AclBinding], scram: Credentials,
              decoy_secret: bytes | None) -> None:
        document: dict[str, object] = {
            "version": _FORMAT_VERSION,
            "acls": [binding.to_json() for binding in acls],
            "scram": {user: {mechanism: credential.to_text()
                             for mechanism, credential in sorted(mechanisms.items())}
                      for user, mechanisms in sorted(scram.items())},
        }
        if decoy_secret is not None:
            document["scram_decoy_secret"] = base64.b64encode(decoy_secret).decode("ascii")
        write_atomically(self.path, json.dumps(document, indent=1).encode())
        self._acls, self._scram, self._decoy_secret = acls, scram, decoy_secret

    # ------------------------------------------------------------------ ACLs

    def acls(self) -> list[AclBinding]:
        return self._acls

    def add_acls(self, bindings: list[AclBinding]) -> None:
        new = [b for b in dict.fromkeys(bindings) if b not in self._acls]
        if new:
            self._save(self._acls + new, self._scram, self._decoy_secret)

    def remove_acls(self, bindings: list[AclBinding]) -> None:
        gone = set(bindings)
        if gone & set(self._acls):
            self._save([b for b in self._acls if b not in gone], self._scram,
                       self._decoy_secret)

    # ------------------------------------------------------------------ SCRAM

    def credentials(self) -> Credentials:
        return self._scram

    def alter_credentials(self, upserts: list[tuple[str, str, ScramCredential]],
                          deletions: list[tuple[str, str]]) -> None:
        scram = {user: dict(mechanisms) for user, mechanisms in self._scram.items()}
        for user, mechanism in deletions:
            scram.get(user, {}).pop(mechanism, None)
        for user, mechanism, credential in upserts:
            scram.setdefault(user, {})[mechanism] = credential
        self._save(self._acls, {user: m for user, m in scram.items() if m},
                   self._decoy_secret)

    def scram_decoy_secret(self) -> bytes:
        if self._decoy_secret is None:
            self._save(self._acls, self._scram, secrets.token_bytes(DECOY_SECRET_BYTES))
        assert self._decoy_secret is not None
        return self._decoy_secret
