"""Broker configuration: Kafka's broker key names and defaults, from a .properties file.

Every key is parsed and checked up front, so a typo or a bad value stops the broker with
one message naming the key instead of surfacing later. Aliases follow Kafka's precedence:
``log.dirs`` over ``log.dir``; ``log.retention.ms`` over ``.minutes`` over ``.hours``;
``log.roll.ms`` over ``log.roll.hours``.

Listener: ``host.name`` / ``port`` is where the broker binds (the CLI's ``--host`` /
``--port``); ``advertised.host.name`` / ``advertised.port`` is what Metadata tells clients
(default: the bind host, or 127.0.0.1 for a wildcard bind, and the bound port).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kafkalite.errors import ConfigError
from kafkalite.protocol.java_properties import parse_properties
from kafkalite.protocol.primitives import INT32_MAX
from kafkalite_server.config_values import (
    LONG_MAX,
    Parser,
    boolean,
    choice,
    decimal,
    format_value,
    integer,
    never_when_max,
)
from kafkalite_server.group.consumer_migration import DEFAULT_MIGRATION_POLICY, MigrationPolicy
from kafkalite_server.log.cleaner_manager import NO_IO_LIMIT, CleanerConfig, check_map_size
from kafkalite_server.log.config import TIMESTAMP_TYPES, LogConfig
from kafkalite_server.log.decompression_limit import BATCH_DECOMPRESSED_MAX_BYTES
from kafkalite_server.log.open_files import MIN_OPEN_FILES, OPEN_FILES_MAX_AUTO
from kafkalite_server.replication.replica_selector import SELECTORS

_HOUR_MS = 60 * 60 * 1000


@dataclass(frozen=True)
class BrokerConfig:
    """One broker's settings; attribute names are Kafka's keys with ``_`` for ``.``."""

    broker_id: int = 0
    log_dirs: tuple[str, ...] = ("/tmp/kafkalite-logs",)
    host_name: str = "127.0.0.1"
    port: int = 9092
    advertised_host_name: str | None = None
    advertised_port: int | None = None
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_create_topics_enable: bool = True
    delete_topic_enable: bool = True
    log_segment_bytes: int = 1024 * 1024 * 1024
    log_roll_ms: int = 168 * _HOUR_MS
    log_retention_ms: int = 168 * _HOUR_MS
    log_retention_bytes: int = -1
    log_retention_check_interval_ms: int = 300_000
    log_index_interval_bytes: int = 4096
    log_index_size_max_bytes: int = 10 * 1024 * 1024
    log_flush_interval_messages: int | None = None
    log_flush_interval_ms: int | None = None
    log_flush_offset_checkpoint_interval_ms: int = 60_000
    log_cleanup_policy: str = "delete"
    log_message_timestamp_type: str = "CreateTime"
    message_max_bytes: int = 1024 * 1024 + 12
    socket_request_max_bytes: int = 100 * 1024 * 1024
    queued_max_request_bytes: int = 100 * 1024 * 1024
    """Bound on request bytes buffered over all connections; -1: no bound (Kafka's default)."""
    connections_max_idle_ms: int = 600_000
    """Close a connection with no request in progress after this long; -1: never."""
    kafkalite_request_receive_timeout_ms: int = 60_000
    """Close a connection whose request has not fully arrived this long after its first
    byte, including time stalled by ``queued.max.request.bytes``; -1: never."""
    min_insync_replicas: int = 1
    offsets_topic_num_partitions: int = 50
    offsets_topic_replication_factor: int = 3
    offsets_topic_segment_bytes: int = 100 * 1024 * 1024
    group_initial_rebalance_delay_ms: int = 3000
    group_min_session_timeout_ms: int = 6000
    group_max_session_timeout_ms: int = 1_800_000
    # --- transaction coordinator (Kafka's names and defaults, replication as offsets topic)
    transaction_state_log_num_partitions: int = 50
    transaction_state_log_replication_factor: int = 3
    transaction_state_log_min_isr: int = 2
    transaction_state_log_segment_bytes: int = 100 * 1024 * 1024
    transaction_max_timeout_ms: int = 900_000
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = 10_000
    transactional_id_expiration_ms: int = 7 * 24 * _HOUR_MS
    transaction_remove_expired_transaction_cleanup_interval_ms: int = _HOUR_MS
    transaction_partition_verification_enable: bool = True
    # --- consumer groups (KIP-848; Kafka's names and defaults)
    group_consumer_session_timeout_ms: int = 45_000
    group_consumer_heartbeat_interval_ms: int = 5000
    group_consumer_min_session_timeout_ms: int = 45_000
    group_consumer_max_session_timeout_ms: int = 60_000
    group_consumer_min_heartbeat_interval_ms: int = 5000
    group_consumer_max_heartbeat_interval_ms: int = 15_000
    group_consumer_max_size: int = INT32_MAX
    group_consumer_assignors: tuple[str, ...] = ("uniform", "range")
    group_consumer_migration_policy: str = DEFAULT_MIGRATION_POLICY.value
    # --- share groups (KIP-932) and the share coordinator (Kafka's names and defaults)
    group_share_record_lock_duration_ms: int = 30_000
    group_share_min_record_lock_duration_ms: int = 15_000
    group_share_max_record_lock_duration_ms: int = 60_000
    group_share_delivery_count_limit: int = 5
    group_share_partition_max_record_locks: int = 2000
    group_share_session_timeout_ms: int = 45_000
    group_share_heartbeat_interval_ms: int = 5000
    group_share_min_session_timeout_ms: int = 45_000
    group_share_max_session_timeout_ms: int = 60_000
    group_share_min_heartbeat_interval_ms: int = 5000
    group_share_max_heartbeat_interval_ms: int = 15_000
    group_share_max_size: int = 200
    group_share_max_share_sessions: int = 2000
    share_coordinator_state_topic_num_partitions: int = 50
    share_coordinator_state_topic_replication_factor: int = 3
    share_coordinator_state_topic_min_isr: int = 2
    share_coordinator_state_topic_segment_bytes: int = 100 * 1024 * 1024
    share_coordinator_snapshot_update_records_per_snapshot: int = 500
    share_coordinator_write_timeout_ms: int = 5000
    # --- committed offsets (group coordinator)
    offsets_retention_minutes: int = 7 * 24 * 60
    offsets_retention_check_interval_ms: int = 600_000
    # --- log cleaner (compaction) and segment rolling/deletion
    log_cleaner_enable: bool = True
    log_cleaner_threads: int = 1
    log_cleaner_dedupe_buffer_size: int = 128 * 1024 * 1024
    log_cleaner_io_buffer_size: int = 512 * 1024
    log_cleaner_io_max_bytes_per_second: float = NO_IO_LIMIT
    log_cleaner_backoff_ms: int = 15_000
    log_cleaner_min_cleanable_ratio: float = 0.5
    log_cleaner_delete_retention_ms: int = 24 * _HOUR_MS
    log_cleaner_min_compaction_lag_ms: int = 0
    log_cleaner_max_compaction_lag_ms: int = LONG_MAX
    log_segment_delete_delay_ms: int = 60_000
    log_roll_jitter_ms: int = 0
    # --- end of log cleaner block
    kafkalite_log_open_files_max: int = OPEN_FILES_MAX_AUTO
    """Segment files open at once (an LRU cache); -1: half of the soft RLIMIT_NOFILE."""
    producer_id_expiration_ms: int = 24 * _HOUR_MS
    producer_id_expiration_check_interval_ms: int = 600_000
    max_request_partition_size_limit: int = 2000
    """The most partitions one DescribeTopicPartitions response describes (the request may
    ask for fewer)."""
    fetch_max_bytes: int = 55 * 1024 * 1024
    """A consumer fetch's response bytes at most, and the down-converted bytes (Fetch
    v0-3) all responses hold in memory together."""
    kafkalite_batch_decompressed_max_bytes: int = BATCH_DECOMPRESSED_MAX_BYTES
    """The most bytes one batch's records may decompress to, whatever a topic's
    max.message.bytes says (bounds what one batch costs the broker)."""
    kafkalite_metrics_listener: str | None = None
    """``HOST:PORT`` of the Prometheus ``/metrics`` endpoint; unset: none is served."""
    # -- cluster (ZooKeeper mode; without zookeeper.connect the broker is standalone)
    broker_rack: str | None = None
    replica_selector_class: str | None = None
    """KIP-392: RackAwareReplicaSelector names a follower in the consumer's rack."""
    zookeeper_connect: str | None = None
    zookeeper_session_timeout_ms: int = 18_000
    zookeeper_connection_timeout_ms: int = 18_000
    unclean_leader_election_enable: bool = False
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_check_interval_seconds: int = 300
    leader_imbalance_per_broker_percentage: int = 10
    controlled_shutdown_enable: bool = True
    controlled_shutdown_max_retries: int = 3
    controlled_shutdown_retry_backoff_ms: int = 5000
    controller_socket_timeout_ms: int = 30_000
    # -- replication
    replica_lag_time_max_ms: int = 30_000
    replica_fetch_wait_max_ms: int = 500
    replica_fetch_min_bytes: int = 1
    replica_fetch_max_bytes: int = 1024 * 1024
    replica_fetch_response_max_bytes: int = 10 * 1024 * 1024
    replica_fetch_backoff_ms: int = 1000
    replica_socket_timeout_ms: int = 30_000
    replica_high_watermark_checkpoint_interval_ms: int = 5000
    # -- client quotas
    quota_window_num: int = 11
    quota_window_size_seconds: int = 1
    # -- security (listeners, TLS, SASL, authorization): see kafkalite_server/security
    listeners: str | None = None
    """``NAME://host:port,...``; unset: one PLAINTEXT listener on ``host.name:port``."""
    advertised_listeners: str | None = None
    listener_security_protocol_map: str | None = None
    inter_broker_listener_name: str | None = None
    security_inter_broker_protocol: str | None = None
    """Kafka's older way to pick the inter-broker listener: the one named as the protocol."""
    sasl_mechanism_inter_broker_protocol: str = "PLAIN"
    ssl_keystore_type: str = "PEM"
    ssl_keystore_location: str | None = None
    ssl_keystore_password: str | None = None
    ssl_key_password: str | None = None
    ssl_truststore_type: str = "PEM"
    ssl_truststore_location: str | None = None
    ssl_client_auth: str = "none"
    ssl_enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    ssl_endpoint_identification_algorithm: str = "https"
    sasl_enabled_mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
    sasl_jaas_config: str | None = None
    authorizer_class_name: str = ""
    super_users: str = ""
    allow_everyone_if_no_acl_found: bool = False
    kafkalite_allow_anonymous_super_user: bool = False
    """Start although ``super.users`` names User:ANONYMOUS and a listener lets anyone in as
    that principal (see ``docs/security.md``)."""
    connection_failed_authentication_delay_ms: int = 100
    """How long the answer to a failed login (and the connection's close) is held back."""
    connections_max_reauth_ms: int = 0
    """KIP-368: a SASL session's longest lifetime before the client must re-authenticate
    (0: no limit); per listener and mechanism as
    ``listener.name.<l>.<mechanism>.connections.max.reauth.ms``."""
    listener_overrides: tuple[tuple[str, str], ...] = ()
    """``listener.name.<listener>.<key>`` settings, as (full key, value) pairs."""
    explicit: frozenset[str] = field(default=frozenset(), compare=False)
    """Keys set by the operator (DescribeConfigs reports the others as defaults)."""

    @classmethod
    def from_properties(cls, settings: Mapping[str, str]) -> BrokerConfig:
        """Parses Kafka-named settings; an unknown key or bad value raises ConfigError."""
        values: dict[str, Any] = {}
        overrides = tuple(sorted((key, str(text).strip()) for key, text in settings.items()
                                 if key.startswith(LISTENER_PREFIX)))
        for key, text in settings.items():
            if key.startswith(LISTENER_PREFIX):
                _check_listener_override(key)
                continue
            spec = _SPECS.get(key)
            if spec is None:
                raise ConfigError(key, "unknown broker config")
            values[key] = spec.parse(key, str(text).strip())
        chosen: dict[str, tuple[int, Any]] = {}
        for key, value in values.items():
            spec = _SPECS[key]
            if spec.target not in chosen or spec.rank < chosen[spec.target][0]:
                chosen[spec.target] = (spec.rank, value)
        changes = {target: value for target, (_rank, value) in chosen.items()}
        config = dataclasses.replace(cls(), **changes, listener_overrides=overrides,
                                     explicit=frozenset(settings))
        problem = check_map_size(config.cleaner_config())
        if problem is not None:
            raise ConfigError("log.cleaner.dedupe.buffer.size", problem)
        _check_share_lock_duration(config)
        _check_group_timeout_bounds(config)
        return config

    @property
    def advertised_host(self) -> str:
        if self.advertised_host_name:
            return self.advertised_host_name
        return "127.0.0.1" if self.host_name in ("", "0.0.0.0", "::") else self.host_name

    def log_config(self) -> LogConfig:
        """The default topic config these broker settings imply."""
        return LogConfig(
            segment_bytes=self.log_segment_bytes,
            segment_ms=self.log_roll_ms,
            segment_index_bytes=self.log_index_size_max_bytes,
            index_interval_bytes=self.log_index_interval_bytes,
            retention_ms=self.log_retention_ms,
            retention_bytes=self.log_retention_bytes,
            cleanup_policy=self.log_cleanup_policy,
            message_timestamp_type=self.log_message_timestamp_type,
            max_message_bytes=self.message_max_bytes,
            flush_messages=self.log_flush_interval_messages,
            flush_ms=self.log_flush_interval_ms,
            min_insync_replicas=self.min_insync_replicas,
            file_delete_delay_ms=self.log_segment_delete_delay_ms,
            segment_jitter_ms=self.log_roll_jitter_ms,
            delete_retention_ms=self.log_cleaner_delete_retention_ms,
            min_cleanable_dirty_ratio=self.log_cleaner_min_cleanable_ratio,
            min_compaction_lag_ms=self.log_cleaner_min_compaction_lag_ms,
            max_compaction_lag_ms=self.log_cleaner_max_compaction_lag_ms,
        )

    def cleaner_config(self) -> CleanerConfig:
        """The log cleaner's settings (``log.cleaner.*``)."""
        return CleanerConfig(
            enable=self.log_cleaner_enable,
            threads=self.log_cleaner_threads,
            dedupe_buffer_size=self.log_cleaner_dedupe_buffer_size,
            io_buffer_size=self.log_cleaner_io_buffer_size,
            io_max_bytes_per_second=self.log_cleaner_io_max_bytes_per_second,
            backoff_ms=self.log_cleaner_backoff_ms,
        )

    def describe(self) -> list[tuple[str, str | None, bool]]:
        """(key, value, is default) for DescribeConfigs of the broker resource."""
        rows = []
        for key, spec in _SPECS.items():
            if spec.rank != 0:
                continue
            value = getattr(self, spec.target)
            text = None if value is None and key in _UNSET_IS_NULL else format_value(value)
            if key in SENSITIVE_KEYS:
                text = None
            rows.append((key, text, key not in self.explicit))
        return rows


def read_properties(path: str | Path) -> dict[str, str]:
    """A Java .properties file: ``key=value`` / ``key: value`` / ``key value`` lines,
    ``#`` and ``!`` comments, backslash line continuation."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except OSError as exc:
        raise ConfigError(str(path), f"cannot read config file: {exc.strerror}") from None
    return parse_properties(text.splitlines())


# ------------------------------------------------------------------------------ parsers

def _migration_policy(key: str, text: str) -> str:
    """One of Kafka's policies, in any case (Kafka's validator ignores it)."""
    return choice(tuple(p.value for p in MigrationPolicy))(key, text.strip().lower())


def _assignor_names(key: str, text: str) -> tuple[str, ...]:
    """Server-side assignors by name, the first being the default; Kafka's class names of
    its two assignors are accepted as their short names."""
    names = tuple(_ASSIGNOR_CLASSES.get(name, name) for name in (part.strip() for part in text.split(",")) if name)
    unknown = [name for name in names if name not in ("uniform", "range")]
    if unknown or not names:
        raise ConfigError(key, f"{text!r}: the assignors are uniform and range")
    return names


_ASSIGNOR_CLASSES = {
    "org.apache.kafka.coordinator.group.assignor.UniformAssignor": "uniform",
    "org.apache.kafka.coordinator.group.assignor.RangeAssignor": "range",
}


def _string(key: str, text: str) -> str:
    if not text:
        raise ConfigError(key, "must not be empty")
    return text


def _replica_selector(key: str, text: str) -> str:
    if text not in SELECTORS:
        raise ConfigError(key, f"{text!r} is not one of {sorted(SELECTORS)}")
    return text


def split_host_port(key: str, text: str) -> tuple[str, int]:
    """``HOST:PORT`` (``[v6]:PORT`` for an IPv6 address; port 0 picks a free one)."""
    host, colon, port = text.rpartition(":")
    host = host.removeprefix("[").removesuffix("]")
    if not colon or not host or not port.isdigit() or int(port) > 65535:
        raise ConfigError(key, f"{text!r} is not HOST:PORT")
    return host, int(port)


def _host_port(key: str, text: str) -> str:
    split_host_port(key, text)
    return text


def _paths(key: str, text: str) -> tuple[str, ...]:
    paths = tuple(part.strip() for part in text.split(",") if part.strip())
    if not paths:
        raise ConfigError(key, "needs at least one directory")
    return paths


def _cleanup_policy(key: str, text: str) -> str:
    """Parsed by the topic-level rules (same values), reported under the broker key."""
    try:
        return LogConfig.from_topic_configs(LogConfig(), {"cleanup.policy": text}).cleanup_policy
    except ConfigError as exc:
        raise ConfigError(key, str(exc).removeprefix(f"{exc.key}: ")) from None


def _bound(minimum: int, minus_one: str = "no bound") -> Parser:
    """An integer >= ``minimum``, or -1 for "no bound" (or what ``minus_one`` says)."""
    parse_int = integer(-1)

    def parse(key: str, text: str) -> int:
        value = parse_int(key, text)
        if value != -1 and value < minimum:
            raise ConfigError(key, f"{value} must be -1 ({minus_one}) or at least {minimum}")
        return value

    return parse


@dataclass(frozen=True)
class _Spec:
    target: str
    parse: Parser
    rank: int = 0
    """0 for the primary key of a setting; aliases have higher ranks (lower wins)."""


def _group_timeout_bounds(group_type: str) -> dict[str, _Spec]:
    """``group.<type>.min/max.session.timeout.ms`` and ``...heartbeat.interval.ms``: what a
    group's own timeouts (its GROUP configs) may be set to."""
    return {f"group.{group_type}.{end}.{name}": _Spec(
                f"group_{group_type}_{end}_{name.replace('.', '_')}", integer(1, INT32_MAX))
            for end in ("min", "max") for name in ("session.timeout.ms", "heartbeat.interval.ms")}


