"""A broker's security: who may log in on each listener, and what each principal may do.

Built once from the broker config (every inconsistency is a ConfigError naming the key):
the SASL mechanisms and PLAIN users of each SASL listener (``sasl.enabled.mechanisms``,
JAAS ``user_<name>="<password>"`` options from
``listener.name.<listener>.plain.sasl.jaas.config`` or ``sasl.jaas.config``), the
OAUTHBEARER validator of each listener (:mod:`.oauthbearer`), each mechanism's
``connections.max.reauth.ms`` (KIP-368), and the authorizer (on when ``authorizer.class.name`` is non-empty) with ``super.users`` and
``allow.everyone.if.no.acl.found``. ACLs and SCRAM credentials live in the cluster's
coordination store, in Kafka's ZooKeeper layout (:mod:`.security_store`), whatever the
deployment.

An authorizer whose ``super.users`` names User:ANONYMOUS while a listener lets clients in
without proving who they are (PLAINTEXT, or SSL without ``ssl.client.auth=required``) hands
the whole cluster to anyone who reaches that listener: the broker logs an ERROR and refuses
to start, unless ``kafkalite.allow.anonymous.super.user=true`` says the operator means it.
"""

from __future__ import annotations

import logging
import time

from kafkalite.errors import ConfigError
from kafkalite.protocol.sasl_oauthbearer import MECHANISM as OAUTHBEARER
from kafkalite.protocol.scram import MECHANISMS as SCRAM_MECHANISMS
from kafkalite.protocol.scram import ScramCredential, decoy_credential
from kafkalite_server.cluster.store_worker import StoreWorker
from kafkalite_server.config import LISTENER_PREFIX, BrokerConfig, listener_value
from kafkalite_server.config_values import integer
from kafkalite_server.network.listeners import Listener, authenticates
from kafkalite_server.security.acls import (
    AclBinding,
    AclOperation,
    AuthorizerSettings,
    Resource,
    ResourceType,
    authorize,
    authorize_any,
)
from kafkalite_server.security.authenticator import SaslAuthenticator
from kafkalite_server.security.jaas import JaasEntry, parse_jaas
from kafkalite_server.security.oauthbearer import OAuthBearerValidator, load_validator
from kafkalite_server.security.security_store import SecurityStore

log = logging.getLogger(__name__)

SUPPORTED_MECHANISMS = ("PLAIN", *SCRAM_MECHANISMS, OAUTHBEARER)
ANONYMOUS = "User:ANONYMOUS"
ALLOW_ANONYMOUS_SUPER_USER = "kafkalite.allow.anonymous.super.user"


def check_anonymous_super_user(config: BrokerConfig, listeners: list[Listener],
                               super_users: frozenset[str]) -> None:
    """Logs an ERROR, and raises ConfigError naming :data:`ALLOW_ANONYMOUS_SUPER_USER` unless
    it is true, when User:ANONYMOUS is a super user and some listener does not authenticate
    its clients."""
    if ANONYMOUS not in super_users:
        return
    open_listeners = [listener.name for listener in listeners
                      if not authenticates(config, listener)]
    if not open_listeners:
        return
    risk = (f"super.users names {ANONYMOUS} while listener(s) {', '.join(open_listeners)} let "
            f"clients in as {ANONYMOUS} (no SASL, no required client certificate): anyone who "
            "reaches them passes every authorization check, may change any ACL or password, "
            "delete any record and send the controller's requests")
    log.error("%s", risk)
    if not config.kafkalite_allow_anonymous_super_user:
        raise ConfigError(ALLOW_ANONYMOUS_SUPER_USER,
                          f"{risk}; authenticate the brokers instead (docs/security.md), or "
                          "set this to true to start anyway")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _max_reauth_ms(config: BrokerConfig, listener: str, mechanism: str) -> int:
    """``listener.name.<l>.<mechanism>.connections.max.reauth.ms``, else the broker's."""
    setting = f"{mechanism.lower()}.connections.max.reauth.ms"
    text = listener_value(config, listener, setting)
    if text is None:
        return config.connections_max_reauth_ms
    return integer(0)(f"{LISTENER_PREFIX}{listener.lower()}.{setting}", text)


def _jaas_entry(config: BrokerConfig, listener: str, mechanism: str,
                module: str) -> tuple[str, JaasEntry | None]:
    """The JAAS entry a mechanism reads on a listener, and the key it came from:
    ``listener.name.<l>.<mechanism>.sasl.jaas.config``, else ``sasl.jaas.config`` when its
    login module is ``module``."""
    setting = f"{mechanism.lower()}.sasl.jaas.config"
    key = f"{LISTENER_PREFIX}{listener.lower()}.{setting}"
    text = listener_value(config, listener, setting)
    if text is None:
        key, text = "sasl.jaas.config", config.sasl_jaas_config
        if text is None:
            return key, None
        entry = parse_jaas(key, text)
        return key, entry if entry.module.endswith(module) else None
    return key, parse_jaas(key, text)


