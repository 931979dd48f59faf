"""A cluster broker's requests to the controller, written into ZooKeeper as Kafka's
ZooKeeper-mode brokers do (AdminZkClient): the elected controller watches these nodes.

CreateTopics places replicas here (AdminUtils over the live registered brokers) and writes
``/config/topics/<t>`` and ``/brokers/topics/<t>`` in one batch; DeleteTopics writes
``/admin/delete_topics/<t>``; CreatePartitions extends the assignment with a version check.
Producer ids come in blocks claimed from ``/latest_producer_id_block`` by conditional write,
so they are unique across the cluster.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    NotControllerError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster import zk_layout as zk
from kafkalite_server.cluster.config_changes import check_internal_topic
from kafkalite_server.cluster.config_watcher import ConfigChangeWatcher, notify_config_change
from kafkalite_server.cluster.coordination import (
    BadVersionError,
    Coordination,
    Create,
    NodeExistsError,
    NoNodeError,
)
from kafkalite_server.cluster.dynamic_config import (
    CLUSTER_DEFAULT,
    DynamicLayers,
    validate_dynamic,
)
from kafkalite_server.cluster.election_requests import ElectionType
from kafkalite_server.cluster.internal_topics import INTERNAL_TOPICS
from kafkalite_server.cluster.placement import assign_replicas
from kafkalite_server.cluster.producer_ids import ProducerEpochs
from kafkalite_server.cluster.topics import validate_topic_name, validated_topic_configs
from kafkalite_server.config import BrokerConfig
from kafkalite_server.log.config import LogConfig

if TYPE_CHECKING:
    from kafkalite_server.cluster.zk_controller import ZkController

TopicPartition = tuple[str, int]
log = logging.getLogger(__name__)

PRODUCER_ID_BLOCK_SIZE = 1000
_CONFLICT_RETRIES = 10


class ZkAdmin:
    def __init__(self, config: BrokerConfig, store: Callable[[], Coordination],
                 active_controller: Callable[[], ZkController | None] = lambda: None) -> None:
        """``store()`` is the broker's current session (it changes after an expiry);
        ``active_controller()`` is this broker's controller while it is the elected one."""
        self.config = config
        self.default_log_config = config.log_config()
        self._store = store
        self._active_controller = active_controller
        self.producer_ids = ZkProducerIds(config.broker_id, store)
        self.dynamic_configs = DynamicLayers()
        self._topic_configs: dict[str, LogConfig] = {}
        self._update_topic: Callable[[str], None] = lambda _topic: None
        self._hosted_topics: Callable[[], Iterable[str]] = tuple
        self._load_broker_layers()

    # ------------------------------------------------------------------ elections

    def elect_on_request(self, kind: ElectionType, keys: Iterable[TopicPartition] | None
                         ) -> dict[TopicPartition, int | BrokerResponseError]:
        """ElectLeaders goes straight to the elected controller, as in Kafka 2.4+: another
        broker answers NOT_CONTROLLER and the client follows the metadata's controller id."""
        controller = self._active_controller()
        if controller is None:
            raise NotControllerError(f"broker {self.config.broker_id} is not the controller")
        return controller.elect_on_request(kind, keys)

    # ------------------------------------------------------------------ dynamic configs

    async def follow_config_changes(self, update_topic: Callable[[str], None],
                                    hosted_topics: Callable[[], Iterable[str]]) -> None:
        """Runs until cancelled, following ``/config/changes``: a topic's change re-applies
        its config (``update_topic``); a broker layer's change re-applies every hosted
        topic's (the defaults under them moved)."""
        self._update_topic = update_topic
        self._hosted_topics = hosted_topics
        await ConfigChangeWatcher(self._store, self._config_changed).run()

    def _config_changed(self, entity: str | None) -> None:
        kind, _, name = (entity or "").partition("/")
        if kind == "topics":
            self._topic_configs.pop(name, None)
            self._update_topic(name)
            return
        self._topic_configs.clear()
        self._load_broker_layers()
        for topic in set(self._hosted_topics()):
            self._update_topic(topic)

    def _load_broker_layers(self) -> None:
        """The cluster-wide and this broker's own dynamic layers, from ZooKeeper. A layer
        that fails validation (written by hand) is logged and left out."""
        layers = DynamicLayers()
        for name in (CLUSTER_DEFAULT, str(self.config.broker_id)):
            values = self._read_config(zk.broker_config_path(name))
            try:
                validate_dynamic(values)
            except ConfigError as exc:
                log.error("%s is ignored: %s", zk.broker_config_path(name), exc)
                continue
            if name == CLUSTER_DEFAULT:
                layers.cluster_default = values
            elif values:
                layers.per_broker[self.config.broker_id] = values
        self.dynamic_configs = layers
        self.default_log_config = layers.log_defaults(self.config.log_config())

    def _read_config(self, path: str) -> dict[str, str]:
        try:
            return zk.decode_config(path, self._store().get(path)[0])
        except NoNodeError:
            return {}

    def _write_config(self, path: str, entity: str, configs: Mapping[str, str]) -> None:
        store = self._store()
        data = zk.encode_topic_config(dict(configs))
        try:
            store.set(path, data)
        except NoNodeError:
            store.create(path, data, makepath=True)
        notify_config_change(store, entity)

    def alter_topic_configs(self, name: str, configs: Mapping[str, str], *,
                            validate_only: bool = False) -> None:
        """``configs`` becomes the topic's complete set of overrides in
        ``/config/topics/<name>``; every broker hears of it through ``/config/changes``."""
        if self._store().exists(zk.topic_path(name)) is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        kept = validated_topic_configs(self.default_log_config, configs)
        check_internal_topic(name, LogConfig.from_topic_configs(self.default_log_config, kept))
        if not validate_only:
            self._write_config(zk.topic_config_path(name), zk.topic_config_entity(name), kept)

    def alter_broker_configs(self, resource_name: str, configs: Mapping[str, str], *,
                             validate_only: bool = False) -> None:
        """``configs`` becomes the dynamic layer ``resource_name`` (``""``: every broker's,
        in ``/config/brokers/<default>``; a broker id: that broker's own)."""
        try:
            validate_dynamic(configs)
            defaults = self.dynamic_configs.log_defaults(self.config.log_config(),
                                                         (resource_name, configs))
        except ConfigError as exc:
            raise InvalidConfigError(str(exc)) from None
        for topic in INTERNAL_TOPICS:
            overrides = self.topic_overrides(topic)
            if overrides is not None:
                check_internal_topic(topic, LogConfig.from_topic_configs(defaults, overrides))
        if validate_only:
            return
        self._write_config(zk.broker_config_path(resource_name),
                           zk.broker_config_entity(resource_name), configs)
        self._config_changed(zk.broker_config_entity(resource_name))

    # ------------------------------------------------------------------ configs

    def topic_overrides(self, topic: str) -> dict[str, str] | None:
        store = self._store()
        if store.exists(zk.topic_path(topic)) is None:
            return None
        try:
            return zk.decode_topic_config(topic, store.get(zk.topic_config_path(topic))[0])
        except NoNodeError:
            return {}

    def topic_config(self, topic: str) -> LogConfig:
        """Cached (logs ask on every UpdateMetadata); a change notification for the topic,
        or for a broker layer, drops the cached value."""
        config = self._topic_configs.get(topic)
        if config is None:
            overrides = self.topic_overrides(topic)
            config = (LogConfig.from_topic_configs(self.default_log_config, overrides)
                      if overrides else self.default_log_config)
            if overrides is not None:
                self._topic_configs[topic] = config
        return config

    # ------------------------------------------------------------------ topics

    def _live_brokers(self) -> dict[int, str | None]:
        store = self._store()
        brokers: dict[int, str | None] = {}
        for name in store.children(zk.BROKER_IDS):
            try:
                endpoint = zk.decode_broker(int(name), store.get(zk.broker_path(int(name)))[0])
            except NoNodeError:
                continue
            brokers[endpoint.node_id] = endpoint.rack
        return brokers

    def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     configs: Mapping[str, str | None] | None = None, *,
                     assignments: Mapping[int, list[int]] | None = None,
                     validate_only: bool = False) -> None:
        validate_topic_name(name)
        store = self._store()
        if store.exists(zk.topic_path(name)) is not None:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        live = self._live_brokers()
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise InvalidReplicaAssignmentError(
                    "give either assignments or num_partitions/replication_factor")
            assignment = _checked_assignment(dict(assignments), 0, live)
        else:
            count = self.config.num_partitions if num_partitions == -1 else num_partitions
            factor = (self.config.default_replication_factor if replication_factor == -1
                      else replication_factor)
            if count <= 0:
                raise InvalidPartitionsError(
                    f"number of partitions must be positive, got {count}")
            assignment = assign_replicas(live, count, factor)
        kept = validated_topic_configs(self.default_log_config, configs or {})
        if validate_only:
            return
        try:
            store.commit([Create(zk.topic_config_path(name), zk.encode_topic_config(kept)),
                          Create(zk.topic_path(name), zk.encode_assignment(assignment))])
        except NodeExistsError:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists") from None
        # Brokers may cache the configs of an earlier topic of this name.
        notify_config_change(store, zk.topic_config_entity(name))

    def delete_topic(self, name: str) -> None:
        if not self.config.delete_topic_enable:
            raise TopicDeletionDisabledError("delete.topic.enable is false")
        store = self._store()
        if store.exists(zk.topic_path(name)) is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        with contextlib.suppress(NodeExistsError):
            store.create(zk.delete_topic_path(name))

    def create_partitions(self, name: str, count: int,
                          assignments: list[list[int]] | None = None, *,
                          validate_only: bool = False) -> None:
        store = self._store()
        for _attempt in range(_CONFLICT_RETRIES):
            try:
                data, stat = store.get(zk.topic_path(name))
            except NoNodeError:
                raise UnknownTopicOrPartitionError(f"topic {name!r}") from None
            assignment = zk.decode_assignment(name, data)
            current = len(assignment)
            if count <= current:
                raise InvalidPartitionsError(f"topic {name!r} has {current} partitions; the "
                                             f"new count {count} must be more")
            live = self._live_brokers()
            if assignments is not None:
                if len(assignments) != count - current:
                    raise InvalidReplicaAssignmentError(
                        f"{len(assignments)} assignments for {count - current} new partitions")
                added = _checked_assignment(
                    {current + i: list(r) for i, r in enumerate(assignments)}, current, live)
            else:
                added = assign_replicas(live, count - current, len(assignment[0]),
                                        first_partition=current)
            if validate_only:
                return
            try:
                store.set(zk.topic_path(name), zk.encode_assignment({**assignment, **added}),
                          stat.version)
                return
            except BadVersionError:
                continue
        raise InvalidPartitionsError(f"topic {name!r} kept changing; try again")