_SPECS: dict[str, _Spec] = {
    "broker.id": _Spec("broker_id", integer(0, INT32_MAX)),
    "log.dirs": _Spec("log_dirs", _paths),
    "log.dir": _Spec("log_dirs", _paths, 1),
    "host.name": _Spec("host_name", _string),
    "port": _Spec("port", integer(0, 65535)),
    "advertised.host.name": _Spec("advertised_host_name", _string),
    "advertised.port": _Spec("advertised_port", integer(1, 65535)),
    "num.partitions": _Spec("num_partitions", integer(1, INT32_MAX)),
    "default.replication.factor": _Spec("default_replication_factor", integer(1, 32767)),
    "auto.create.topics.enable": _Spec("auto_create_topics_enable", boolean),
    "delete.topic.enable": _Spec("delete_topic_enable", boolean),
    "log.segment.bytes": _Spec("log_segment_bytes", integer(14, INT32_MAX)),
    "log.roll.ms": _Spec("log_roll_ms", integer(1)),
    "log.roll.hours": _Spec("log_roll_ms", integer(1, scale=_HOUR_MS), 1),
    "log.retention.ms": _Spec("log_retention_ms", integer(-1)),
    "log.retention.minutes": _Spec("log_retention_ms", integer(-1, scale=60_000), 1),
    "log.retention.hours": _Spec("log_retention_ms", integer(-1, scale=_HOUR_MS), 2),
    "log.retention.bytes": _Spec("log_retention_bytes", integer(-(2**63))),
    "log.retention.check.interval.ms": _Spec("log_retention_check_interval_ms", integer(1)),
    "log.index.interval.bytes": _Spec("log_index_interval_bytes", integer(0, INT32_MAX)),
    "log.index.size.max.bytes": _Spec("log_index_size_max_bytes", integer(12, INT32_MAX)),
    "log.flush.interval.messages": _Spec("log_flush_interval_messages", never_when_max(1)),
    "log.flush.interval.ms": _Spec("log_flush_interval_ms", never_when_max(0)),
    "log.flush.offset.checkpoint.interval.ms": _Spec(
        "log_flush_offset_checkpoint_interval_ms", integer(1, INT32_MAX)),
    "log.cleanup.policy": _Spec("log_cleanup_policy", _cleanup_policy),
    "log.message.timestamp.type": _Spec("log_message_timestamp_type", choice(TIMESTAMP_TYPES)),
    "message.max.bytes": _Spec("message_max_bytes", integer(0, INT32_MAX)),
    "socket.request.max.bytes": _Spec("socket_request_max_bytes", integer(1, INT32_MAX)),
    "queued.max.request.bytes": _Spec("queued_max_request_bytes", _bound(1)),
    "connections.max.idle.ms": _Spec("connections_max_idle_ms", _bound(1)),
    "kafkalite.request.receive.timeout.ms": _Spec("kafkalite_request_receive_timeout_ms",
                                                  _bound(1)),
    "min.insync.replicas": _Spec("min_insync_replicas", integer(1, INT32_MAX)),
    "offsets.topic.num.partitions": _Spec("offsets_topic_num_partitions", integer(1, INT32_MAX)),
    "offsets.topic.replication.factor": _Spec(
        "offsets_topic_replication_factor", integer(1, 32767)),
    "offsets.topic.segment.bytes": _Spec("offsets_topic_segment_bytes", integer(1, INT32_MAX)),
    "group.initial.rebalance.delay.ms": _Spec(
        "group_initial_rebalance_delay_ms", integer(0, INT32_MAX)),
    "group.min.session.timeout.ms": _Spec("group_min_session_timeout_ms", integer(0, INT32_MAX)),
    "group.max.session.timeout.ms": _Spec("group_max_session_timeout_ms", integer(0, INT32_MAX)),
    "transaction.state.log.num.partitions": _Spec("transaction_state_log_num_partitions",
                                                  integer(1, INT32_MAX)),
    "transaction.state.log.replication.factor": _Spec(
        "transaction_state_log_replication_factor", integer(1, 32767)),
    "transaction.state.log.min.isr": _Spec("transaction_state_log_min_isr",
                                           integer(1, INT32_MAX)),
    "transaction.state.log.segment.bytes": _Spec("transaction_state_log_segment_bytes",
                                                 integer(1, INT32_MAX)),
    "transaction.max.timeout.ms": _Spec("transaction_max_timeout_ms", integer(1, INT32_MAX)),
    "transaction.abort.timed.out.transaction.cleanup.interval.ms": _Spec(
        "transaction_abort_timed_out_transaction_cleanup_interval_ms", integer(1, INT32_MAX)),
    "transactional.id.expiration.ms": _Spec("transactional_id_expiration_ms",
                                            integer(1, INT32_MAX)),
    "transaction.remove.expired.transaction.cleanup.interval.ms": _Spec(
        "transaction_remove_expired_transaction_cleanup_interval_ms", integer(1, INT32_MAX)),
    "transaction.partition.verification.enable": _Spec(
        "transaction_partition_verification_enable", boolean),
    # --- consumer groups (KIP-848)
    "group.consumer.session.timeout.ms": _Spec("group_consumer_session_timeout_ms",
                                               integer(1, INT32_MAX)),
    "group.consumer.heartbeat.interval.ms": _Spec("group_consumer_heartbeat_interval_ms",
                                                  integer(1, INT32_MAX)),
    **_group_timeout_bounds("consumer"),
    "group.consumer.max.size": _Spec("group_consumer_max_size", integer(1, INT32_MAX)),
    "group.consumer.assignors": _Spec("group_consumer_assignors", _assignor_names),
    "group.consumer.migration.policy": _Spec("group_consumer_migration_policy",
                                             _migration_policy),
    # --- share groups (KIP-932) and the share coordinator
    "group.share.record.lock.duration.ms": _Spec("group_share_record_lock_duration_ms",
                                                 integer(1000, 3_600_000)),
    "group.share.min.record.lock.duration.ms": _Spec("group_share_min_record_lock_duration_ms",
                                                     integer(1000, 3_600_000)),
    "group.share.max.record.lock.duration.ms": _Spec("group_share_max_record_lock_duration_ms",
                                                     integer(1000, 3_600_000)),
    "group.share.delivery.count.limit": _Spec("group_share_delivery_count_limit",
                                              integer(2, 10)),
    "group.share.partition.max.record.locks": _Spec("group_share_partition_max_record_locks",
                                                    integer(100, 10_000)),
    "group.share.session.timeout.ms": _Spec("group_share_session_timeout_ms",
                                            integer(1, INT32_MAX)),
    "group.share.heartbeat.interval.ms": _Spec("group_share_heartbeat_interval_ms",
                                               integer(1, INT32_MAX)),
    **_group_timeout_bounds("share"),
    "group.share.max.size": _Spec("group_share_max_size", integer(1, 1000)),
    "group.share.max.share.sessions": _Spec("group_share_max_share_sessions",
                                            integer(1, INT32_MAX)),
    "share.coordinator.state.topic.num.partitions": _Spec(
        "share_coordinator_state_topic_num_partitions", integer(1, INT32_MAX)),
    "share.coordinator.state.topic.replication.factor": _Spec(
        "share_coordinator_state_topic_replication_factor", integer(1, 32767)),
    "share.coordinator.state.topic.min.isr": _Spec("share_coordinator_state_topic_min_isr",
                                                   integer(1, 32767)),
    "share.coordinator.state.topic.segment.bytes": _Spec(
        "share_coordinator_state_topic_segment_bytes", integer(1, INT32_MAX)),
    "share.coordinator.snapshot.update.records.per.snapshot": _Spec(
        "share_coordinator_snapshot_update_records_per_snapshot", integer(0, 500)),
    "share.coordinator.write.timeout.ms": _Spec("share_coordinator_write_timeout_ms",
                                                integer(1, INT32_MAX)),
    # --- committed offsets (group coordinator)
    "offsets.retention.minutes": _Spec("offsets_retention_minutes", integer(1, INT32_MAX)),
    "offsets.retention.check.interval.ms": _Spec("offsets_retention_check_interval_ms",
                                                 integer(1)),
    # --- log cleaner (compaction) and segment rolling/deletion
    "log.cleaner.enable": _Spec("log_cleaner_enable", boolean),
    "log.cleaner.threads": _Spec("log_cleaner_threads", integer(0, INT32_MAX)),
    "log.cleaner.dedupe.buffer.size": _Spec("log_cleaner_dedupe_buffer_size", integer(0)),
    "log.cleaner.io.buffer.size": _Spec("log_cleaner_io_buffer_size", integer(1, INT32_MAX)),
    "log.cleaner.io.max.bytes.per.second": _Spec("log_cleaner_io_max_bytes_per_second",
                                                 decimal(0.0, NO_IO_LIMIT)),
    "log.cleaner.backoff.ms": _Spec("log_cleaner_backoff_ms", integer(0)),
    "log.cleaner.min.cleanable.ratio": _Spec("log_cleaner_min_cleanable_ratio",
                                             decimal(0.0, 1.0)),
    "log.cleaner.delete.retention.ms": _Spec("log_cleaner_delete_retention_ms", integer(0)),
    "log.cleaner.min.compaction.lag.ms": _Spec("log_cleaner_min_compaction_lag_ms", integer(0)),
    "log.cleaner.max.compaction.lag.ms": _Spec("log_cleaner_max_compaction_lag_ms", integer(1)),
    "log.segment.delete.delay.ms": _Spec("log_segment_delete_delay_ms", integer(0)),
    "log.roll.jitter.ms": _Spec("log_roll_jitter_ms", integer(0)),
    "log.roll.jitter.hours": _Spec("log_roll_jitter_ms", integer(0, scale=_HOUR_MS), 1),
    "kafkalite.log.open.files.max": _Spec("kafkalite_log_open_files_max",
                                          _bound(MIN_OPEN_FILES, "half of RLIMIT_NOFILE")),
    "producer.id.expiration.ms": _Spec("producer_id_expiration_ms", integer(1, INT32_MAX)),
    "producer.id.expiration.check.interval.ms": _Spec(
        "producer_id_expiration_check_interval_ms", integer(1, INT32_MAX)),
    "kafkalite.batch.decompressed.max.bytes": _Spec("kafkalite_batch_decompressed_max_bytes",
                                                    integer(1, INT32_MAX)),
    "fetch.max.bytes": _Spec("fetch_max_bytes", integer(1024, INT32_MAX)),
    "max.request.partition.size.limit": _Spec("max_request_partition_size_limit",
                                              integer(1, INT32_MAX)),
    "kafkalite.metrics.listener": _Spec("kafkalite_metrics_listener", _host_port),
}

