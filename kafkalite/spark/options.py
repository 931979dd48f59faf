"""The data source's options: Spark's Kafka source names, parsed and checked once, on the driver.

Spark hands options over as a case-insensitive map of strings (keys arrive lower-cased), so
every known option is matched in lower case and every value is parsed here, with errors that
name the option. ``kafka.``-prefixed options are the kafkalite client's own settings, spelled
the Java way (``kafka.fetch.max.bytes`` -> ``fetch_max_bytes``); the client validates them, so
a misspelt one fails as early as a misspelt source option. The security options
(``kafka.security.protocol``, ``kafka.sasl.*``, ``kafka.ssl.*``) are Kafka's client properties
and translate as the CLI's ``--command-config`` does (:func:`kafkalite.properties.security_settings`).
"""

from __future__ import annotations

import logging
import re
import uuid
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from kafkalite.errors import ConfigError, UnknownConfigError
from kafkalite.properties import (
    client_setting,
    is_security_property,
    nearest_key,
    property_name,
    security_settings,
)
from kafkalite.spark.offsets import (
    OffsetSpec,
    PartitionOffsets,
    load_json,
    offsets_from_json,
    parse_offset_spec,
    parse_partition_list,
)
from kafkalite.structs import TopicPartition

log = logging.getLogger(__name__)

KAFKA_PREFIX = "kafka."
SPARK_INJECTED = frozenset({"path", "checkpointlocation"})
"""Options Spark itself may add to a source's or sink's option map."""

READ_OPTIONS = (
    "subscribe", "subscribePattern", "assign", "startingOffsets", "endingOffsets",
    "startingTimestamp", "endingTimestamp", "startingOffsetsByTimestamp",
    "endingOffsetsByTimestamp", "startingOffsetsByTimestampStrategy", "maxOffsetsPerTrigger",
    "minOffsetsPerTrigger", "maxTriggerDelay", "minPartitions", "maxRecordsPerPartition",
    "failOnDataLoss", "includeHeaders", "valueFormat", "valueSchema",
    "kafkaConsumer.pollTimeoutMs", "fetchOffset.numRetries", "fetchOffset.retryIntervalMs",
    "groupIdPrefix",
)
STREAMING_ONLY = ("maxOffsetsPerTrigger", "minOffsetsPerTrigger", "maxTriggerDelay")
"""Options a batch read ignores with a warning, as Spark does."""
BATCH_ONLY = ("endingOffsets", "endingTimestamp", "endingOffsetsByTimestamp")
"""Options a streaming query refuses (a stream has no end), as Spark does."""
DEFAULT_GROUP_ID_PREFIX = "spark-kafka-source"
DEFAULT_MAX_TRIGGER_DELAY_MS = 15 * 60 * 1000
WRITE_OPTIONS = ("topic", "includeHeaders", "valueFormat", "valueSchema",
                 "transactionalIdPrefix")

SOURCE_OWNED_CLIENT_KEYS = frozenset({
    "enable_auto_commit", "auto_offset_reset", "key_deserializer",
    "value_deserializer", "key_serializer", "value_serializer",
})
"""Client settings the source decides itself (it reads exact ranges without a group, and
always moves raw bytes), so setting them is an error rather than silently ignored."""

ValueFormat = Literal["binary", "msgpack"]
TimestampStrategy = Literal["error", "latest"]


@dataclass(frozen=True)
class TopicSelection:
    """Exactly one of Spark's three ways to name what to read."""

    topics: tuple[str, ...] = ()
    pattern: str | None = None
    partitions: tuple[TopicPartition, ...] = ()

    def describe(self) -> str:
        if self.pattern is not None:
            return f"subscribePattern {self.pattern!r}"
        if self.partitions:
            return f"assign {[f'{tp.topic}-{tp.partition}' for tp in self.partitions]}"
        return f"subscribe {list(self.topics)}"


@dataclass(frozen=True)
class ValueEncoding:
    """How the ``value`` column maps to record bytes: raw, or a msgpack-encoded struct."""

    format: ValueFormat = "binary"
    schema_ddl: str | None = None

    def column_ddl(self) -> str:
        return "binary" if self.format == "binary" else f"struct<{self.schema_ddl}>"


