"""Configs: DescribeConfigs, AlterConfigs (33) and IncrementalAlterConfigs (44).

A broker's own configs (``ConfigResource("broker", "0")``) are asked of that broker; every
other resource of any broker (kafka-python's routing). AlterConfigs resets every key it is
not given, so a non-incremental change first reads the resource's own settings and carries
them along (:func:`with_other_modified`); the pure helpers here compute those carried and
reset sets from DescribeConfigs entries.
"""

from __future__ import annotations

import dataclasses
import enum
from collections.abc import Collection, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import ClusterView, LookupResult, LookupStrategy
from kafkalite.errors import MetadataEmptyBrokerList
from kafkalite.protocol import ApiKey
from kafkalite.protocol.config_codes import ConfigResourceType, ConfigSourceType
from kafkalite.protocol.errors import error_for_code


class AlterConfigOp(enum.IntEnum):
    """An incremental config change's operation (IncrementalAlterConfigs)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


ConfigChanges = (Mapping[str, str | tuple[AlterConfigOp | str | int, str | None] | None]
                 | Sequence[str])
"""What ``ConfigResource.configs`` holds: changes by key, or (for a reset) just keys."""

ConfigEntry = Mapping[str, Any]
"""One config of a DescribeConfigs answer (``name``, ``value``, ``config_source``, ...)."""


def _resource_type(value: str | int) -> ConfigResourceType:
    if isinstance(value, str):
        try:
            return ConfigResourceType[value.upper()]
        except KeyError:
            pass
    else:
        try:
            return ConfigResourceType(value)
        except ValueError:
            pass
    names = ", ".join(t.name for t in ConfigResourceType if t.value)
    raise ValueError(f"resource_type must be one of {names} (any case), not {value!r}")


@dataclass(frozen=True)
class ConfigResource:
    """What ``describe_configs`` looks at: ``ConfigResource("topic", name)``,
    ``ConfigResource('TOPIC', name)`` or ``ConfigResource(ConfigResourceType.BROKER, "0")``
    (kafka-python's spellings). ``configs`` carries the changes for ``alter_configs``
    (``{key: value}`` or ``{key: (AlterConfigOp, value)}``) or the keys for
    ``reset_configs``; it does not take part in equality."""

    resource_type: ConfigResourceType
    name: str
    configs: ConfigChanges | None = field(default=None, compare=False, hash=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "resource_type", _resource_type(self.resource_type))

    @property
    def label(self) -> str:
        """``topic 'orders'``: how messages name the resource."""
        return f"{self.resource_type.name.lower()} {self.name!r}"

    @property
    def broker_id(self) -> int | None:
        """The broker that must answer for this resource (its own configs), else None."""
        if self.resource_type not in (ConfigResourceType.BROKER,
                                      ConfigResourceType.BROKER_LOGGER) or not self.name:
            return None
        try:
            return int(self.name)
        except ValueError:
            raise ValueError(f"a broker resource is named by its broker id, not "
                             f"{self.name!r}") from None


ResourceKey = tuple[int, ConfigResource]
"""A resource with its position in the call (two changes to one resource stay apart)."""


class ResourceBroker(LookupStrategy[ResourceKey]):
    """A broker resource's own broker; any broker for the others."""

    def lookup(self, keys: Collection[ResourceKey],
               view: ClusterView) -> LookupResult[ResourceKey]:
        result: LookupResult[ResourceKey] = LookupResult()
        brokers = view.broker_ids()
        for key in keys:
            node = key[1].broker_id
            if node is None and not brokers:
                result.unmapped[key] = MetadataEmptyBrokerList("no broker is known yet")
            else:
                result.mapped[key] = brokers[0] if node is None else node
        return result


def resource_keys(resources: Sequence[ConfigResource]) -> list[ResourceKey]:
    """The call's keys; a broker resource not named by a broker id raises ValueError now,
    before anything is sent."""
    for resource in resources:
        _ = resource.broker_id
    return list(enumerate(resources))


class DescribeConfigs(AdminApiHandler[ResourceKey, list[dict[str, Any]]]):
    """Each resource's config entries; a refused resource raises naming it."""

    api_key = ApiKey.DESCRIBE_CONFIGS

    def __init__(self, include_synonyms: bool = False) -> None:
        super().__init__(ResourceBroker())
        self.include_synonyms = include_synonyms

    def build_request(self, node: int, keys: Sequence[ResourceKey]) -> Request:
        return Request(self.api_key, {
            "resources": [{"resource_type": int(r.resource_type), "resource_name": r.name,
                           "configuration_keys": None} for _, r in keys],
            "include_synonyms": self.include_synonyms, "include_documentation": False})

    def handle_response(self, node: int, keys: Sequence[ResourceKey], body: Mapping[str, Any],
                        ) -> ApiResult[ResourceKey, list[dict[str, Any]]]:
        outcome: ApiResult[ResourceKey, list[dict[str, Any]]] = ApiResult()
        for key, result in zip(keys, body["results"], strict=True):
            if not outcome.error(key, result["error_code"], f"describing {key[1].label}",
                                 result.get("error_message")):
                outcome.complete(key, [dict(c) for c in result["configs"]])
        return outcome


class ChangeOutcome(NamedTuple):
    """One resource's answer to AlterConfigs: the broker's error code and message, which
    the threaded client shows as text (:meth:`text`) and the asyncio one as aiokafka's
    response tuple."""

    error_code: int
    error_message: str | None

    def text(self) -> str:
        """"OK" or the broker's error as text (kafka-python's shape)."""
        return "OK" if not self.error_code else \
            str(error_for_code(self.error_code)(self.error_message or ""))


class AlterConfigs(AdminApiHandler[ResourceKey, ChangeOutcome]):
    """AlterConfigs (or, ``incremental``, IncrementalAlterConfigs): each resource's result
    is its :class:`ChangeOutcome` (a refused change is a value, not an exception, as in
    kafka-python and aiokafka)."""

    def __init__(self, incremental: bool, validate_only: bool) -> None:
        super().__init__(ResourceBroker())
        self.api_key = ApiKey.INCREMENTAL_ALTER_CONFIGS if incremental else ApiKey.ALTER_CONFIGS
        self.incremental = incremental
        self.validate_only = validate_only

    def build_request(self, node: int, keys: Sequence[ResourceKey]) -> Request:
        return Request(self.api_key, {
            "resources": [{"resource_type": int(r.resource_type), "resource_name": r.name,
                           "configs": config_entries(r, self.incremental)} for _, r in keys],
            "validate_only": self.validate_only})

    def handle_response(self, node: int, keys: Sequence[ResourceKey],
                        body: Mapping[str, Any]) -> ApiResult[ResourceKey, ChangeOutcome]:
        outcome: ApiResult[ResourceKey, ChangeOutcome] = ApiResult()
        for key, result in zip(keys, body["responses"], strict=True):
            code = result["error_code"]
            if not outcome.routed(key, code, f"changing {key[1].label}"):
                outcome.complete(key, ChangeOutcome(code, result["error_message"]))
        return outcome


def by_resource_type(results: Mapping[ResourceKey, ChangeOutcome]) -> dict[str, dict[str, str]]:
    """kafka-python's shape of alter results: ``{"topic": {name: "OK" or the error}}``."""
    out: dict[str, dict[str, str]] = {}
    for (_, resource), outcome in results.items():
        out.setdefault(resource.resource_type.name.lower(), {})[resource.name] = outcome.text()
    return out


def is_default(config: ConfigEntry) -> bool:
    """A DescribeConfigs entry whose value is a default (v0: is_default; v1+: its source)."""
    source = config.get("config_source", -1)
    return bool(config.get("is_default")) if source == -1 else \
        source == ConfigSourceType.DEFAULT_CONFIG


def own_config_source(resource: ConfigResource) -> int:
    """The DescribeConfigs source code of values set on the resource itself: a topic's
    dynamic config (1), one broker's (2), the cluster-wide broker default (3, the broker
    resource named ""), a broker logger's (6) or a group's (8)."""
    kind = resource.resource_type
    if kind is ConfigResourceType.BROKER:
        return ConfigSourceType.DYNAMIC_BROKER_CONFIG if resource.name else \
            ConfigSourceType.DYNAMIC_DEFAULT_BROKER_CONFIG
    return {ConfigResourceType.TOPIC: ConfigSourceType.DYNAMIC_TOPIC_CONFIG,
            ConfigResourceType.BROKER_LOGGER: ConfigSourceType.DYNAMIC_BROKER_LOGGER_CONFIG,
            ConfigResourceType.GROUP: ConfigSourceType.DYNAMIC_GROUP_CONFIG,
            }.get(kind, -1)


def modified_configs(resource: ConfigResource,
                     entries: Sequence[ConfigEntry]) -> dict[str, str]:
    """The resource's own settings (what AlterConfigs would reset), with their values;
    values inherited from elsewhere (a broker default for a topic) are not its own."""
    return {c["name"]: c["value"] for c in entries
            if c.get("config_source") == own_config_source(resource) and c["value"] is not None}


def unknown_keys(resource: ConfigResource, entries: Sequence[ConfigEntry]) -> list[str]:
    """The keys of ``resource.configs`` the resource has no changeable config for."""
    known = {c["name"] for c in entries if not c.get("read_only")}
    return sorted(set(resource.configs or ()) - known)


def config_changes(configs: ConfigChanges | None,
                   ) -> Iterator[tuple[str, AlterConfigOp, str | None]]:
    """(key, operation, value) for each change; a bare value means SET."""
    if not configs:
        return
    if not isinstance(configs, Mapping):
        raise TypeError(f"configs must map keys to values or (AlterConfigOp, value), "
                        f"not {type(configs).__name__}")
    for name, change in configs.items():
        op, value = change if isinstance(change, tuple) else (AlterConfigOp.SET, change)
        op = AlterConfigOp[op.upper()] if isinstance(op, str) else AlterConfigOp(op)
        yield name, op, None if op is AlterConfigOp.DELETE else value


def config_entries(resource: ConfigResource, incremental: bool) -> list[dict[str, Any]]:
    """The ``configs`` of one resource in an (Incremental)AlterConfigs request."""
    entries = []
    for name, op, value in config_changes(resource.configs):
        if incremental:
            entries.append({"name": name, "config_operation": int(op), "value": value})
        elif op is AlterConfigOp.SET:
            entries.append({"name": name, "value": value})
        else:
            raise ValueError(f"{resource.label}: {name}: AlterConfigs can only SET; "
                             f"{op.name} needs incremental=True")
    return entries


def with_other_modified(resource: ConfigResource, modified: Mapping[str, str],
                        ) -> ConfigResource:
    """``resource`` with its other own settings added, for AlterConfigs (which resets
    every key it is not given)."""
    given = resource.configs if isinstance(resource.configs, Mapping) else {}
    return dataclasses.replace(resource, configs={
        **{k: v for k, v in modified.items() if k not in given}, **given})


def reset_changes(resource: ConfigResource, modified: Mapping[str, str],
                  incremental: bool) -> ConfigResource:
    """The change that puts the keys of ``resource.configs`` (all its own settings if it
    lists none) back to their defaults: DELETE each (incremental), or send every other own
    setting and let AlterConfigs reset the rest."""
    keys = list(resource.configs or ())
    if incremental:
        return dataclasses.replace(resource, configs=dict.fromkeys(
            keys or list(modified), (AlterConfigOp.DELETE, None)))
    return dataclasses.replace(resource, configs={
        k: v for k, v in modified.items() if k not in set(keys)})
