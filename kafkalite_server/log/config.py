"""Per-topic log settings: every topic-level key of Kafka 3.x, with its type, default,
validator and broker-level synonyms.

The broker keeps one :class:`LogConfig` per topic: the broker-wide defaults overridden by
the topic's own settings (CreateTopics / AlterConfigs / IncrementalAlterConfigs). Values
arrive as strings from the wire, so parsing and validation live here, next to the names.

Every key Kafka's ``TopicConfig`` defines is accepted, validated and described. Those marked
``honoured`` change what kafkalite does; the others are stored and described but have no
effect, because the machinery they tune does not exist in kafkalite (the log cleaner,
replica throttling, tiered storage, message-format down-conversion): docs/broker.md lists
them. ``remote.storage.enable=true`` is refused, as Kafka refuses it on a broker without
tiered storage.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite.protocol.config_codes import ConfigType
from kafkalite.protocol.primitives import INT32_MAX
from kafkalite_server.config_values import (
    LONG_MAX,
    Parser,
    boolean,
    choice,
    format_value,
    integer,
    never_when_max,
)

_DAY_MS = 24 * 60 * 60 * 1000

TIMESTAMP_TYPES = ("CreateTime", "LogAppendTime")
CLEANUP_POLICIES = ("delete", "compact")
COMPRESSION_TYPES = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


@dataclass(frozen=True, slots=True)
class TopicConfigKey:
    """One topic-level key as Kafka defines it.

    ``synonyms`` are the broker keys that supply its default, highest priority first, each
    with Kafka's default for that broker key as text (None when the broker key has none,
    as ``log.roll.ms``). ``honoured`` says whether kafkalite acts on the value.
    """

    name: str
    type: ConfigType
    parse: Parser
    synonyms: tuple[tuple[str, str | None], ...]
    honoured: bool
    doc: str


def _double_between(low: float, high: float) -> Parser:
    def parse(key: str, text: str) -> float:
        try:
            value = float(text)
        except ValueError:
            raise ConfigError(key, f"{text!r} is not a number") from None
        if not low <= value <= high:
            raise ConfigError(key, f"{value} is outside [{low}, {high}]")
        return value

    return parse


def _cleanup_policy(key: str, text: str) -> str:
    parts = [part.strip() for part in text.split(",")]
    if not text.strip() or any(part not in CLEANUP_POLICIES for part in parts):
        raise ConfigError(key, f"{text!r} is not a list of {', '.join(CLEANUP_POLICIES)}")
    return ",".join(dict.fromkeys(parts))


def _compression_type(key: str, text: str) -> str:
    return choice(COMPRESSION_TYPES)(key, text.lower())


def _gzip_level(key: str, text: str) -> int:
    level = integer(-1, 9)(key, text)
    if level == 0:
        raise ConfigError(key, "0 is not a gzip level: use -1 (the default) or 1 to 9")
    return level


_THROTTLED_ENTRY = re.compile(r"\d+:\d+")


def _throttled_replicas(key: str, text: str) -> str:
    """Kafka's ThrottledReplicaListValidator: empty, ``*``, or ``partition:broker,...``."""
    parts = [part.strip() for part in text.split(",") if part.strip()]
    if parts == ["*"] or all(_THROTTLED_ENTRY.fullmatch(part) for part in parts):
        return ",".join(parts)
    raise ConfigError(key, f"{text!r} must be '*' or a list of partitionId:brokerId")


_MESSAGE_FORMAT = re.compile(
    r"(0\.8\.[0-2]|0\.9\.0|0\.10\.[0-2]|0\.11\.0|1\.[01]|2\.[0-8]|3\.[0-9])"
    r"(\.\d+)?(-IV\d+)?")


def _message_format_version(key: str, text: str) -> str:
    """A Kafka release or inter-broker protocol version, as Kafka's validator accepts."""
    if not _MESSAGE_FORMAT.fullmatch(text):
        raise ConfigError(key, f"{text!r} is not a Kafka version such as 2.8 or 3.0-IV1")
    return text


def _no_tiered_storage(key: str, text: str) -> bool:
    if boolean(key, text):
        raise ConfigError(key, "tiered storage is not available in kafkalite (Kafka refuses "
                               "it too when remote.log.storage.system.enable is false)")
    return False


_B, _S, _I, _L, _D, _LIST = (ConfigType.BOOLEAN, ConfigType.STRING, ConfigType.INT,
                             ConfigType.LONG, ConfigType.DOUBLE, ConfigType.LIST)
_NEVER = str(LONG_MAX)


def _key(name: str, type_: ConfigType, parse: Parser, synonyms: str, honoured: bool,
         doc: str) -> TopicConfigKey:
    """``synonyms`` is ``"broker.key=default broker.key2"`` (no ``=`` means no default)."""
    pairs = []
    for item in synonyms.split():
        broker_key, equals, default = item.partition("=")
        pairs.append((broker_key, default if equals else None))
    return TopicConfigKey(name, type_, parse, tuple(pairs), honoured, doc)


