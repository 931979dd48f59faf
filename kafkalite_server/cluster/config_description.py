"""DescribeConfigs (32) entries for topics and brokers: value, source, synonyms, type.

A topic key's value comes from the first place that sets it, in Kafka's order: the topic's
own override (source TOPIC_CONFIG), then each broker synonym in the per-broker dynamic
layer (DYNAMIC_BROKER_CONFIG), in the cluster-wide dynamic layer
(DYNAMIC_DEFAULT_BROKER_CONFIG), in the properties file (STATIC_BROKER_CONFIG), and last
Kafka's default for the broker synonym (DEFAULT_CONFIG). ``synonyms`` lists every one of
those that is set, in that order, so its head is the source, except that, as Kafka's
``configSynonyms`` does, the list starts at the first entry of the topic key's primary broker
key: a default ``retention.ms`` lists no synonym, not ``log.retention.hours=168`` (a lower
ranked synonym of ``log.retention.ms``). v0 has no source, only ``is_default`` (source is
DEFAULT_CONFIG).

A broker resource named by its id lists the keys the broker knows (the properties-file keys
and every dynamic key) with the same layering on the key itself; one named ``""`` lists the
cluster-wide dynamic values only, as Kafka does. Dynamic keys are writable, the rest
read-only; passwords are sensitive and described without a value.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.protocol.config_codes import ConfigSourceType as ConfigSource
from kafkalite.protocol.config_codes import ConfigType
from kafkalite_server.cluster.dynamic_config import (
    CLUSTER_DEFAULT,
    DYNAMIC_KEYS,
    DynamicLayers,
)
from kafkalite_server.config import BrokerConfig
from kafkalite_server.log.config import TOPIC_CONFIGS, LogConfig


@dataclass(frozen=True, slots=True)
class BrokerLayers:
    """The values a broker key can take, highest priority first."""

    per_broker: Mapping[str, str]
    cluster_default: Mapping[str, str]
    static: Mapping[str, str]
    """Keys the operator set in the properties file, as the broker reports them."""

    @classmethod
    def of(cls, config: BrokerConfig, dynamic: DynamicLayers) -> BrokerLayers:
        static = {key: value for key, value, is_default in config.describe()
                  if not is_default and value is not None}
        return cls(dynamic.layer(str(config.broker_id)), dynamic.layer(CLUSTER_DEFAULT), static)

    def synonyms(self, keys: Iterable[tuple[str, str | None]]) -> list[dict[str, Any]]:
        """Layer by layer, each key set there (``keys`` pairs a key with Kafka's default)."""
        keys = list(keys)
        found = []
        for layer, source in ((self.per_broker, ConfigSource.DYNAMIC_BROKER_CONFIG),
                              (self.cluster_default, ConfigSource.DYNAMIC_DEFAULT_BROKER_CONFIG),
                              (self.static, ConfigSource.STATIC_BROKER_CONFIG)):
            found += [_synonym(key, layer[key], source) for key, _ in keys if key in layer]
        found += [_synonym(key, default, ConfigSource.DEFAULT_CONFIG)
                  for key, default in keys if default is not None]
        return found


def describe_topic(config: LogConfig, overrides: Mapping[str, str],
                   layers: BrokerLayers) -> list[dict[str, Any]]:
    """Every topic key of a topic whose effective config is ``config``."""
    entries = []
    for key, spec in TOPIC_CONFIGS.items():
        value = config.value_text(key)
        synonyms = _from_primary(layers.synonyms(spec.synonyms), spec.synonyms)
        if key in overrides:
            synonyms.insert(0, _synonym(key, value, ConfigSource.DYNAMIC_TOPIC_CONFIG))
        entries.append(_entry(key, value, synonyms, read_only=False, type_=spec.type,
                              doc=spec.doc))
    return entries


def describe_broker(resource_name: str, config: BrokerConfig,
                    layers: BrokerLayers) -> list[dict[str, Any]]:
    """A broker's keys (``resource_name`` its id), or the cluster-wide layer (``""``)."""
    static_defaults = {key: value for key, value, _default in config.describe()}
    # A stored name that is no broker key is listed too, as Kafka lists its originals.
    names = sorted(set(static_defaults) | set(DYNAMIC_KEYS) | set(layers.per_broker)
                   | set(layers.cluster_default))
    if resource_name == CLUSTER_DEFAULT:
        names = sorted(layers.cluster_default)
        layers = BrokerLayers({}, layers.cluster_default, {})
    entries = []
    for name in names:
        dynamic = DYNAMIC_KEYS.get(name)
        default = dynamic.default if dynamic is not None else static_defaults.get(name)
        if resource_name == CLUSTER_DEFAULT:
            default = None
        synonyms = layers.synonyms([(name, default)])
        type_ = dynamic.type if dynamic is not None else ConfigType.UNKNOWN
        value = synonyms[0]["value"] if synonyms else None
        entries.append(_entry(name, value, synonyms, read_only=dynamic is None, type_=type_,
                              doc=None))
    return entries


def _from_primary(found: list[dict[str, Any]], keys: Iterable[tuple[str, str | None]]
                  ) -> list[dict[str, Any]]:
    """``found`` from its first entry of the primary (first) broker key on: Kafka drops
    the synonyms ranked before it, so clients never see a lower ranked key as the source."""
    primary = next(iter(keys), (None, None))[0]
    for index, synonym in enumerate(found):
        if synonym["name"] == primary:
            return found[index:]
    return []


def _synonym(name: str, value: str | None, source: ConfigSource) -> dict[str, Any]:
    return {"name": name, "value": value, "source": int(source)}


def _entry(name: str, value: str | None, synonyms: list[dict[str, Any]], *, read_only: bool,
           type_: ConfigType, doc: str | None) -> dict[str, Any]:
    source = synonyms[0]["source"] if synonyms else ConfigSource.DEFAULT_CONFIG
    sensitive = type_ == ConfigType.PASSWORD
    if sensitive:
        value = None
        synonyms = [{**synonym, "value": None} for synonym in synonyms]
    return {"name": name, "value": value, "read_only": read_only,
            "is_default": source == ConfigSource.DEFAULT_CONFIG, "config_source": int(source),
            "is_sensitive": sensitive, "synonyms": synonyms, "config_type": int(type_),
            "documentation": doc}
