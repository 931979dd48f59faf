"""Dynamic broker configs: what AlterConfigs and IncrementalAlterConfigs may change on a
running broker, Kafka's way.

Kafka keeps two dynamic layers above the static ``server.properties``: per-broker values
(resource name = the broker id) and cluster-wide defaults (resource name ``""``). A broker
key resolves per-broker first, then the cluster default, then the static file, then Kafka's
default. Only keys Kafka marks dynamically updatable are accepted here.

The dynamic log keys (``log.retention.ms``, ``log.cleanup.policy``, ``message.max.bytes``,
...) are the broker synonyms of topic configs: they change the defaults of every topic
without its own override, so they take effect at once. The others (thread pools,
connection quotas, SASL/SSL listener settings, cleaner tuning) are validated, stored and
described, with no effect: kafkalite has no such machinery to tune.

Kept in the coordination store under ``/config/brokers/<id>`` and
``/config/brokers/<default>``, as Kafka keeps them in ZooKeeper, so they survive a restart
and every broker of the cluster reads the same; a standalone broker keeps them in its local
store the same way.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from kafkalite.errors import ConfigError
from kafkalite.protocol.config_codes import ConfigType
from kafkalite.protocol.primitives import INT32_MAX
from kafkalite_server.config import BROKER_CONFIG_KEYS
from kafkalite_server.config_values import Parser, boolean, integer
from kafkalite_server.log.config import TOPIC_CONFIGS, LogConfig

CLUSTER_DEFAULT = ""
"""The resource name of the cluster-wide default layer."""



@dataclass(frozen=True, slots=True)
class DynamicKey:
    name: str
    type: ConfigType
    parse: Parser
    default: str | None
    topic_key: str | None = None
    """The topic config this broker key supplies the default of, if any."""

    @property
    def honoured(self) -> bool:
        return self.topic_key is not None and TOPIC_CONFIGS[self.topic_key].honoured


def _text(key: str, text: str) -> str:
    return text


def _double(minimum: float) -> Parser:
    def parse(key: str, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(key, f"{text!r} is not a number") from None
        if value < minimum:
            raise ConfigError(key, f"{value} is below {minimum}")
        return value

    return parse


def _as_broker_key(topic_key: str, broker_key: str) -> Parser:
    """The topic key's validator, reporting errors under the broker key."""
    parse_topic = TOPIC_CONFIGS[topic_key].parse

    def parse(key: str, text: str) -> object:
        try:
            return parse_topic(topic_key, text)
        except ConfigError as exc:
            raise ConfigError(key, str(exc).removeprefix(f"{topic_key}: ")) from None

    return parse


def _log_keys() -> list[DynamicKey]:
    """The first broker synonym of each topic key, except log.message.format.version,
    which Kafka does not let change dynamically."""
    keys = []
    for topic_key in TOPIC_CONFIGS.values():
        if not topic_key.synonyms:
            continue
        broker_key, default = topic_key.synonyms[0]
        if broker_key == "log.message.format.version":
            continue
        if default is None:  # e.g. log.roll.ms: Kafka's default comes from log.roll.hours
            default = LogConfig().value_text(topic_key.name)
        keys.append(DynamicKey(broker_key, topic_key.type,
                               _as_broker_key(topic_key.name, broker_key), default,
                               topic_key.name))
    return keys


_L, _I, _D, _S, _B, _LIST, _P, _SHORT = (
    ConfigType.LONG, ConfigType.INT, ConfigType.DOUBLE, ConfigType.STRING, ConfigType.BOOLEAN,
    ConfigType.LIST, ConfigType.PASSWORD, ConfigType.SHORT)