class BrokerSecurity:
    def __init__(self, config: BrokerConfig, listeners: list[Listener],
                 store: SecurityStore, worker: StoreWorker) -> None:
        """Changes to ``store`` run on ``worker`` (the broker's coordination worker): a
        write waits for the coordination store (a ZooKeeper round trip, an fsync of the
        local store), which the event loop must not."""
        self.store = store
        self._worker = worker
        self.authorizer_enabled = bool(config.authorizer_class_name.strip())
        self.settings = AuthorizerSettings(
            frozenset(user.strip() for user in config.super_users.split(";") if user.strip()),
            config.allow_everyone_if_no_acl_found)
        if self.authorizer_enabled:
            check_anonymous_super_user(config, listeners, self.settings.super_users)
        self._mechanisms: dict[str, tuple[str, ...]] = {}
        self._plain_users: dict[str, dict[str, str]] = {}
        self._oauthbearer: dict[str, OAuthBearerValidator] = {}
        self._max_reauth_ms: dict[str, dict[str, int]] = {}
        for listener in listeners:
            if listener.uses_sasl:
                self._configure_sasl(config, listener.name)

    def _configure_sasl(self, config: BrokerConfig, name: str) -> None:
        mechanisms = tuple(listener_value(config, name, "sasl.enabled.mechanisms"))
        unknown = [m for m in mechanisms if m not in SUPPORTED_MECHANISMS]
        if unknown or not mechanisms:
            raise ConfigError("sasl.enabled.mechanisms",
                              f"{', '.join(unknown) or 'nothing'} on listener {name}: "
                              f"kafkalite supports {', '.join(SUPPORTED_MECHANISMS)}")
        self._mechanisms[name] = mechanisms
        self._max_reauth_ms[name] = {
            mechanism: _max_reauth_ms(config, name, mechanism) for mechanism in mechanisms}
        if "PLAIN" in mechanisms:
            key, entry = _jaas_entry(config, name, "PLAIN", "PlainLoginModule")
            users = {} if entry is None else entry.plain_users()
            if not users:
                raise ConfigError(key, f"PLAIN on listener {name} needs a PlainLoginModule "
                                       'entry with user_<name>="<password>" options')
            self._plain_users[name] = users
        if OAUTHBEARER in mechanisms:
            _key, entry = _jaas_entry(config, name, OAUTHBEARER, "OAuthBearerLoginModule")
            setting = f"{OAUTHBEARER.lower()}.sasl.server.callback.handler.class"
            self._oauthbearer[name] = load_validator(
                f"{LISTENER_PREFIX}{name.lower()}.{setting}",
                listener_value(config, name, setting), {} if entry is None else entry.options)

    async def load(self) -> None:
        """Reads what requests will ask (the ACLs, the SCRAM credentials and the decoy
        secret, made here if missing) on the coordination worker, before they ask: a store
        read, or the decoy secret's first write, then never waits on the event loop."""
        await self._worker.call(self._load)

    def _load(self) -> None:
        if self.authorizer_enabled:
            self.store.acls()
        if any(m in SCRAM_MECHANISMS for ms in self._mechanisms.values() for m in ms):
            self.store.credentials()
            self.store.scram_decoy_secret()

    async def add_acls(self, bindings: list[AclBinding]) -> None:
        await self._worker.call(self.store.add_acls, bindings)

    async def remove_acls(self, bindings: list[AclBinding]) -> None:
        await self._worker.call(self.store.remove_acls, bindings)

    async def alter_credentials(self, upserts: list[tuple[str, str, ScramCredential]],
                                deletions: list[tuple[str, str]]) -> None:
        await self._worker.call(self.store.alter_credentials, upserts, deletions)

    def authenticator(self, listener: str) -> SaslAuthenticator:
        users = self._plain_users.get(listener, {})
        return SaslAuthenticator(self._mechanisms[listener], users.get, self.scram_credential,
                                 self.scram_decoy, self._oauthbearer.get(listener), _now_ms,
                                 self._max_reauth_ms[listener])

    def scram_credential(self, user: str, mechanism: str) -> ScramCredential | None:
        return self.store.credentials().get(user, {}).get(mechanism)

    def scram_decoy(self, user: str, mechanism: str) -> ScramCredential:
        """What SCRAM offers a user without a credential: shaped like the stored ones of
        the mechanism, derived from the cluster's secret (every broker offers the same)."""
        shapes = [(len(credential.salt), credential.iterations)
                  for mechanisms in self.store.credentials().values()
                  for name, credential in mechanisms.items() if name == mechanism]
        return decoy_credential(self.store.scram_decoy_secret(), mechanism, user, shapes)

    def authorize(self, principal: str, host: str, operation: AclOperation,
                  resource: Resource) -> bool:
        if not self.authorizer_enabled:
            return True
        return authorize(self.settings, self.store.acls(), principal, host, operation,
                         resource)

    def authorize_any(self, principal: str, host: str, operation: AclOperation,
                      resource_type: ResourceType) -> bool:
        if not self.authorizer_enabled:
            return True
        return authorize_any(self.settings, self.store.acls(), principal, host, operation,
                             resource_type)
