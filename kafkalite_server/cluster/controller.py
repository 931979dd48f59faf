"""The standalone broker's controller: the only writer of its metadata image.

It creates, deletes and grows topics, places partition leaders and persists every change.
It reaches the broker only through its channel, with the controller messages
(LeaderAndIsr, StopReplica, UpdateMetadata): it never touches the broker's objects. A
broker with ``zookeeper.connect`` (and every broker of an EmbeddedCluster) runs the elected
:class:`~kafkalite_server.cluster.zk_controller.ZkController` instead.

Every change goes through :meth:`Controller._commit`: the new topics are built as a copy,
saved, and only then swapped into the image. A save that fails (a full disk) raises
KafkaStorageError naming the file and leaves the image and the brokers untouched.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from pathlib import Path

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import (
    BrokerResponseError,
    InvalidConfigError,
    InvalidPartitionsError,
    InvalidReplicaAssignmentError,
    InvalidReplicationFactorError,
    TopicAlreadyExistsError,
    TopicDeletionDisabledError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster.config_changes import check_internal_topic
from kafkalite_server.cluster.dynamic_config import DynamicBrokerConfigs, validate_dynamic
from kafkalite_server.cluster.election_requests import ElectionType, requested_election
from kafkalite_server.cluster.image import (
    BrokerEndpoint,
    MetadataImage,
    MetadataStore,
    PartitionInfo,
    TopicInfo,
)
from kafkalite_server.cluster.messages import (
    LEADER_DURING_DELETE,
    NO_LEADER,
    BrokerChannel,
    LeaderAndIsr,
    PartitionState,
    StopReplica,
    UpdateMetadata,
)
from kafkalite_server.cluster.producer_ids import ProducerIdAllocator
from kafkalite_server.cluster.topics import validate_topic_name
from kafkalite_server.config import BrokerConfig
from kafkalite_server.log.config import LogConfig

CONTROLLER_EPOCH = 1
"""This controller is never re-elected: its epoch is constant."""


class Controller:
    def __init__(self, config: BrokerConfig, metadata_dir: Path,
                 cluster_id: str | None = None) -> None:
        """``config`` supplies cluster-wide defaults (partitions, topic configs)."""
        metadata_dir.mkdir(parents=True, exist_ok=True)
        self.config = config
        self.dynamic_configs = DynamicBrokerConfigs(metadata_dir)
        self.default_log_config = self.dynamic_configs.log_defaults(config.log_config())
        self.store = MetadataStore(metadata_dir)
        self.image: MetadataImage = self.store.load(cluster_id)
        self.producer_ids = ProducerIdAllocator(metadata_dir)
        self.channels: dict[int, BrokerChannel] = {}

    # ------------------------------------------------------------------ brokers

    def register_broker(self, endpoint: BrokerEndpoint, channel: BrokerChannel) -> None:
        self.image.brokers[endpoint.node_id] = endpoint
        self.channels[endpoint.node_id] = channel
        self._publish(self._all_partitions())

    def unregister_broker(self, node_id: int) -> None:
        self.image.brokers.pop(node_id, None)
        channel = self.channels.pop(node_id, None)
        if channel is not None:
            channel.close()
        self._publish(self._all_partitions())

    def elect_leaders(self) -> None:
        """After brokers register: partitions whose leader is not a known broker get one
        (with a bumped epoch), and each broker starts leading its partitions."""
        topics = {name: info.copy() for name, info in self.image.topics.items()}
        changed = False
        for info in topics.values():
            for index, partition in enumerate(info.partitions):
                if partition.leader not in self.image.brokers:
                    partition.leader = self.image.leader_for_new_partition(index)
                    partition.leader_epoch += 1
                    changed = True
        if changed:
            self._commit(topics)
        self._lead(self._all_partitions())

    def _commit(self, topics: dict[str, TopicInfo]) -> None:
        """Save ``topics`` (a new dict, never the image's), then make it the image's."""
        self.store.save(self.image.cluster_id, topics)
        self.image.topics = topics

    # ------------------------------------------------------------------ messages to brokers

    def _state(self, topic: str, index: int, partition: PartitionInfo) -> PartitionState:
        """Replication factor one: the leader is the only replica and the whole ISR."""
        alive = partition.leader in self.image.brokers
        return PartitionState(topic, index, partition.leader if alive else NO_LEADER,
                              partition.leader_epoch, (partition.leader,) if alive else (),
                              (partition.leader,),
                              offline_replicas=() if alive else (partition.leader,))

    def _all_partitions(self) -> list[PartitionState]:
        return [self._state(info.name, index, partition)
                for info in self.image.topics.values()
                for index, partition in enumerate(info.partitions)]

    def _publish(self, states: list[PartitionState]) -> None:
        message = UpdateMetadata(self.image.controller_id, CONTROLLER_EPOCH, tuple(states),
                                 tuple(sorted(self.image.brokers.values(),
                                              key=lambda b: b.node_id)))
        for channel in list(self.channels.values()):
            channel.send(message)

    def _lead(self, states: list[PartitionState]) -> None:
        """Metadata first (so a new leader's listeners see the topic), then each leader."""
        self._publish(states)
        for state in states:
            channel = self.channels.get(state.leader)
            if channel is not None:
                channel.send(LeaderAndIsr(self.image.controller_id, CONTROLLER_EPOCH,
                                          (state,)))

    def _stop(self, broker_id: int, partitions: list[tuple[str, int]], *, delete: bool) -> None:
        channel = self.channels.get(broker_id)
        if channel is not None:
            channel.send(StopReplica(self.image.controller_id, CONTROLLER_EPOCH,
                                     tuple(partitions), delete))

    # ------------------------------------------------------------------ topic configs

    def topic_config(self, topic: str) -> LogConfig:
        info = self.image.topics.get(topic)
        if info is None or not info.configs:
            return self.default_log_config
        return LogConfig.from_topic_configs(self.default_log_config, info.configs)

    def validated_configs(self, configs: Mapping[str, str | None],
                          topic: str = "") -> dict[str, str]:
        """Non-null entries, checked by LogConfig (and, for an internal ``topic``, against
        what its records need); INVALID_CONFIG names the bad key."""
        kept = {key: value for key, value in configs.items() if value is not None}
        try:
            config = LogConfig.from_topic_configs(self.default_log_config, kept)
        except ConfigError as exc:
            raise InvalidConfigError(str(exc)) from None
        check_internal_topic(topic, config)
        return kept

    async def alter_topic_configs(self, name: str, configs: Mapping[str, str], *,
                            validate_only: bool = False) -> None:
        """``configs`` becomes the topic's complete set of overrides: saved, then sent to
        the brokers in an UpdateMetadata for the topic, whose logs pick the new config up."""
        info = self.image.topics.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        kept = self.validated_configs(configs, name)
        if validate_only:
            return
        changed = info.copy()
        changed.configs = kept
        self._commit({**self.image.topics, name: changed})
        self._publish([self._state(name, index, p) for index, p in enumerate(changed.partitions)])

    async def alter_broker_configs(self, resource_name: str, configs: Mapping[str, str], *,
                             validate_only: bool = False) -> None:
        """``configs`` becomes the dynamic layer ``resource_name`` ("" or a broker id);
        dynamic log keys change the defaults of every topic at once."""
        try:
            validate_dynamic(configs)
            defaults = self.dynamic_configs.log_defaults(self.config.log_config(),
                                                         (resource_name, configs))
            for topic, info in self.image.topics.items():
                check_internal_topic(topic, LogConfig.from_topic_configs(defaults,
                                                                         info.configs))
            if validate_only:
                return
            self.dynamic_configs.replace(resource_name, configs)
        except ConfigError as exc:
            raise InvalidConfigError(str(exc)) from None
        self.default_log_config = defaults
        self._publish(self._all_partitions())

    # ------------------------------------------------------------------ topics

    async def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                     configs: Mapping[str, str | None] | None = None, *,
                     assignments: Mapping[int, list[int]] | None = None,
                     validate_only: bool = False) -> TopicInfo:
        """Raises the Kafka error for the first problem found; otherwise the new topic."""
        validate_topic_name(name)
        if name in self.image.topics:
            raise TopicAlreadyExistsError(f"topic {name!r} already exists")
        leaders = self._placement(num_partitions, replication_factor, assignments or {})
        info = TopicInfo(name, [PartitionInfo(leader) for leader in leaders],
                         self.validated_configs(configs or {}, name))
        if validate_only:
            return info
        self._commit({**self.image.topics, name: info})
        self._lead([self._state(name, index, p) for index, p in enumerate(info.partitions)])
        return info

    def _placement(self, num_partitions: int, replication_factor: int,
                   assignments: Mapping[int, list[int]]) -> list[int]:
        brokers = len(self.image.brokers)
        if assignments:
            if num_partitions != -1 or replication_factor != -1:
                raise InvalidReplicaAssignmentError(
                    "give either assignments or num_partitions/replication_factor")
            return self._assigned_leaders(assignments, 0)
        count = self.config.num_partitions if num_partitions == -1 else num_partitions
        factor = (self.config.default_replication_factor if replication_factor == -1
                  else replication_factor)
        if count <= 0:
            raise InvalidPartitionsError(f"number of partitions must be positive, got {count}")
        if factor <= 0:
            raise InvalidReplicationFactorError(
                f"replication factor must be positive, got {factor}")
        if factor > brokers:
            raise InvalidReplicationFactorError(
                f"replication factor {factor} is larger than the {brokers} available brokers")
        if factor > 1:
            raise InvalidReplicationFactorError(
                f"replication factor {factor}: kafkalite keeps one replica per partition")
        return [self.image.leader_for_new_partition(i) for i in range(count)]

    def _assigned_leaders(self, assignments: Mapping[int, list[int]], first: int) -> list[int]:
        if sorted(assignments) != list(range(first, first + len(assignments))):
            raise InvalidReplicaAssignmentError(
                f"partition indexes must be consecutive from {first}")
        leaders = []
        for index in sorted(assignments):
            replicas = assignments[index]
            if len(replicas) != 1:
                raise InvalidReplicationFactorError(
                    f"partition {index} lists {len(replicas)} replicas; kafkalite keeps one")
            if replicas[0] not in self.image.brokers:
                raise InvalidReplicaAssignmentError(f"unknown broker {replicas[0]}")
            leaders.append(replicas[0])
        return leaders

    async def delete_topic(self, name: str) -> None:
        if not self.config.delete_topic_enable:
            raise TopicDeletionDisabledError("delete.topic.enable is false")
        topics = dict(self.image.topics)
        info = topics.pop(name, None)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        self._commit(topics)
        for index, partition in enumerate(info.partitions):
            self._stop(partition.leader, [(name, index)], delete=True)
        self._publish([PartitionState(name, index, LEADER_DURING_DELETE, p.leader_epoch, (), ())
                       for index, p in enumerate(info.partitions)])

    async def create_partitions(self, name: str, count: int,
                          assignments: list[list[int]] | None = None, *,
                          validate_only: bool = False) -> None:
        info = self.image.topics.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        current = len(info.partitions)
        if count <= current:
            raise InvalidPartitionsError(
                f"topic {name!r} has {current} partitions; the new count {count} must be more")
        if assignments is not None:
            if len(assignments) != count - current:
                raise InvalidReplicaAssignmentError(
                    f"{len(assignments)} assignments for {count - current} new partitions")
            leaders = self._assigned_leaders(
                {current + i: replicas for i, replicas in enumerate(assignments)}, current)
        else:
            leaders = [self.image.leader_for_new_partition(i) for i in range(current, count)]
        if validate_only:
            return
        grown = info.copy()
        grown.partitions.extend(PartitionInfo(leader) for leader in leaders)
        self._commit({**self.image.topics, name: grown})
        self._lead([self._state(name, index, grown.partitions[index])
                    for index in range(current, count)])

    # ------------------------------------------------------------------ ElectLeaders

    async def elect_on_request(self, kind: ElectionType, keys: Iterable[tuple[str, int]] | None
                         ) -> dict[tuple[str, int], int | BrokerResponseError]:
        """ElectLeaders: a partition's one replica is its preferred leader, so a live leader
        needs no election and a stopped one has no other replica to take over."""
        wanted = list(keys) if keys is not None else [
            (name, index) for name, info in self.image.topics.items()
            for index in range(len(info.partitions))]
        results: dict[tuple[str, int], int | BrokerResponseError] = {}
        for topic, index in wanted:
            partition = self.image.partition(topic, index)
            if partition is None:
                results[topic, index] = UnknownTopicOrPartitionError(f"{topic}-{index}")
                continue
            outcome = requested_election(kind, f"{topic}-{index}", [partition.leader],
                                         partition.leader, [partition.leader],
                                         self.image.brokers)
            # With one replica an election can only name the leader it already has.
            results[topic, index] = (outcome if isinstance(outcome, BrokerResponseError)
                                     else outcome.leader)
        return results

    # ------------------------------------------------------------------ broker-facing reads

    async def load_topic_configs(self, topics: Iterable[str]) -> None:
        """Topic configs live in this broker's own metadata: nothing to load."""

    async def topic_overrides(self, topic: str) -> dict[str, str] | None:
        """The topic's explicit configs, or None for an unknown topic."""
        info = self.image.topics.get(topic)
        return None if info is None else dict(info.configs)