@dataclass(frozen=True)
class ReadOptions:
    """Everything a reader needs; a frozen dataclass of plain values, so it pickles to executors."""

    client_config: Mapping[str, Any]
    selection: TopicSelection
    starting: OffsetSpec
    ending: OffsetSpec
    starting_timestamp: int | None = None
    ending_timestamp: int | None = None
    starting_by_timestamp: PartitionOffsets | None = None
    """startingOffsetsByTimestamp: a timestamp per partition (startingTimestamp wins)."""
    ending_by_timestamp: PartitionOffsets | None = None
    timestamp_strategy: TimestampStrategy = "error"
    """What a starting timestamp with no record at or after it means: fail, or latest."""
    max_offsets_per_trigger: int | None = None
    min_offsets_per_trigger: int | None = None
    max_trigger_delay_ms: int = DEFAULT_MAX_TRIGGER_DELAY_MS
    min_partitions: int | None = None
    max_records_per_partition: int | None = None
    fail_on_data_loss: bool = True
    include_headers: bool = False
    value: ValueEncoding = field(default_factory=ValueEncoding)
    poll_timeout_ms: int = 120_000
    fetch_offset_retries: int = 3
    fetch_offset_retry_interval_ms: int = 10
    group_id: str = DEFAULT_GROUP_ID_PREFIX
    """The group id the source's consumers carry (they never join or commit): kafka.group.id,
    else groupIdPrefix plus a per-query unique part, as Spark names its consumers."""
    group_id_given: bool = False
    """True when kafka.group.id set the id: then it is used exactly as given."""


@dataclass(frozen=True)
class WriteOptions:
    client_config: Mapping[str, Any]
    topic: str | None = None
    include_headers: bool = False
    value: ValueEncoding = field(default_factory=ValueEncoding)
    transactional_id_prefix: str | None = None
    """transactionalIdPrefix: each task writes in one transaction, with the transactional id
    ``<prefix>-<Spark partition id>`` (see :mod:`kafkalite.spark.writers`)."""

    def transactional_id(self, partition_id: int) -> str | None:
        """The id of the task writing Spark partition ``partition_id``: the same for every
        attempt of that task, so a retry fences the attempt before it."""
        if self.transactional_id_prefix is None:
            return None
        return f"{self.transactional_id_prefix}-{partition_id}"


def parse_read_options(options: Mapping[str, str], *, streaming: bool) -> ReadOptions:
    """Check and parse a read's options; raises ConfigError naming the first bad option."""
    opts = _lower_keys(options)
    _reject_unknown(opts, READ_OPTIONS, "read")
    if streaming:
        for name in BATCH_ONLY:
            if name.lower() in opts:
                raise ConfigError(name, "applies to batch reads only, not to streaming")
    else:
        for name in STREAMING_ONLY:
            if opts.pop(name.lower(), None) is not None:
                log.warning("%s option ignored in batch queries", name)
    starting_default = "earliest" if not streaming else "latest"
    starting = parse_offset_spec(opts.get("startingoffsets", starting_default), "startingOffsets")
    ending = parse_offset_spec(opts.get("endingoffsets", "latest"), "endingOffsets")
    if not streaming and starting == "latest":
        raise ConfigError("startingOffsets", "'latest' is not allowed in a batch read")
    if ending == "earliest":
        raise ConfigError("endingOffsets", "'earliest' is not allowed")
    if isinstance(ending, dict) and -2 in ending.values():
        raise ConfigError("endingOffsets", "-2 (earliest) is not allowed as an ending offset")
    client_config = _client_config(opts)
    _check_client_config(client_config, for_write=False)
    group_id = client_config.pop("group_id", None)
    group_id_given = group_id is not None
    if group_id is None:
        prefix = opts.get("groupidprefix", DEFAULT_GROUP_ID_PREFIX).strip()
        if not prefix:
            raise ConfigError("groupIdPrefix", "must not be empty")
        group_id = f"{prefix}-{uuid.uuid4()}"
    return ReadOptions(
        client_config=client_config,
        selection=_selection(opts),
        starting=starting,
        ending=ending,
        starting_timestamp=_optional_int(opts, "startingtimestamp", "startingTimestamp", 0),
        ending_timestamp=_optional_int(opts, "endingtimestamp", "endingTimestamp", 0),
        starting_by_timestamp=_timestamps(opts, "startingOffsetsByTimestamp"),
        ending_by_timestamp=_timestamps(opts, "endingOffsetsByTimestamp"),
        timestamp_strategy=_timestamp_strategy(opts),
        max_offsets_per_trigger=_optional_int(opts, "maxoffsetspertrigger",
                                              "maxOffsetsPerTrigger", 1),
        min_offsets_per_trigger=_optional_int(opts, "minoffsetspertrigger",
                                              "minOffsetsPerTrigger", 1),
        max_trigger_delay_ms=_duration_ms(opts, "maxTriggerDelay",
                                          DEFAULT_MAX_TRIGGER_DELAY_MS),
        min_partitions=_optional_int(opts, "minpartitions", "minPartitions", 1),
        max_records_per_partition=_optional_int(opts, "maxrecordsperpartition",
                                                "maxRecordsPerPartition", 1),
        fail_on_data_loss=_bool(opts, "failondataloss", "failOnDataLoss", True),
        include_headers=_bool(opts, "includeheaders", "includeHeaders", False),
        value=_value_encoding(opts),
        poll_timeout_ms=_optional_int(opts, "kafkaconsumer.polltimeoutms",
                                      "kafkaConsumer.pollTimeoutMs", 1) or 120_000,
        fetch_offset_retries=_int_or(opts, "fetchOffset.numRetries", 0, 3),
        fetch_offset_retry_interval_ms=_int_or(opts, "fetchOffset.retryIntervalMs", 0, 10),
        group_id=str(group_id),
        group_id_given=group_id_given,
    )