def _checked_assignment(assignment: dict[int, list[int]], first: int,
                        live: Mapping[int, str | None]) -> dict[int, list[int]]:
    if sorted(assignment) != list(range(first, first + len(assignment))):
        raise InvalidReplicaAssignmentError(f"partition indexes must be consecutive from {first}")
    sizes = {len(replicas) for replicas in assignment.values()}
    if len(sizes) != 1 or 0 in sizes:
        raise InvalidReplicationFactorError("every partition needs the same, positive number "
                                            "of replicas")
    for index, replicas in assignment.items():
        if len(set(replicas)) != len(replicas):
            raise InvalidReplicaAssignmentError(f"partition {index} repeats a broker")
        unknown = [b for b in replicas if b not in live]
        if unknown:
            raise InvalidReplicaAssignmentError(f"partition {index}: unknown broker(s) {unknown}")
    return assignment


class ZkProducerIds:
    """Blocks of producer ids claimed cluster-wide; a claimed block is never reissued."""

    def __init__(self, broker_id: int, store: Callable[[], Coordination]) -> None:
        self.broker_id = broker_id
        self._store = store
        self._next = 0
        self._end = 0
        self.epochs = ProducerEpochs(self)  # type: ignore[arg-type]

    def allocate(self) -> int:
        if self._next >= self._end:
            self._next, self._end = self._claim_block()
        producer_id = self._next
        self._next += 1
        return producer_id

    def _claim_block(self) -> tuple[int, int]:
        store = self._store()
        for _attempt in range(_CONFLICT_RETRIES):
            try:
                data, stat = store.get(zk.PRODUCER_ID_BLOCK)
            except NoNodeError:
                start = 0
                try:
                    store.create(zk.PRODUCER_ID_BLOCK, zk.encode_producer_id_block(
                        self.broker_id, start, start + PRODUCER_ID_BLOCK_SIZE - 1))
                    return start, start + PRODUCER_ID_BLOCK_SIZE
                except NodeExistsError:
                    continue
            start = zk.decode_producer_id_block(data) + 1
            try:
                store.set(zk.PRODUCER_ID_BLOCK, zk.encode_producer_id_block(
                    self.broker_id, start, start + PRODUCER_ID_BLOCK_SIZE - 1), stat.version)
                return start, start + PRODUCER_ID_BLOCK_SIZE
            except BadVersionError:
                continue
        raise BadVersionError(f"{zk.PRODUCER_ID_BLOCK}: too many concurrent claims")