_KEYS = (
    _key("cleanup.policy", _LIST, _cleanup_policy, "log.cleanup.policy=delete", True,
         "delete: time and size retention drop old segments; compact: the log cleaner "
         "keeps each key's last record (records without a key are refused)"),
    _key("compression.type", _S, _compression_type, "compression.type=producer", True,
         "producer keeps the producer's codec; any other codec recompresses on append"),
    _key("compression.gzip.level", _I, _gzip_level, "compression.gzip.level=-1", False,
         "stored; kafkalite compresses with gzip level 6"),
    _key("compression.lz4.level", _I, integer(1, 17), "compression.lz4.level=9", False,
         "stored; kafkalite compresses with the lz4 library's default level"),
    _key("compression.zstd.level", _I, integer(-131072, 22), "compression.zstd.level=3",
         False, "stored; kafkalite compresses with zstd level 3"),
    _key("delete.retention.ms", _L, integer(0), "log.cleaner.delete.retention.ms=86400000",
         True, "how long the cleaner keeps a tombstone once its segment is clean"),
    _key("file.delete.delay.ms", _L, integer(0), "log.segment.delete.delay.ms=60000", True,
         "how long deleted segments stay readable before their files go"),
    _key("flush.messages", _L, never_when_max(1),
         f"log.flush.interval.messages={_NEVER}", True,
         "fsync after this many messages"),
    _key("flush.ms", _L, never_when_max(0),
         f"log.flush.interval.ms log.flush.scheduler.interval.ms={_NEVER}", True,
         "fsync when this much time has passed since the last one"),
    _key("follower.replication.throttled.replicas", _LIST, _throttled_replicas, "", False,
         "stored; kafkalite has no replication quotas"),
    _key("index.interval.bytes", _I, integer(0, INT32_MAX), "log.index.interval.bytes=4096",
         True, "bytes between offset index entries"),
    _key("leader.replication.throttled.replicas", _LIST, _throttled_replicas, "", False,
         "stored; kafkalite has no replication quotas"),
    _key("local.retention.bytes", _L, integer(-2), "log.local.retention.bytes=-2", False,
         "stored; applies only to tiered storage"),
    _key("local.retention.ms", _L, integer(-2), "log.local.retention.ms=-2", False,
         "stored; applies only to tiered storage"),
    _key("max.compaction.lag.ms", _L, integer(1),
         f"log.cleaner.max.compaction.lag.ms={_NEVER}", True,
         "a dirty record older than this makes the log cleanable whatever its ratio"),
    _key("max.message.bytes", _I, integer(0, INT32_MAX), "message.max.bytes=1048588", True,
         "largest record batch accepted"),
    _key("message.downconversion.enable", _B, boolean,
         "log.message.downconversion.enable=true", False,
         "stored; kafkalite does not down-convert for old fetch versions"),
    _key("message.format.version", _S, _message_format_version,
         "log.message.format.version=3.0-IV1", False,
         "stored; ignored as by Kafka 3.x with inter-broker protocol 3.0 or later"),
    _key("message.timestamp.after.max.ms", _L, integer(0),
         f"log.message.timestamp.after.max.ms={_NEVER}", False,
         "stored; record timestamps are not range-checked"),
    _key("message.timestamp.before.max.ms", _L, integer(0),
         f"log.message.timestamp.before.max.ms={_NEVER}", False,
         "stored; record timestamps are not range-checked"),
    _key("message.timestamp.difference.max.ms", _L, integer(0),
         f"log.message.timestamp.difference.max.ms={_NEVER}", False,
         "stored; record timestamps are not range-checked"),
    _key("message.timestamp.type", _S, choice(TIMESTAMP_TYPES),
         "log.message.timestamp.type=CreateTime", True,
         "LogAppendTime stamps batches with the broker's clock"),
    _key("min.cleanable.dirty.ratio", _D, _double_between(0.0, 1.0),
         "log.cleaner.min.cleanable.ratio=0.5", True,
         "dirty share of the log at which the cleaner compacts it"),
    _key("min.compaction.lag.ms", _L, integer(0), "log.cleaner.min.compaction.lag.ms=0", True,
         "records younger than this stay uncompacted"),
    _key("min.insync.replicas", _I, integer(1, INT32_MAX), "min.insync.replicas=1", True,
         "acks=all produce needs this many in-sync replicas"),
    _key("preallocate", _B, boolean, "log.preallocate=false", False,
         "stored; segments grow as written"),
    _key("remote.log.copy.disable", _B, boolean, "", False,
         "stored; applies only to tiered storage"),
    _key("remote.log.delete.on.disable", _B, boolean, "", False,
         "stored; applies only to tiered storage"),
    _key("remote.storage.enable", _B, _no_tiered_storage, "", False,
         "only false is accepted: kafkalite has no tiered storage"),
    _key("retention.bytes", _L, integer(-(2**63)), "log.retention.bytes=-1", True,
         "size retention per partition (-1: none)"),
    _key("retention.ms", _L, integer(-1),
         "log.retention.ms log.retention.minutes log.retention.hours=168", True,
         "time retention (-1: none)"),
    _key("segment.bytes", _I, integer(14, INT32_MAX), "log.segment.bytes=1073741824", True,
         "segment size at which the log rolls"),
    _key("segment.index.bytes", _I, integer(4, INT32_MAX),
         "log.index.size.max.bytes=10485760", True, "largest offset/time index file"),
    _key("segment.jitter.ms", _L, integer(0), "log.roll.jitter.ms log.roll.jitter.hours=0",
         True, "a random part of it, per segment, is taken off segment.ms"),
    _key("segment.ms", _L, integer(1), "log.roll.ms log.roll.hours=168", True,
         "segment age at which the log rolls"),
    _key("unclean.leader.election.enable", _B, boolean, "unclean.leader.election.enable=false",
         False, "stored; a partition has one replica, so no election is unclean"),
)