def parse_schema_options(options: Mapping[str, str]) -> tuple[ValueEncoding, bool]:
    """Only what shapes the columns: the value encoding and whether headers are included."""
    opts = _lower_keys(options)
    return _value_encoding(opts), _bool(opts, "includeheaders", "includeHeaders", False)


def parse_write_options(options: Mapping[str, str]) -> WriteOptions:
    opts = _lower_keys(options)
    _reject_unknown(opts, WRITE_OPTIONS, "write")
    topic = opts.get("topic")
    if topic is not None and not topic.strip():
        raise ConfigError("topic", "must not be empty")
    prefix = opts.get("transactionalidprefix")
    if prefix is not None and not prefix.strip():
        raise ConfigError("transactionalIdPrefix", "must not be empty")
    if "kafka.transactional.id" in opts:
        raise ConfigError("kafka.transactional.id", "one id would make the tasks fence each "
                          "other; set transactionalIdPrefix, and each task gets "
                          "<prefix>-<partition id>")
    parsed = WriteOptions(
        client_config=_client_config(opts),
        topic=topic,
        include_headers=_bool(opts, "includeheaders", "includeHeaders", False),
        value=_value_encoding(opts),
        transactional_id_prefix=None if prefix is None else prefix.strip(),
    )
    # A setting that rules transactions out (acks=1, say) fails here, not in every task.
    try:
        _check_client_config({**parsed.client_config,
                              "transactional_id": parsed.transactional_id(0)}, for_write=True)
    except ConfigError as exc:
        if exc.key != "kafka.transactional.id":
            raise
        raise _renamed(exc, "transactionalIdPrefix") from None
    return parsed


def _lower_keys(options: Mapping[str, str]) -> dict[str, str]:
    return {key.lower(): value for key, value in dict(options).items()}


def _reject_unknown(opts: Mapping[str, str], known: tuple[str, ...], action: str) -> None:
    lowered = {name.lower() for name in known}
    for key in opts:
        if key.startswith(KAFKA_PREFIX) or key in lowered or key in SPARK_INJECTED:
            continue
        by_lowered = {name.lower(): name for name in known}
        nearest = nearest_key(key, by_lowered)
        hint = f"; did you mean {by_lowered[nearest]}?" if nearest else ""
        raise ConfigError(key, f"unknown option for a kafkalite {action} (Spark passes option "
                          f"names in lower case){hint} Known options: kafka.*, "
                          f"{', '.join(known)}")


def _client_config(opts: Mapping[str, str]) -> dict[str, Any]:
    config: dict[str, Any] = {}
    security: dict[str, str] = {}
    for key, raw in opts.items():
        if not key.startswith(KAFKA_PREFIX):
            continue
        if is_security_property(key[len(KAFKA_PREFIX):]):
            security[key[len(KAFKA_PREFIX):]] = raw
            continue
        name, value = client_setting(key[len(KAFKA_PREFIX):], raw)
        if name in SOURCE_OWNED_CLIENT_KEYS:
            raise ConfigError(key, "is set by the kafkalite source itself and cannot be "
                              "overridden")
        config[name] = value
    try:
        config.update(security_settings(security))
    except ConfigError as exc:
        raise _renamed(exc, KAFKA_PREFIX + exc.key) from None
    if "bootstrap_servers" not in config:
        raise ConfigError("kafka.bootstrap.servers", "is required")
    config["bootstrap_servers"] = str(config["bootstrap_servers"])
    if "client_id" in config:
        config["client_id"] = str(config["client_id"])
    return config


def _renamed(exc: ConfigError, key: str) -> ConfigError:
    """``exc`` naming the option ``key`` instead of the name it was raised with."""
    return ConfigError(key, str(exc).removeprefix(f"{exc.key}: "))


