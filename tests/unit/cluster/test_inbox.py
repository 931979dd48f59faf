"""A broker's side of the controller protocol: epoch fencing, leader/follower changes,
leadership listeners, and the metadata cache fed only by UpdateMetadata."""

from __future__ import annotations

import asyncio
from dataclasses import replace
from pathlib import Path

import pytest

from kafkalite.protocol.errors import (
    NotLeaderOrFollowerError,
    StaleBrokerEpochError,
    StaleControllerEpochError,
)
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.inbox import ControllerInbox
from kafkalite_server.cluster.memory_store import MemoryEnsemble
from kafkalite_server.cluster.messages import (
    LEADER_DURING_DELETE,
    NO_BROKER_EPOCH,
    LeaderAndIsr,
    PartitionState,
    StopReplica,
    UpdateMetadata,
)
from kafkalite_server.cluster.metadata_cache import MetadataCache
from kafkalite_server.cluster.partition_states import LogDirEventNotifier, PartitionStateStore
from kafkalite_server.cluster.store_worker import StoreWorker
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.manager import LogManager
from kafkalite_server.replication.replica_manager import ReplicaManager
from kafkalite_server.topic_ids import ZERO, new_topic_id
from tests.conftest import build_batch


class Recorder:
    def __init__(self) -> None:
        self.events: list[tuple[str, str, int]] = []

    def on_become_leader(self, topic: str, index: int, leader_epoch: int) -> None:
        self.events.append(("leader", topic, index))

    def on_resign(self, topic: str, index: int) -> None:
        self.events.append(("resign", topic, index))


class Epochs:
    """A broker's registration epoch and the coordination store's /controller_epoch."""

    def __init__(self, broker_epoch: int, stored_controller_epoch: int) -> None:
        self.broker_epoch = broker_epoch
        self.stored = stored_controller_epoch

    async def controller_epoch_exists(self, epoch: int) -> bool:
        return epoch <= self.stored


async def _no_configs_to_load(topics: object) -> None:
    """The tests' topics run on the default config."""


@pytest.fixture
def inbox(tmp_path: Path):
    manager = LogManager([tmp_path], LogConfig())
    cache = MetadataCache(1, "cid")
    store = MemoryEnsemble().connect()
    worker = StoreWorker("test")
    replicas = ReplicaManager(1, manager, cache, lambda _topic: LogConfig(),
                              PartitionStateStore(lambda: store, worker),
                              log_dir_failures=LogDirEventNotifier(1, lambda: store, worker))
    yield ControllerInbox(replicas, cache, Epochs(broker_epoch=NO_BROKER_EPOCH,
                                                  stored_controller_epoch=2**31 - 1),
                          _no_configs_to_load)
    manager.shutdown()


def _state(leader: int, epoch: int, replicas=(1, 2)) -> PartitionState:
    return PartitionState("t", 0, leader, epoch, tuple(replicas), tuple(replicas))


def test_leadership_follows_leader_and_isr_and_listeners_hear_it(inbox):
    recorder = Recorder()
    inbox.replica_manager.add_leadership_listener(recorder)
    inbox.handle(LeaderAndIsr(2, 1, (_state(1, 0),)))
    assert inbox.replica_manager.leader_partition("t", 0).leader_epoch == 0
    inbox.handle(LeaderAndIsr(2, 1, (_state(2, 1),)))
    with pytest.raises(NotLeaderOrFollowerError):
        inbox.replica_manager.leader_partition("t", 0)
    assert recorder.events == [("leader", "t", 0), ("resign", "t", 0)]
    assert ("t", 0) in inbox.replica_manager.partitions  # still hosted, as a follower


def test_an_older_controller_epoch_is_fenced(inbox):
    inbox.handle(LeaderAndIsr(2, 5, (_state(1, 3),)))
    with pytest.raises(StaleControllerEpochError):
        inbox.handle(LeaderAndIsr(3, 4, (_state(2, 4),)))
    with pytest.raises(StaleControllerEpochError):
        inbox.handle(StopReplica(3, 4, (("t", 0),), delete=True))
    with pytest.raises(StaleControllerEpochError):
        inbox.handle(UpdateMetadata(3, 4, (), ()))
    assert inbox.replica_manager.leader_partition("t", 0).leader_epoch == 3


def test_an_older_leader_epoch_is_refused_per_partition(inbox):
    inbox.handle(LeaderAndIsr(2, 1, (_state(1, 3),)))
    errors = inbox.handle(LeaderAndIsr(2, 1, (_state(2, 2),)))
    assert errors == {("t", 0): StaleControllerEpochError.errno}
    assert inbox.replica_manager.leader_partition("t", 0).leader_epoch == 3


