"""A broker's requests to the controller, written into the coordination store as Kafka's
ZooKeeper-mode brokers write them into ZooKeeper (AdminZkClient): the elected controller
watches these nodes. Every broker makes its requests this way, a standalone one too (it is
the elected controller of its one-broker cluster).

CreateTopics places replicas here (AdminUtils over the live registered brokers) and writes
``/config/topics/<t>`` and ``/brokers/topics/<t>`` in one batch; DeleteTopics writes
``/admin/delete_topics/<t>``; CreatePartitions extends the assignment with a version check.
Producer ids come in blocks claimed from ``/latest_producer_id_block`` by conditional write,
so they are unique across the cluster.

The event loop never waits on the store here. The requests (``async`` methods) run their
store calls on the broker's coordination worker; a store that cannot be reached within
the session fails the request with REQUEST_TIMED_OUT, and nothing else waits. Topic
configs are kept in memory (all of them read at start, a topic's again on its change
notification and before its partitions are created here: :meth:`ControllerRequests.
load_topic_configs`), so :meth:`ControllerRequests.topic_config` never reads the store. The next
block of producer ids is claimed in the background before the current one runs out.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, ParamSpec, TypeVar

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    NotControllerError,
    ReassignmentInProgressError,
    RequestTimedOutError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.config_changes import check_internal_topic
from kafkalite_server.cluster.config_watcher import ConfigChangeWatcher, notify_config_change
from kafkalite_server.cluster.coordination import (
    BadVersionError,
    Coordination,
    CoordinationError,
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
from kafkalite_server.cluster.producer_ids import ProducerIdBlocks
from kafkalite_server.cluster.reassignment import Reassignment
from kafkalite_server.cluster.store_worker import StoreWorker
from kafkalite_server.cluster.topics import validate_topic_name, validated_topic_configs
from kafkalite_server.config import BrokerConfig
from kafkalite_server.log.config import LogConfig
from kafkalite_server.topic_ids import ZERO, new_topic_id
from kafkalite_server.topic_partition import TopicPartition

if TYPE_CHECKING:
    from kafkalite_server.cluster.active_controller import Controller

log = logging.getLogger(__name__)

_CONFLICT_RETRIES = 10
T = TypeVar("T")
P = ParamSpec("P")


class ControllerRequests:
    def __init__(self, config: BrokerConfig, store: Callable[[], Coordination],
                 worker: StoreWorker,
                 active_controller: Callable[[], Controller | None] = lambda: None) -> None:
        """``store()`` is the broker's current session (it changes after an expiry);
        ``active_controller()`` is this broker's controller while it is the elected one.
        Reads the broker layers and every topic's configs now, at start."""
        self.config = config
        self.default_log_config = config.log_config()
        self._store = store
        self._worker = worker
        self._active_controller = active_controller
        self.producer_ids = ProducerIdBlocks(config.broker_id, store, worker)
        self.dynamic_configs = DynamicLayers()
        self._overrides: dict[str, dict[str, str]] = {}
        """Every topic's overrides, as last read."""
        self._topic_configs: dict[str, LogConfig] = {}
        self._update_topic: Callable[[str], None] = lambda _topic: None
        self._hosted_topics: Callable[[], Iterable[str]] = tuple
        self._set_broker_layers(self._read_broker_layers())
        self._overrides = self._read_all_overrides()

    async def _off_loop(self, function: Callable[P, T], *args: P.args,
                        **kwargs: P.kwargs) -> T:
        """``function(*args)`` on the coordination worker; an unreachable store fails the
        request (REQUEST_TIMED_OUT) and nothing else."""
        try:
            return await self._worker.call(function, *args, **kwargs)
        except CoordinationError as exc:
            raise RequestTimedOutError(f"the coordination store did not answer: {exc}") from None

    # ------------------------------------------------------------------ elections

    def _controller(self) -> Controller:
        """Elections and reassignments go straight to the elected controller, as in Kafka
        2.4+: another broker answers NOT_CONTROLLER and the client follows the metadata's
        controller id."""
        controller = self._active_controller()
        if controller is None:
            raise NotControllerError(f"broker {self.config.broker_id} is not the controller")
        return controller

    async def elect_on_request(self, kind: ElectionType, keys: Iterable[TopicPartition] | None
                               ) -> dict[TopicPartition, int | BrokerResponseError]:
        return await self._off_loop(self._controller().elect_on_request, kind, keys)

    # ------------------------------------------------------------------ reassignments

    async def alter_reassignments(self, requests: dict[TopicPartition, list[int] | None]
                                  ) -> dict[TopicPartition, BrokerResponseError | None]:
        return await self._off_loop(self._controller().alter_reassignments, requests)

    async def list_reassignments(self, keys: Iterable[TopicPartition] | None
                                 ) -> dict[TopicPartition, Reassignment]:
        return await self._off_loop(self._controller().list_reassignments, keys)

    # ------------------------------------------------------------------ dynamic configs

    async def follow_config_changes(self, update_topic: Callable[[str], None],
                                    hosted_topics: Callable[[], Iterable[str]]) -> None:
        """Runs until cancelled, following ``/config/changes``: a topic's change re-applies
        its config (``update_topic``); a broker layer's change re-applies every hosted
        topic's (the defaults under them moved)."""
        self._update_topic = update_topic
        self._hosted_topics = hosted_topics
        await ConfigChangeWatcher(self._store, self._worker, self._config_changed).run()

    async def _config_changed(self, entity: str | None) -> None:
        """Re-reads the entity (None: everything) off the loop, then applies it."""
        kind, _, name = (entity or "").partition("/")
        if kind in ("users", "clients"):
            return  # client quotas (and SCRAM credentials): their own watchers follow them
        if kind == "topics":
            overrides = await self._worker.call(self._read_overrides, name)
            self._set_overrides(name, overrides)
            self._update_topic(name)
            return
        self._set_broker_layers(await self._worker.call(self._read_broker_layers))
        if entity is None:
            self._overrides = await self._worker.call(self._read_all_overrides)
            self._topic_configs.clear()
        for topic in set(self._hosted_topics()):
            self._update_topic(topic)

    def _set_broker_layers(self, layers: DynamicLayers) -> None:
        self.dynamic_configs = layers
        self.default_log_config = layers.log_defaults(self.config.log_config())
        self._topic_configs.clear()

    def _read_broker_layers(self) -> DynamicLayers:
        """The cluster-wide and this broker's own dynamic layers, from ZooKeeper. A layer
        that fails validation (written by hand) is logged and left out."""
        layers = DynamicLayers()
        for name in (CLUSTER_DEFAULT, str(self.config.broker_id)):
            values = self._read_config(layout.broker_config_path(name))
            try:
                validate_dynamic(values)
            except ConfigError as exc:
                log.error("%s is ignored: %s", layout.broker_config_path(name), exc)
                continue
            if name == CLUSTER_DEFAULT:
                layers.cluster_default = values
            elif values:
                layers.per_broker[self.config.broker_id] = values
        return layers

    def _read_config(self, path: str) -> dict[str, str]:
        try:
            return layout.decode_config(path, self._store().get(path)[0])
        except NoNodeError:
            return {}

    def _write_config(self, path: str, entity: str, configs: Mapping[str, str]) -> None:
        store = self._store()
        data = layout.encode_topic_config(dict(configs))
        try:
            store.set(path, data)
        except NoNodeError:
            store.create(path, data, makepath=True)
        notify_config_change(store, entity)

    async def alter_topic_configs(self, name: str, configs: Mapping[str, str], *,
                                  validate_only: bool = False) -> None:
        """``configs`` becomes the topic's complete set of overrides in
        ``/config/topics/<name>``; every broker hears of it through ``/config/changes``."""
        if await self._off_loop(self._read_overrides, name) is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        kept = validated_topic_configs(self.default_log_config, configs)
        check_internal_topic(name, LogConfig.from_topic_configs(self.default_log_config, kept))
        if not validate_only:
            await self._off_loop(self._write_config, layout.topic_config_path(name),
                                 layout.topic_config_entity(name), kept)

    async def alter_broker_configs(self, resource_name: str, configs: Mapping[str, str], *,
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
            overrides = self._overrides.get(topic)
            if overrides is not None:
                check_internal_topic(topic, LogConfig.from_topic_configs(defaults, overrides))
        if validate_only:
            return
        entity = layout.broker_config_entity(resource_name)
        await self._off_loop(self._write_config, layout.broker_config_path(resource_name), entity,
                             configs)
        await self._config_changed(entity)

    # ------------------------------------------------------------------ configs

    async def topic_overrides(self, topic: str) -> dict[str, str] | None:
        """The topic's overrides as the store has them now (None: no such topic)."""
        overrides = await self._off_loop(self._read_overrides, topic)
        self._set_overrides(topic, overrides)
        return overrides

    async def load_topic_configs(self, topics: Iterable[str]) -> None:
        """Reads the configs of the topics not known here yet (before their logs are
        created); a store that cannot be reached leaves them at the defaults for now."""
        missing = [topic for topic in topics if topic not in self._overrides]
        if not missing:
            return
        try:
            found = await self._worker.call(lambda: {t: self._read_overrides(t)
                                                     for t in missing})
        except CoordinationError as exc:
            log.warning("configs of %s not read (%s); their logs start with the defaults "
                        "and take the topic's configs at its next change", missing, exc)
            return
        for topic, overrides in found.items():
            self._set_overrides(topic, overrides)

    def topic_config(self, topic: str) -> LogConfig:
        """From memory, never from the store: what was last read of the topic (the
        defaults for a topic not read yet)."""
        config = self._topic_configs.get(topic)
        if config is None:
            overrides = self._overrides.get(topic)
            config = (LogConfig.from_topic_configs(self.default_log_config, overrides)
                      if overrides else self.default_log_config)
            if overrides is not None:
                self._topic_configs[topic] = config
        return config

    def _set_overrides(self, topic: str, overrides: dict[str, str] | None) -> None:
        self._topic_configs.pop(topic, None)
        if overrides is None:
            self._overrides.pop(topic, None)
        else:
            self._overrides[topic] = overrides

    def _read_overrides(self, topic: str) -> dict[str, str] | None:
        store = self._store()
        if store.exists(layout.topic_path(topic)) is None:
            return None
        try:
            return layout.decode_topic_config(topic, store.get(layout.topic_config_path(topic))[0])
        except NoNodeError:
            return {}

    def _read_all_overrides(self) -> dict[str, dict[str, str]]:
        found = {}
        for topic in self._store().children(layout.TOPICS):
            overrides = self._read_overrides(topic)
            if overrides is not None:
                found[topic] = overrides
        return found

    # ------------------------------------------------------------------ topics

    def _live_brokers(self) -> dict[int, str | None]:
        store = self._store()
        brokers: dict[int, str | None] = {}
        for name in store.children(layout.BROKER_IDS):
            try:
                endpoint = layout.decode_broker(int(name), store.get(layout.broker_path(int(name)))[0])
            except NoNodeError:
                continue
            brokers[endpoint.node_id] = endpoint.rack
        return brokers

    async def create_topic(self, name: str, num_partitions: int = -1,
                           replication_factor: int = -1,
                           configs: Mapping[str, str | None] | None = None, *,
                           assignments: Mapping[int, list[int]] | None = None,
                           validate_only: bool = False) -> uuid.UUID:
        """Creates the topic with a new random id (KIP-516), which it returns (for
        ``validate_only``, :data:`~kafkalite_server.topic_ids.ZERO`: nothing was created)."""
        validate_topic_name(name)
        kept = validated_topic_configs(self.default_log_config, configs or {})
        topic_id = ZERO if validate_only else new_topic_id()
        await self._off_loop(self._create_topic, name, num_partitions, replication_factor,
                             kept, assignments, validate_only, topic_id)
        if not validate_only:
            self._set_overrides(name, kept)
        return topic_id

    def _create_topic(self, name: str, num_partitions: int, replication_factor: int,
                      kept: dict[str, str], assignments: Mapping[int, list[int]] | None,
                      validate_only: bool, topic_id: uuid.UUID) -> None:
        """As Kafka's AdminZkClient, the assignment node is written with the topic's id."""
        store = self._store()
        if store.exists(layout.topic_path(name)) is not None:
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
        if validate_only:
            return
        try:
            store.commit([Create(layout.topic_config_path(name), layout.encode_topic_config(kept)),
                          Create(layout.topic_path(name),
                                 layout.encode_assignment(assignment, topic_id=topic_id))])
        except NodeExistsError:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists") from None
        # Brokers may cache the configs of an earlier topic of this name.
        notify_config_change(store, layout.topic_config_entity(name))

    async def delete_topic(self, name: str) -> None:
        if not self.config.delete_topic_enable:
            raise TopicDeletionDisabledError("delete.topic.enable is false")
        await self._off_loop(self._delete_topic, name)

    def _delete_topic(self, name: str) -> None:
        store = self._store()
        if store.exists(layout.topic_path(name)) is None:
            # DeleteTopics v5+ sends this as its error_message: a sentence of its own
            raise UnknownTopicOrPartitionError(f"no such topic {name!r}")
        with contextlib.suppress(NodeExistsError):
            store.create(layout.delete_topic_path(name))

    async def create_partitions(self, name: str, count: int,
                                assignments: list[list[int]] | None = None, *,
                                validate_only: bool = False) -> None:
        await self._off_loop(self._create_partitions, name, count, assignments, validate_only)

    def _create_partitions(self, name: str, count: int, assignments: list[list[int]] | None,
                           validate_only: bool) -> None:
        store = self._store()
        for _attempt in range(_CONFLICT_RETRIES):
            try:
                data, stat = store.get(layout.topic_path(name))
            except NoNodeError:
                raise UnknownTopicOrPartitionError(f"topic {name!r}") from None
            assignment = layout.decode_assignment(name, data)
            if any(layout.decode_reassigning(name, data)):
                raise ReassignmentInProgressError(f"topic {name!r} has partitions being "
                                                  "reassigned; add partitions afterwards")
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
                store.set(layout.topic_path(name),
                          layout.encode_assignment({**assignment, **added},
                                                   topic_id=layout.decode_topic_id(name, data)),
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