_OTHER_KEYS = [
    DynamicKey("background.threads", _I, integer(1, INT32_MAX), "10"),
    DynamicKey("num.io.threads", _I, integer(1, INT32_MAX), "8"),
    DynamicKey("num.network.threads", _I, integer(1, INT32_MAX), "3"),
    DynamicKey("num.replica.fetchers", _I, integer(1, INT32_MAX), "1"),
    DynamicKey("num.recovery.threads.per.data.dir", _I, integer(1, INT32_MAX), "1"),
    DynamicKey("log.cleaner.threads", _I, integer(0, INT32_MAX), "1"),
    DynamicKey("log.cleaner.backoff.ms", _L, integer(0), "15000"),
    DynamicKey("log.cleaner.dedupe.buffer.size", _L, integer(0), "134217728"),
    DynamicKey("log.cleaner.io.buffer.size", _I, integer(0, INT32_MAX), "524288"),
    DynamicKey("log.cleaner.io.buffer.load.factor", _D, _double(0.0), "0.9"),
    DynamicKey("log.cleaner.io.max.bytes.per.second", _D, _double(0.0),
               "1.7976931348623157E308"),
    DynamicKey("max.connections", _I, integer(0, INT32_MAX), str(INT32_MAX)),
    DynamicKey("max.connections.per.ip", _I, integer(0, INT32_MAX), str(INT32_MAX)),
    DynamicKey("max.connections.per.ip.overrides", _S, _text, ""),
    DynamicKey("max.connection.creation.rate", _I, integer(0, INT32_MAX), str(INT32_MAX)),
    DynamicKey("follower.replication.throttled.rate", _L, integer(1), str(2**63 - 1)),
    DynamicKey("leader.replication.throttled.rate", _L, integer(1), str(2**63 - 1)),
    DynamicKey("replica.alter.log.dirs.io.max.bytes.per.second", _L, integer(1),
               str(2**63 - 1)),
    DynamicKey("metric.reporters", _LIST, _text, ""),
    DynamicKey("sasl.kerberos.kinit.cmd", _S, _text, "/usr/bin/kinit"),
    DynamicKey("sasl.kerberos.min.time.before.relogin", _L, integer(0, 2**63 - 1), "60000"),
    DynamicKey("sasl.kerberos.service.name", _S, _text, None),
    DynamicKey("sasl.kerberos.ticket.renew.jitter", _D, _double(0.0), "0.05"),
    DynamicKey("sasl.kerberos.ticket.renew.window.factor", _D, _double(0.0), "0.8"),
    DynamicKey("sasl.login.refresh.buffer.seconds", _SHORT, integer(0, 3600), "300"),
    DynamicKey("sasl.login.refresh.min.period.seconds", _SHORT, integer(0, 900), "60"),
    DynamicKey("sasl.login.refresh.window.factor", _D, _double(0.5), "0.8"),
    DynamicKey("sasl.login.refresh.window.jitter", _D, _double(0.0), "0.05"),
    DynamicKey("ssl.cipher.suites", _LIST, _text, ""),
    DynamicKey("ssl.enabled.protocols", _LIST, _text, "TLSv1.2,TLSv1.3"),
    DynamicKey("ssl.keystore.location", _S, _text, None),
    DynamicKey("ssl.keystore.password", _P, _text, None),
    DynamicKey("ssl.keystore.type", _S, _text, "JKS"),
    DynamicKey("ssl.truststore.location", _S, _text, None),
    DynamicKey("ssl.truststore.password", _P, _text, None),
    DynamicKey("ssl.truststore.type", _S, _text, "JKS"),
    DynamicKey("unclean.leader.election.check.interval.ms", _L, integer(1), "300000"),
    DynamicKey("transaction.partition.verification.enable", _B, boolean, "true"),
]

DYNAMIC_KEYS: dict[str, DynamicKey] = {
    key.name: key for key in sorted(_log_keys() + _OTHER_KEYS, key=lambda k: k.name)}
"""Every broker key AlterConfigs may change, by name."""


_STATIC_KEYS = (frozenset(BROKER_CONFIG_KEYS)
                | {key for topic_key in TOPIC_CONFIGS.values() for key, _ in topic_key.synonyms}
                ) - DYNAMIC_KEYS.keys()
"""The broker keys a running broker may not change."""


def validate_dynamic(configs: Mapping[str, str]) -> None:
    """Raises ConfigError naming the first key that is a static broker key or has a bad
    value. A name that is no broker key at all (``cleanup.policy`` sent to a BROKER
    resource) passes: Kafka in ZooKeeper mode refuses only its known non-dynamic keys
    (DynamicBrokerConfig.validateConfigs) and stores the rest, which then have no effect."""
    for key, text in configs.items():
        spec = DYNAMIC_KEYS.get(key)
        if spec is not None:
            spec.parse(key, text.strip())
        elif key in _STATIC_KEYS:
            raise ConfigError(key, "is not a dynamically updatable broker config (set it in "
                                   "the broker's properties file)")


class DynamicLayers:
    """The two dynamic layers, as read from ``/config/brokers``."""

    def __init__(self) -> None:
        self.cluster_default: dict[str, str] = {}
        self.per_broker: dict[int, dict[str, str]] = {}

    def layer(self, resource_name: str) -> dict[str, str]:
        """The dynamic values of a resource: ``""`` or a broker id."""
        if resource_name == CLUSTER_DEFAULT:
            return dict(self.cluster_default)
        return dict(self.per_broker.get(int(resource_name), {}))

    def value(self, broker_id: int, key: str) -> str | None:
        """The dynamic value of ``key`` on ``broker_id``: its own, else the cluster-wide
        one, else None."""
        own = self.per_broker.get(broker_id, {})
        return own[key] if key in own else self.cluster_default.get(key)

    def log_defaults(self, static: LogConfig,
                     replacing: tuple[str, Mapping[str, str]] | None = None) -> LogConfig:
        """``static`` (from the properties file) under the dynamic log keys, per-broker
        values over cluster-wide ones; ``replacing`` = (resource name, values) previews a
        change before it is made."""
        default, brokers = self.cluster_default, dict(self.per_broker)
        if replacing is not None:
            name, configs = replacing
            if name == CLUSTER_DEFAULT:
                default = dict(configs)
            else:
                brokers[int(name)] = dict(configs)
        overrides: dict[str, str] = {}
        for layer in [default, *(brokers[b] for b in sorted(brokers))]:
            for key, text in layer.items():
                spec = DYNAMIC_KEYS.get(key)  # None: a name that is no broker key
                if spec is not None and spec.topic_key is not None:
                    overrides[spec.topic_key] = text
        if not overrides:
            return static
        return LogConfig.from_topic_configs(static, overrides)

