"""The controller: the only writer of the metadata image.

It creates, deletes and grows topics, places partition leaders (partition ``i`` on the
``i % N``-th broker), moves leaders between brokers of this process, persists every
change, and tells the brokers' replica managers which partitions they lead. One
controller serves every broker of a process (a standalone broker, or an EmbeddedCluster).
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import (
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
from kafkalite_server.cluster.image import (
    BrokerEndpoint,
    MetadataImage,
    MetadataStore,
    PartitionInfo,
    TopicInfo,
)
from kafkalite_server.cluster.producer_ids import ProducerIdAllocator
from kafkalite_server.cluster.topics import validate_topic_name
from kafkalite_server.config import BrokerConfig
from kafkalite_server.log.config import LogConfig
from kafkalite_server.replication.replica_manager import ReplicaManager


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
        self.replica_managers: dict[int, ReplicaManager] = {}

    # ------------------------------------------------------------------ brokers

    def register_broker(self, endpoint: BrokerEndpoint, replica_manager: ReplicaManager) -> None:
        self.image.brokers[endpoint.node_id] = endpoint
        self.replica_managers[endpoint.node_id] = replica_manager

    def unregister_broker(self, node_id: int) -> None:
        self.image.brokers.pop(node_id, None)
        self.replica_managers.pop(node_id, None)

    def elect_leaders(self) -> None:
        """After brokers register: partitions whose leader is not a known broker get one
        (with a bumped epoch), and each broker starts leading its partitions."""
        changed = False
        for info in self.image.topics.values():
            for index, partition in enumerate(info.partitions):
                if partition.leader not in self.image.brokers:
                    partition.leader = self.image.leader_for_new_partition(index)
                    partition.leader_epoch += 1
                    changed = True
                self._lead(info.name, index, partition)
        if changed:
            self.store.save(self.image)

    def _lead(self, topic: str, index: int, partition: PartitionInfo) -> None:
        manager = self.replica_managers.get(partition.leader)
        if manager is not None:
            manager.become_leader(topic, index, partition.leader_epoch)

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

    def alter_topic_configs(self, name: str, configs: Mapping[str, str], *,
                            validate_only: bool = False) -> None:
        """``configs`` becomes the topic's complete set of overrides: saved, then applied
        to the logs of every broker leading one of its partitions."""
        info = self.image.topics.get(name)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        kept = self.validated_configs(configs, name)
        if validate_only:
            return
        previous, info.configs = info.configs, kept
        try:
            self.store.save(self.image)
        except BaseException:
            info.configs = previous
            raise
        for manager in self.replica_managers.values():
            manager.update_config(name)

    def alter_broker_configs(self, resource_name: str, configs: Mapping[str, str], *,
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
        for topic in self.image.topics:
            for manager in self.replica_managers.values():
                manager.update_config(topic)

    # ------------------------------------------------------------------ topics

    def create_topic(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
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
        self.image.topics[name] = info
        self.store.save(self.image)
        for index, partition in enumerate(info.partitions):
            self._lead(name, index, partition)
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

    def delete_topic(self, name: str) -> None:
        if not self.config.delete_topic_enable:
            raise TopicDeletionDisabledError("delete.topic.enable is false")
        info = self.image.topics.pop(name, None)
        if info is None:
            raise UnknownTopicOrPartitionError(f"topic {name!r}")
        self.store.save(self.image)
        for index, partition in enumerate(info.partitions):
            manager = self.replica_managers.get(partition.leader)
            if manager is not None:
                manager.delete_partition(name, index)

    def create_partitions(self, name: str, count: int,
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
        info.partitions.extend(PartitionInfo(leader) for leader in leaders)
        self.store.save(self.image)
        for index in range(current, count):
            self._lead(name, index, info.partitions[index])

    def move_partition_leader(self, topic: str, index: int, broker_id: int) -> PartitionInfo:
        """Moves the partition's log to ``broker_id`` (same process) and bumps its epoch."""
        partition = self.image.partition(topic, index)
        if partition is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index}")
        target = self.replica_managers.get(broker_id)
        source = self.replica_managers.get(partition.leader)
        if target is None or source is None:
            raise InvalidReplicaAssignmentError(f"broker {broker_id} is not in this process")
        if broker_id == partition.leader:
            return partition
        partition.leader = broker_id
        partition.leader_epoch += 1
        self.store.save(self.image)
        source.hand_over(topic, index, target, partition.leader_epoch)
        return partition