_CLUSTER_SPECS: dict[str, _Spec] = {
    "broker.rack": _Spec("broker_rack", _string),
    "replica.selector.class": _Spec("replica_selector_class", _replica_selector),
    "zookeeper.connect": _Spec("zookeeper_connect", _string),
    "zookeeper.session.timeout.ms": _Spec("zookeeper_session_timeout_ms", integer(1, INT32_MAX)),
    "zookeeper.connection.timeout.ms": _Spec(
        "zookeeper_connection_timeout_ms", integer(1, INT32_MAX)),
    "unclean.leader.election.enable": _Spec("unclean_leader_election_enable", boolean),
    "auto.leader.rebalance.enable": _Spec("auto_leader_rebalance_enable", boolean),
    "leader.imbalance.check.interval.seconds": _Spec(
        "leader_imbalance_check_interval_seconds", integer(1, INT32_MAX)),
    "leader.imbalance.per.broker.percentage": _Spec(
        "leader_imbalance_per_broker_percentage", integer(0, 100)),
    "controlled.shutdown.enable": _Spec("controlled_shutdown_enable", boolean),
    "controlled.shutdown.max.retries": _Spec("controlled_shutdown_max_retries",
                                             integer(0, INT32_MAX)),
    "controlled.shutdown.retry.backoff.ms": _Spec("controlled_shutdown_retry_backoff_ms",
                                                  integer(0, INT32_MAX)),
    "controller.socket.timeout.ms": _Spec("controller_socket_timeout_ms", integer(1, INT32_MAX)),
}
"""Cluster keys, kept in their own block (Kafka's names and defaults)."""
_REPLICATION_SPECS: dict[str, _Spec] = {
    "replica.lag.time.max.ms": _Spec("replica_lag_time_max_ms", integer(1, INT32_MAX)),
    "replica.fetch.wait.max.ms": _Spec("replica_fetch_wait_max_ms", integer(0, INT32_MAX)),
    "replica.fetch.min.bytes": _Spec("replica_fetch_min_bytes", integer(1, INT32_MAX)),
    "replica.fetch.max.bytes": _Spec("replica_fetch_max_bytes", integer(0, INT32_MAX)),
    "replica.fetch.response.max.bytes": _Spec("replica_fetch_response_max_bytes",
                                              integer(0, INT32_MAX)),
    "replica.fetch.backoff.ms": _Spec("replica_fetch_backoff_ms", integer(0, INT32_MAX)),
    "replica.socket.timeout.ms": _Spec("replica_socket_timeout_ms", integer(1, INT32_MAX)),
    "replica.high.watermark.checkpoint.interval.ms": _Spec(
        "replica_high_watermark_checkpoint_interval_ms", integer(1, INT32_MAX)),
}
"""Follower fetching and the ISR (Kafka's names and defaults)."""
_QUOTA_SPECS: dict[str, _Spec] = {
    "quota.window.num": _Spec("quota_window_num", integer(1, INT32_MAX)),
    "quota.window.size.seconds": _Spec("quota_window_size_seconds", integer(1, INT32_MAX)),
}
"""How client quotas measure rates: windows kept, and each window's length."""
_UNSET_IS_NULL = frozenset({"broker.rack", "replica.selector.class", "zookeeper.connect",
                            "kafkalite.metrics.listener"})
