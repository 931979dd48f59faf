"""ACLs and SCRAM credentials, in the coordination store, in Kafka's ZooKeeper layout.

Every deployment keeps them the same way: a ZooKeeper cluster in ZooKeeper, an
EmbeddedCluster in its in-memory store, a standalone broker in its local store.

- literal ACLs: ``/kafka-acl/<Topic|Group|Cluster|TransactionalId>/<name>``;
- prefixed ACLs: ``/kafka-acl-extended/prefixed/<type>/<name>``;
  each node ``{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",
  "operation":"Read","host":"*"}]}``;
- SCRAM credentials: ``/config/users/<user>``,
  ``{"version":1,"config":{"SCRAM-SHA-256":"salt=...,stored_key=...,server_key=...,
  iterations=4096"}}``.

- the secret behind SCRAM's decoys for unknown users (kafkalite's own node):
  ``/kafkalite/scram_decoy_secret``, made by the first broker that needs it, so every
  broker offers an unknown user the same salt.

Every broker caches what it read, first at start (:meth:`BrokerSecurity.load`, on the
coordination worker); a write bumps ``/kafka-acl-changes`` (ACLs) or ``/config/changes``
(users), whose watches tell every broker to read again. The writing broker reads again
right after its write, on the worker; a watch fires on the coordination thread and only
marks the cache stale, which is then read again at the next use. Writes are conditional on
the node's version and retried on a conflict.
"""

from __future__ import annotations

import contextlib
import functools
import json
import logging
import secrets
from collections.abc import Callable
from urllib.parse import quote, unquote

from kafkalite.protocol.scram import ScramCredential
from kafkalite_server.cluster.config_nodes import (
    RETRIES,
    alter_config_node,
    config_document,
    config_of,
)
from kafkalite_server.cluster.coordination import (
    BadVersionError,
    Coordination,
    NodeExistsError,
    NoNodeError,
    WatchEvent,
)
from kafkalite_server.security.acls import (
    AclBinding,
    AclOperation,
    AclPermission,
    PatternType,
    ResourceType,
)

log = logging.getLogger(__name__)

LITERAL_ACLS = "/kafka-acl"
PREFIXED_ACLS = "/kafka-acl-extended/prefixed"
ACL_CHANGES = "/kafka-acl-changes"
USERS = "/config/users"
CONFIG_CHANGES = "/config/changes"
SCRAM_DECOY_SECRET = "/kafkalite/scram_decoy_secret"
DECOY_SECRET_BYTES = 32

Credentials = dict[str, dict[str, ScramCredential]]
"""user -> mechanism -> credential."""
_TYPE_NAMES = {ResourceType.TOPIC: "Topic", ResourceType.GROUP: "Group",
               ResourceType.CLUSTER: "Cluster", ResourceType.TRANSACTIONAL_ID: "TransactionalId",
               ResourceType.USER: "User"}
_TYPES = {name: kind for kind, name in _TYPE_NAMES.items()}


def _camel(name: str) -> str:
    return "".join(part.capitalize() for part in name.split("_"))


_OPERATIONS = {_camel(op.name): op for op in AclOperation}
_PERMISSIONS = {_camel(p.name): p for p in AclPermission}


def _node(binding: AclBinding) -> str:
    root = LITERAL_ACLS if binding.pattern is PatternType.LITERAL else PREFIXED_ACLS
    return f"{root}/{_TYPE_NAMES[binding.resource_type]}/{quote(binding.name, safe='')}"


def _entry(binding: AclBinding) -> dict[str, str]:
    return {"principal": binding.principal, "permissionType": _camel(binding.permission.name),
            "operation": _camel(binding.operation.name), "host": binding.host}


def acl_nodes(bindings: list[AclBinding]) -> dict[str, bytes]:
    """The ACL nodes holding ``bindings``, as documents (for a store written at once)."""
    by_node: dict[str, list[dict[str, str]]] = {}
    for binding in bindings:
        entries = by_node.setdefault(_node(binding), [])
        if _entry(binding) not in entries:
            entries.append(_entry(binding))
    return {path: _acls_document(entries) for path, entries in by_node.items()}


def user_path(user: str) -> str:
    return f"{USERS}/{quote(user, safe='')}"


def user_document(credentials: dict[str, str]) -> bytes:
    """``/config/users/<user>``: mechanism -> credential text."""
    return config_document(credentials)


def _acls_document(entries: list[dict[str, str]]) -> bytes:
    return json.dumps({"version": 1, "acls": entries}).encode()


def _with_entries(added: list[dict[str, str]],
                  entries: list[dict[str, str]]) -> list[dict[str, str]]:
    """``entries`` plus those of ``added`` not already there (adding an ACL twice is a no-op)."""
    return entries + [e for e in added if e not in entries]


def _without_entries(removed: list[dict[str, str]],
                     entries: list[dict[str, str]]) -> list[dict[str, str]]:
    return [e for e in entries if e not in removed]