def _check_client_config(config: Mapping[str, Any], for_write: bool) -> None:
    """Fail on the driver, before any task starts, when a client setting is wrong."""
    from kafkalite.consumer.config import validate_consumer_config
    from kafkalite.producer.config import validate_producer_config

    try:
        (validate_producer_config if for_write else validate_consumer_config)(config)
    except UnknownConfigError as exc:
        option = KAFKA_PREFIX + property_name(exc.key)
        raise UnknownConfigError(option, f"{exc.what} option", None if exc.suggestion is None
                                 else KAFKA_PREFIX + property_name(exc.suggestion)) from None
    except ConfigError as exc:
        raise ConfigError(KAFKA_PREFIX + property_name(exc.key), str(exc)) from None


def _selection(opts: Mapping[str, str]) -> TopicSelection:
    given = [name for name in ("subscribe", "subscribepattern", "assign") if name in opts]
    if len(given) != 1:
        raise ConfigError("subscribe", "give exactly one of 'subscribe', 'subscribePattern' "
                          f"or 'assign' (got {len(given)})")
    if "subscribe" in opts:
        topics = tuple(t.strip() for t in opts["subscribe"].split(",") if t.strip())
        if not topics:
            raise ConfigError("subscribe", "names no topic")
        return TopicSelection(topics=topics)
    if "subscribepattern" in opts:
        pattern = opts["subscribepattern"]
        try:
            re.compile(pattern)
        except re.error as exc:
            raise ConfigError("subscribePattern", f"not a valid regex: {exc}") from None
        return TopicSelection(pattern=pattern)
    return TopicSelection(partitions=parse_partition_list(opts["assign"], "assign"))


def _optional_int(opts: Mapping[str, str], key: str, name: str, minimum: int) -> int | None:
    if key not in opts:
        return None
    try:
        value = int(opts[key])
    except ValueError:
        raise ConfigError(name, f"must be an integer, not {opts[key]!r}") from None
    if value < minimum:
        raise ConfigError(name, f"must be at least {minimum}, not {value}")
    return value


def _int_or(opts: Mapping[str, str], name: str, minimum: int, default: int) -> int:
    value = _optional_int(opts, name.lower(), name, minimum)
    return default if value is None else value


def _timestamps(opts: Mapping[str, str], name: str) -> PartitionOffsets | None:
    """``{"topic": {"0": 1700000000000}}``: epoch milliseconds per partition."""
    if name.lower() not in opts:
        return None
    timestamps = offsets_from_json(load_json(opts[name.lower()], name), name)
    for tp, timestamp in timestamps.items():
        if timestamp < 0:
            raise ConfigError(name, f"timestamp {timestamp} of {tp.topic}-{tp.partition} is "
                              "negative (give epoch milliseconds)")
    return timestamps


def _timestamp_strategy(opts: Mapping[str, str]) -> TimestampStrategy:
    text = opts.get("startingoffsetsbytimestampstrategy", "error").strip().lower()
    if text not in ("error", "latest"):
        raise ConfigError("startingOffsetsByTimestampStrategy",
                          f"must be 'error' or 'latest', not {text!r}")
    return "error" if text == "error" else "latest"


_DURATION = re.compile(r"(\d+)\s*(ms|s|m|h|d)?")
_UNIT_MS = {"ms": 1, "s": 1000, "m": 60_000, "h": 3_600_000, "d": 86_400_000}


def _duration_ms(opts: Mapping[str, str], name: str, default: int) -> int:
    """Spark's time strings: ``15m``, ``30s``, ``500ms`` (a bare number is milliseconds)."""
    if name.lower() not in opts:
        return default
    match = _DURATION.fullmatch(opts[name.lower()].strip().lower())
    if match is None:
        raise ConfigError(name, f"must be a duration such as 15m, 30s or 500ms, not "
                          f"{opts[name.lower()]!r}")
    return int(match.group(1)) * _UNIT_MS[match.group(2) or "ms"]


def _bool(opts: Mapping[str, str], key: str, name: str, default: bool) -> bool:
    if key not in opts:
        return default
    text = opts[key].strip().lower()
    if text not in ("true", "false"):
        raise ConfigError(name, f"must be 'true' or 'false', not {opts[key]!r}")
    return text == "true"


def _value_encoding(opts: Mapping[str, str]) -> ValueEncoding:
    fmt = opts.get("valueformat", "binary").strip().lower()
    schema = opts.get("valueschema")
    if fmt == "binary":
        if schema is not None:
            raise ConfigError("valueSchema", "only applies with valueFormat=msgpack")
        return ValueEncoding()
    if fmt != "msgpack":
        raise ConfigError("valueFormat", f"must be 'binary' or 'msgpack', not {fmt!r}")
    if not schema or not schema.strip():
        raise ConfigError("valueSchema", "is required with valueFormat=msgpack (a DDL field "
                          "list such as 'user string, clicks int')")
    return ValueEncoding("msgpack", schema.strip())