def test_metadata_cache_takes_update_metadata_and_deletions(inbox):
    live = (BrokerEndpoint(1, "h", 1, "r1"), BrokerEndpoint(2, "h", 2, "r2"))
    inbox.handle(UpdateMetadata(2, 1, (_state(1, 0), ), live))
    cache = inbox.metadata
    assert cache.controller_id == 2 and sorted(cache.brokers) == [1, 2]
    assert cache.leader_endpoint("t", 0) == live[0]
    inbox.handle(UpdateMetadata(2, 1, (PartitionState("t", 0, LEADER_DURING_DELETE, 0, (), ()),),
                                live[:1]))
    assert cache.partitions_of("t") is None and list(cache.brokers) == [1]


def test_a_message_for_an_earlier_incarnation_is_refused(inbox):
    """KIP-380: the controller stamps each message with the epoch (registration czxid) of
    the incarnation it meant; the broker restarted since refuses it."""
    inbox.epochs = Epochs(broker_epoch=500, stored_controller_epoch=5)
    inbox.handle(LeaderAndIsr(2, 5, (_state(2, 3),), broker_epoch=500))
    assert ("t", 0) in inbox.replica_manager.partitions
    with pytest.raises(StaleBrokerEpochError):
        inbox.handle(StopReplica(2, 5, (("t", 0),), delete=True, broker_epoch=499))
    with pytest.raises(StaleBrokerEpochError):
        inbox.handle(LeaderAndIsr(2, 5, (_state(1, 4),), broker_epoch=499))
    with pytest.raises(StaleBrokerEpochError):
        inbox.handle(UpdateMetadata(2, 5, (_state(1, 4),), (), broker_epoch=499))
    partition = inbox.replica_manager.partitions[("t", 0)]
    assert (partition.leader_id, partition.leader_epoch) == (2, 3)
    assert inbox.metadata.partition("t", 0) is None
    # A newer epoch (registered again, not heard yet) and none at all are taken.
    inbox.handle(LeaderAndIsr(2, 5, (_state(1, 4),), broker_epoch=501))
    assert inbox.replica_manager.leader_partition("t", 0).leader_epoch == 4


def test_a_controller_epoch_never_elected_cannot_fence_the_real_controller(inbox):
    inbox.epochs = Epochs(broker_epoch=500, stored_controller_epoch=5)
    absurd = UpdateMetadata(3, 2**31 - 1, (), (), broker_epoch=500)
    with pytest.raises(StaleControllerEpochError):
        asyncio.run(inbox.receive(absurd))
    # The real controller's next message is still taken.
    asyncio.run(inbox.receive(LeaderAndIsr(2, 5, (_state(1, 3),), broker_epoch=500)))
    assert inbox.replica_manager.leader_partition("t", 0).leader_epoch == 3


def test_the_cache_names_topics_by_id_and_a_recreated_topic_replaces_its_predecessor(inbox):
    """The deletion's update never came (the controller's channel was closed meanwhile):
    the new id replaces the old, and the old topic's partitions go with it."""
    cache = inbox.metadata
    old, new = new_topic_id(), new_topic_id()
    inbox.handle(UpdateMetadata(2, 1, tuple(
        PartitionState("t", index, 1, 0, (1,), (1,), topic_id=old) for index in range(3)), ()))
    assert (cache.topic_id("t"), cache.topic_name(old)) == (old, "t")
    assert cache.topic_id("nope") == ZERO and cache.topic_name(new) is None
    inbox.handle(UpdateMetadata(2, 1, (PartitionState("t", 0, 1, 0, (1,), (1,), topic_id=new),),
                                ()))
    assert (cache.topic_id("t"), cache.topic_name(new), cache.topic_name(old)) == (new, "t", None)
    assert [s.partition for s in cache.partitions_of("t") or []] == [0]
    inbox.handle(UpdateMetadata(2, 1, (PartitionState("t", 0, LEADER_DURING_DELETE, 0, (), (),
                                                      topic_id=new),), ()))
    assert cache.topic_id("t") == ZERO and cache.topic_name(new) is None


def test_a_replica_of_a_deleted_topic_gives_way_to_the_new_topic_of_its_name(inbox):
    """Its StopReplica never came: the LeaderAndIsr of the new topic (another id) drops the
    old replica, sets its directory aside, and starts the new one empty."""
    old, new = new_topic_id(), new_topic_id()
    replicas = inbox.replica_manager
    inbox.handle(LeaderAndIsr(2, 1, (replace(_state(1, 0), topic_id=old),)))
    replicas.leader_partition("t", 0).log.append_as_leader(
        bytearray(build_batch([b"a", b"b", b"c"])), leader_epoch=0)
    directory = replicas.log_manager.get_log("t", 0).directory
    inbox.handle(LeaderAndIsr(2, 1, (replace(_state(1, 0), topic_id=new),)))
    assert replicas.leader_partition("t", 0).log.log_end_offset == 0
    assert replicas.log_manager.topic_id_of("t", 0) == new
    assert (directory.parent / f"t-0.{old.hex}-stray").is_dir()