TOPIC_CONFIGS: dict[str, TopicConfigKey] = {key.name: key for key in _KEYS}
"""Every topic-level key, by name, in DescribeConfigs order (sorted, as Kafka lists them)."""

TOPIC_CONFIG_KEYS: tuple[str, ...] = tuple(TOPIC_CONFIGS)


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Settings of one topic's logs; field names are Kafka's keys with ``_`` for ``.``.

    Kafka's defaults. ``flush.messages``/``flush.ms`` hold ``None`` for Kafka's "never"
    (Long.MAX_VALUE); list-valued keys hold their comma-joined text.
    """

    cleanup_policy: str = "delete"
    compression_type: str = "producer"
    compression_gzip_level: int = -1
    compression_lz4_level: int = 9
    compression_zstd_level: int = 3
    delete_retention_ms: int = _DAY_MS
    file_delete_delay_ms: int = 60000
    flush_messages: int | None = None
    flush_ms: int | None = None
    follower_replication_throttled_replicas: str = ""
    index_interval_bytes: int = 4096
    leader_replication_throttled_replicas: str = ""
    local_retention_bytes: int = -2
    local_retention_ms: int = -2
    max_compaction_lag_ms: int = LONG_MAX
    max_message_bytes: int = 1024 * 1024 + 12
    message_downconversion_enable: bool = True
    message_format_version: str = "3.0-IV1"
    message_timestamp_after_max_ms: int = LONG_MAX
    message_timestamp_before_max_ms: int = LONG_MAX
    message_timestamp_difference_max_ms: int = LONG_MAX
    message_timestamp_type: str = "CreateTime"
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    min_insync_replicas: int = 1
    preallocate: bool = False
    remote_log_copy_disable: bool = False
    remote_log_delete_on_disable: bool = False
    remote_storage_enable: bool = False
    retention_bytes: int = -1
    retention_ms: int = 7 * _DAY_MS
    segment_bytes: int = 1024 * 1024 * 1024
    segment_index_bytes: int = 10 * 1024 * 1024
    segment_jitter_ms: int = 0
    segment_ms: int = 7 * _DAY_MS
    unclean_leader_election_enable: bool = False

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def compacts(self) -> bool:
        """The log cleaner compacts logs with ``compact`` (alone or with ``delete``)."""
        return "compact" in self.cleanup_policy.split(",")

    @property
    def deletes_old_segments(self) -> bool:
        """Time/size retention applies only with the ``delete`` policy."""
        return "delete" in self.cleanup_policy.split(",")

    @property
    def compacted(self) -> bool:
        return "compact" in self.cleanup_policy.split(",")

    @classmethod
    def from_topic_configs(cls, base: LogConfig, overrides: Mapping[str, str]) -> LogConfig:
        """``base`` with each override parsed and checked; a bad key or value names it."""
        changes: dict[str, Any] = {}
        for key, text in overrides.items():
            spec = TOPIC_CONFIGS.get(key)
            if spec is None:
                raise ConfigError(key, "unknown topic config")
            changes[field_name(key)] = spec.parse(key, str(text).strip())
        config = dataclasses.replace(base, **changes)
        if config.min_compaction_lag_ms > config.max_compaction_lag_ms:
            raise ConfigError("min.compaction.lag.ms",
                              f"{config.min_compaction_lag_ms} is above max.compaction.lag.ms "
                              f"{config.max_compaction_lag_ms}")
        return config

    def value_text(self, key: str) -> str:
        """The value of ``key`` as Kafka prints it (DescribeConfigs)."""
        return format_value(getattr(self, field_name(key)))

    def describe(self, defaults: LogConfig | None = None) -> list[tuple[str, str, bool]]:
        """(key, value as Kafka prints it, equals the default) for every key.

        ``defaults`` is what "default" means to the caller; Kafka's own when omitted.
        """
        reference = defaults if defaults is not None else LogConfig()
        return [(key, self.value_text(key),
                 getattr(self, field_name(key)) == getattr(reference, field_name(key)))
                for key in TOPIC_CONFIG_KEYS]


def field_name(key: str) -> str:
    """The :class:`LogConfig` attribute of a topic key."""
    return key.replace(".", "_")