class SecurityStore:
    def __init__(self, store: Callable[[], Coordination]) -> None:
        self._store = store
        self._acls: list[AclBinding] | None = None
        self._scram: Credentials | None = None
        self._decoy_secret: bytes | None = None

    # ------------------------------------------------------------------ ACLs

    def acls(self) -> list[AclBinding]:
        if self._acls is None:
            store = self._store()
            store.ensure_path(ACL_CHANGES)
            store.exists(ACL_CHANGES, self._acls_changed)
            self._acls = self._read_acls(store)
        return self._acls

    def _acls_changed(self, _event: WatchEvent) -> None:
        self._acls = None

    def _read_acls(self, store: Coordination) -> list[AclBinding]:
        found = []
        for root, pattern in ((LITERAL_ACLS, PatternType.LITERAL),
                              (PREFIXED_ACLS, PatternType.PREFIXED)):
            for type_name, kind in _TYPES.items():
                parent = f"{root}/{type_name}"
                try:
                    names = store.children(parent)
                except NoNodeError:
                    continue
                for name in names:
                    try:
                        data, _stat = store.get(f"{parent}/{name}")
                    except NoNodeError:
                        continue
                    for entry in json.loads(data.decode())["acls"]:
                        found.append(AclBinding(
                            kind, unquote(name), pattern, entry["principal"], entry["host"],
                            _OPERATIONS[entry["operation"]],
                            _PERMISSIONS[entry["permissionType"]]))
        return found

    def add_acls(self, bindings: list[AclBinding]) -> None:
        self._edit_acls(bindings, add=True)

    def remove_acls(self, bindings: list[AclBinding]) -> None:
        self._edit_acls(bindings, add=False)

    def _edit_acls(self, bindings: list[AclBinding], *, add: bool) -> None:
        store = self._store()
        by_node: dict[str, list[AclBinding]] = {}
        for binding in bindings:
            by_node.setdefault(_node(binding), []).append(binding)
        for path, group in by_node.items():
            self._update(store, path, functools.partial(
                _with_entries if add else _without_entries, [_entry(b) for b in group]))
        self._notify(store, ACL_CHANGES)
        self._acls = None
        self.acls()  # read again here (off the event loop), not at the next request

    # ------------------------------------------------------------------ SCRAM

    def credentials(self) -> Credentials:
        if self._scram is None:
            store = self._store()
            store.ensure_path(CONFIG_CHANGES)
            store.exists(CONFIG_CHANGES, self._users_changed)
            scram: Credentials = {}
            with contextlib.suppress(NoNodeError):
                for user in store.children(USERS):
                    try:
                        data, _stat = store.get(f"{USERS}/{user}")
                    except NoNodeError:
                        continue
                    try:
                        configs = config_of(data)
                    except ValueError:
                        log.error("%s/%s is not a config node; its credentials are ignored",
                                  USERS, user)
                        continue
                    mechanisms = {m: ScramCredential.from_text(text)
                                  for m, text in configs.items() if m.startswith("SCRAM-")}
                    if mechanisms:
                        scram[unquote(user)] = mechanisms
            self._scram = scram
        return self._scram

    def _users_changed(self, _event: WatchEvent) -> None:
        self._scram = None

    def alter_credentials(self, upserts: list[tuple[str, str, ScramCredential]],
                          deletions: list[tuple[str, str]]) -> None:
        store = self._store()
        users = {user for user, _ in deletions} | {user for user, _, _ in upserts}
        for user in users:
            removed = {m for u, m in deletions if u == user}
            added = {m: c.to_text() for u, m, c in upserts if u == user}
            self._update_user(store, user_path(user), removed, added)
        self._notify(store, CONFIG_CHANGES)
        self._scram = None
        self.credentials()  # read again here (off the event loop), not at the next login

    def scram_decoy_secret(self) -> bytes:
        """Read once (it never changes); the first broker to need it creates it."""
        if self._decoy_secret is None:
            store = self._store()
            store.ensure_path(SCRAM_DECOY_SECRET.rsplit("/", 1)[0])
            with contextlib.suppress(NodeExistsError):
                store.create(SCRAM_DECOY_SECRET, secrets.token_bytes(DECOY_SECRET_BYTES))
            self._decoy_secret, _stat = store.get(SCRAM_DECOY_SECRET)
        return self._decoy_secret

    # ------------------------------------------------------------------ writes

    @staticmethod
    def _update(store: Coordination, path: str,
                change: Callable[[list[dict[str, str]]], list[dict[str, str]]]) -> None:
        for _attempt in range(RETRIES):
            try:
                data, stat = store.get(path)
            except NoNodeError:
                entries = change([])
                if not entries:
                    return
                store.ensure_path(path.rsplit("/", 1)[0])
                try:
                    store.create(path, _acls_document(entries))
                    return
                except NodeExistsError:
                    continue
            entries = change(json.loads(data.decode())["acls"])
            try:
                if entries:
                    store.set(path, _acls_document(entries), stat.version)
                else:
                    store.delete(path, stat.version)
                return
            except (BadVersionError, NoNodeError):
                continue
        raise BadVersionError(f"{path}: too many concurrent changes")

    @staticmethod
    def _update_user(store: Coordination, path: str, removed: set[str],
                     added: dict[str, str]) -> None:
        alter_config_node(store, path, lambda config: {
            k: v for k, v in config.items() if k not in removed} | added)

    @staticmethod
    def _notify(store: Coordination, path: str) -> None:
        store.ensure_path(path)
        data, _stat = store.get(path)
        store.set(path, str(int(data or b"0") + 1).encode())