_SPECS.update(_CLUSTER_SPECS)
_SPECS.update(_REPLICATION_SPECS)
_SPECS.update(_QUOTA_SPECS)


def _listener_names(key: str, text: str) -> str:
    """``NAME://host:port,...`` checked for shape (names and ports are matched up later)."""
    from kafkalite_server.network.listeners import parse_endpoints

    parse_endpoints(key, text)
    return text


def _protocol_map(key: str, text: str) -> str:
    from kafkalite_server.network.listeners import parse_protocol_map

    parse_protocol_map(key, text)
    return text


def _names(key: str, text: str) -> tuple[str, ...]:
    return tuple(part.strip() for part in text.split(",") if part.strip())


def _optional_text(key: str, text: str) -> str:
    return text


def _super_users(key: str, text: str) -> str:
    for user in (part.strip() for part in text.split(";") if part.strip()):
        if ":" not in user:
            raise ConfigError(key, f"{user!r} is not a principal (write User:name)")
    return text


_SECURITY_SPECS: dict[str, _Spec] = {
    "listeners": _Spec("listeners", _listener_names),
    "advertised.listeners": _Spec("advertised_listeners", _listener_names),
    "listener.security.protocol.map": _Spec("listener_security_protocol_map", _protocol_map),
    "inter.broker.listener.name": _Spec("inter_broker_listener_name", _string),
    "security.inter.broker.protocol": _Spec("security_inter_broker_protocol", _string),
    "sasl.mechanism.inter.broker.protocol": _Spec("sasl_mechanism_inter_broker_protocol",
                                                  _string),
    "ssl.keystore.type": _Spec("ssl_keystore_type", choice(("PEM",))),
    "ssl.keystore.location": _Spec("ssl_keystore_location", _string),
    "ssl.keystore.password": _Spec("ssl_keystore_password", _optional_text),
    "ssl.key.password": _Spec("ssl_key_password", _optional_text),
    "ssl.truststore.type": _Spec("ssl_truststore_type", choice(("PEM",))),
    "ssl.truststore.location": _Spec("ssl_truststore_location", _string),
    "ssl.client.auth": _Spec("ssl_client_auth", choice(("none", "requested", "required"))),
    "ssl.enabled.protocols": _Spec("ssl_enabled_protocols", _names),
    "ssl.endpoint.identification.algorithm": _Spec("ssl_endpoint_identification_algorithm",
                                                   _optional_text),
    "sasl.enabled.mechanisms": _Spec("sasl_enabled_mechanisms", _names),
    "sasl.jaas.config": _Spec("sasl_jaas_config", _string),
    "authorizer.class.name": _Spec("authorizer_class_name", _optional_text),
    "super.users": _Spec("super_users", _super_users),
    "allow.everyone.if.no.acl.found": _Spec("allow_everyone_if_no_acl_found", boolean),
    "kafkalite.allow.anonymous.super.user": _Spec("kafkalite_allow_anonymous_super_user",
                                                  boolean),
    "connection.failed.authentication.delay.ms": _Spec(
        "connection_failed_authentication_delay_ms", integer(0, INT32_MAX)),
    "connections.max.reauth.ms": _Spec("connections_max_reauth_ms", integer(0)),
}
"""Security keys, in their own block (Kafka's names). Values are checked here for shape;
how listeners, TLS files and JAAS users fit together is checked when the broker builds its
listeners (``kafkalite_server.network.listeners``), still naming the key."""
_SPECS.update(_SECURITY_SPECS)
_UNSET_IS_NULL = _UNSET_IS_NULL | {"listeners", "advertised.listeners",
                                   "listener.security.protocol.map",
                                   "inter.broker.listener.name",
                                   "security.inter.broker.protocol", "ssl.keystore.location",
                                   "ssl.truststore.location", "sasl.jaas.config"}
