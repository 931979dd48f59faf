"""The partitions one broker leads, and the produce/fetch paths into their logs.

Partitions exist here only while this broker leads them; the metadata image says whether a
missing partition is unknown (UNKNOWN_TOPIC_OR_PARTITION) or led elsewhere
(NOT_LEADER_OR_FOLLOWER). Every append wakes the delayed fetches and produces watching
that partition.
"""

from __future__ import annotations

import shutil
from collections.abc import Callable

from kafkalite.protocol.errors import (
    InvalidTopicError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster.image import MetadataImage
from kafkalite_server.cluster.internal_topics import INTERNAL_TOPICS
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import AppendInfo, Log
from kafkalite_server.log.manager import LogManager
from kafkalite_server.replication.partition import Partition
from kafkalite_server.replication.purgatory import Purgatory

TopicPartition = tuple[str, int]


class ReplicaManager:
    def __init__(self, broker_id: int, log_manager: LogManager, image: MetadataImage,
                 topic_config: Callable[[str], LogConfig]) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.image = image
        self.topic_config = topic_config
        self.partitions: dict[TopicPartition, Partition] = {}
        self.fetch_purgatory = Purgatory("fetch")
        self.produce_purgatory = Purgatory("produce")

    # ------------------------------------------------------------------ leadership

    def become_leader(self, topic: str, index: int, leader_epoch: int) -> Partition:
        key = (topic, index)
        partition = self.partitions.get(key)
        if partition is not None:
            if leader_epoch > partition.leader_epoch:
                partition.leader_epoch = leader_epoch
                partition.log.leader_epoch_cache.assign(leader_epoch,
                                                        partition.log.log_end_offset)
            return partition
        log = self.log_manager.create_log(topic, index, self.topic_config(topic))
        partition = Partition(topic, index, log, leader_epoch)
        self.partitions[key] = partition
        return partition

    def stop_leading(self, topic: str, index: int) -> Partition | None:
        """Leadership moved away (or the topic is gone): parked requests re-check now."""
        partition = self.partitions.pop((topic, index), None)
        self._wake((topic, index))
        return partition

    def delete_partition(self, topic: str, index: int) -> None:
        self.stop_leading(topic, index)
        self.log_manager.delete_log(topic, index)

    def hand_over(self, topic: str, index: int, target: ReplicaManager,
                  leader_epoch: int) -> Partition:
        """Moves the partition's log files to ``target`` (another broker in this process),
        which leads it from ``leader_epoch`` on. Runs on the loop: no append interleaves."""
        partition = self.stop_leading(topic, index)
        log = partition.log if partition else self.log_manager.get_log(topic, index)
        if log is not None:
            log.flush()
            target_dir = target.log_manager.log_dirs[0] / log.directory.name
            shutil.copytree(log.directory, target_dir, dirs_exist_ok=False,
                            ignore=shutil.ignore_patterns("*.deleted"))
            self.log_manager.delete_log(topic, index)
        return target.become_leader(topic, index, leader_epoch)

    def update_config(self, topic: str) -> None:
        config = self.topic_config(topic)
        for (name, _index), partition in self.partitions.items():
            if name == topic:
                partition.log.update_config(config)

    # ------------------------------------------------------------------ lookups

    def leader_partition(self, topic: str, index: int) -> Partition:
        partition = self.partitions.get((topic, index))
        if partition is not None:
            return partition
        if self.image.partition(topic, index) is None:
            raise UnknownTopicOrPartitionError(f"{topic}-{index}")
        raise NotLeaderOrFollowerError(f"{topic}-{index} is not led by broker {self.broker_id}")

    def high_watermark_of(self, log: Log) -> int:
        partition = self.partitions.get(log.topic_partition)
        return partition.high_watermark if partition is not None else log.log_start_offset

    # ------------------------------------------------------------------ produce

    def append(self, partition: Partition, records: memoryview, api_version: int) -> AppendInfo:
        info = partition.append(records, api_version)
        if not info.duplicate:
            self._wake(partition.key)
        return info

    def _wake(self, key: TopicPartition) -> None:
        self.fetch_purgatory.check_and_complete(key)
        self.produce_purgatory.check_and_complete(key)


    # ------------------------------------------------------------------ delete records

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        """DeleteRecords: raise the log start offset to ``offset`` (-1: the high
        watermark), never past the high watermark; returns the new low watermark.

        The log-start-offset checkpoint is written at once, so the deletion survives a
        crash; the segments below it go at the next retention pass.
        """
        if topic in INTERNAL_TOPICS:
            raise InvalidTopicError(f"cannot delete records of internal topic {topic!r}")
        partition = self.leader_partition(topic, index)
        target = partition.high_watermark if offset == -1 else offset
        if not 0 <= target <= partition.high_watermark:
            raise OffsetOutOfRangeError(f"{topic}-{index}: cannot move the log start offset "
                                        f"to {target}, the high watermark is "
                                        f"{partition.high_watermark}")
        partition.log.maybe_increment_log_start_offset(target)
        self.log_manager.checkpoint_log_start_offsets()
        self._wake(partition.key)
        return partition.log.log_start_offset