SENSITIVE_KEYS = frozenset({"ssl.keystore.password", "ssl.key.password", "sasl.jaas.config"})
"""Described without their value (Kafka's PASSWORD type)."""

LISTENER_PREFIX = "listener.name."
_LISTENER_KEYS = frozenset({key for key in _SECURITY_SPECS
                            if key.startswith(("ssl.", "sasl."))})


def _check_share_lock_duration(config: BrokerConfig) -> None:
    low, high = (config.group_share_min_record_lock_duration_ms,
                 config.group_share_max_record_lock_duration_ms)
    if not low <= config.group_share_record_lock_duration_ms <= high:
        raise ConfigError("group.share.record.lock.duration.ms",
                          f"{config.group_share_record_lock_duration_ms} is not between "
                          f"group.share.min.record.lock.duration.ms ({low}) and "
                          f"group.share.max.record.lock.duration.ms ({high})")


def _check_group_timeout_bounds(config: BrokerConfig) -> None:
    for group_type in ("consumer", "share"):
        for name in ("session_timeout_ms", "heartbeat_interval_ms"):
            low = getattr(config, f"group_{group_type}_min_{name}")
            high = getattr(config, f"group_{group_type}_max_{name}")
            if low > high:
                key = name.replace("_", ".")
                raise ConfigError(f"group.{group_type}.max.{key}",
                                  f"{high} is less than group.{group_type}.min.{key} ({low})")


_MECHANISM_KEYS = frozenset({"sasl.jaas.config", "sasl.server.callback.handler.class",
                            "connections.max.reauth.ms"})
"""Keys set per listener and SASL mechanism (``listener.name.<l>.<mechanism>.<key>``)."""


def _check_listener_override(key: str) -> None:
    """``listener.name.<listener>.<ssl or sasl key>``, or ``...<mechanism>.<key>`` for a key
    of :data:`_MECHANISM_KEYS`."""
    rest = key[len(LISTENER_PREFIX):]
    name, _, setting = rest.partition(".")
    if not name or not setting:
        raise ConfigError(key, "expected listener.name.<listener>.<key>")
    if setting in _LISTENER_KEYS:
        return
    mechanism, _, per_mechanism = setting.partition(".")
    if per_mechanism in _MECHANISM_KEYS and mechanism:
        return
    raise ConfigError(key, f"{setting!r} cannot be set per listener")


def listener_value(config: BrokerConfig, listener: str, key: str) -> Any:
    """``listener.name.<listener>.<key>`` parsed, else the broker-wide ``key`` (listener
    names compare without case: Kafka lower-cases the prefix). Errors name the full key."""
    wanted = f"{LISTENER_PREFIX}{listener.lower()}.{key}"
    for full, text in config.listener_overrides:
        if full.lower() == wanted:
            spec = _SPECS.get(key)
            return text if spec is None else spec.parse(full, text)
    spec = _SPECS.get(key)
    return None if spec is None else getattr(config, spec.target)


BROKER_CONFIG_KEYS: tuple[str, ...] = tuple(_SPECS)
