"""The controller: the elected broker's work over the coordination store (Kafka's
ZooKeeper-mode KafkaController, reduced to the control plane). It is the only one: brokers
over ZooKeeper, the brokers of an EmbeddedCluster and a standalone broker (a one-broker
cluster over its local store) all run it.

It runs on one thread, its broker's coordination worker (Kafka's controller event thread):
every step (a watch's event, a request from a handler) is a synchronous function run
there in order, so its store calls never hold up the broker's event loop, and its
channels take its messages from that thread.

It owns no broker objects: it reads and writes Kafka's ZooKeeper layout and talks to
brokers only through their channels (LeaderAndIsr, StopReplica, UpdateMetadata). Every
write carries a check on the ``/controller_epoch`` version it was elected with, so a
controller that lost its place (a newer one was elected while it was paused) cannot write
anything; :class:`FencedError` then tells the driver to stop. Partition state nodes are
written only conditionally on their version, after a fresh read.
"""

from __future__ import annotations

import contextlib
import logging
import uuid
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TypeVar

from kafkalite.protocol.errors import (
    BrokerIdNotRegisteredError,
    BrokerResponseError,
    KafkaStorageError,
    NoReassignmentInProgressError,
    StaleBrokerEpochError,
    UnknownTopicOrPartitionError,
)
from kafkalite_server.cluster import metadata_layout as layout
from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.coordination import (
    BadVersionError,
    Check,
    Coordination,
    CoordinationError,
    Create,
    NodeExistsError,
    NoNodeError,
    Op,
    SetData,
)
from kafkalite_server.cluster.election import (
    NO_LEADER,
    Election,
    controlled_shutdown_leader,
    imbalanced,
    offline_partition_leader,
    without_replica,
)
from kafkalite_server.cluster.election_requests import ElectionType, requested_election
from kafkalite_server.cluster.messages import (
    LEADER_DURING_DELETE,
    NO_BROKER_EPOCH,
    BrokerChannel,
    ControllerMessage,
    LeaderAndIsr,
    OnAnswer,
    PartitionErrors,
    PartitionState,
    StopReplica,
    UpdateMetadata,
)
from kafkalite_server.cluster.reassignment import Reassignment, checked_target
from kafkalite_server.topic_ids import ZERO, legacy_topic_id
from kafkalite_server.topic_partition import TopicPartition

log = logging.getLogger(__name__)

T = TypeVar("T")
MAX_STATE_WRITE_ATTEMPTS = 5
MAX_STATES_PER_COMMIT = 500
"""Partition states created in one batch (ZooKeeper caps a request at 1 MB)."""


class FencedError(CoordinationError):
    """A newer controller exists: this one must stop acting."""


class Controller:
    def __init__(self, store: Coordination, broker_id: int, epoch: int, epoch_version: int,
                 *, unclean_election: bool, imbalance_percentage: int,
                 open_channel: Callable[[BrokerEndpoint], BrokerChannel],
                 on_change: Callable[[Callable[[], None]], object]) -> None:
        """``on_change(action)`` schedules ``action`` on the controller's event loop; watch
        callbacks arrive on the store's thread and go through it."""
        self.store = store
        self.broker_id = broker_id
        self.epoch = epoch
        self.epoch_version = epoch_version
        self.unclean_election = unclean_election
        self.imbalance_percentage = imbalance_percentage
        self._open_channel = open_channel
        self._schedule = on_change
        self.live: dict[int, BrokerEndpoint] = {}
        self.broker_epochs: dict[int, int] = {}
        """Each live broker's registration (czxid): a new one means the broker restarted."""
        self.shutting_down: set[int] = set()
        self.offline_replicas: dict[int, set[TopicPartition]] = {}
        """Each live broker's replicas in a failed log directory (until it restarts)."""
        self.channels: dict[int, BrokerChannel] = {}
        self.assignments: dict[str, dict[int, list[int]]] = {}
        self.topic_ids: dict[str, uuid.UUID] = {}
        """Each topic's id (KIP-516), as its assignment node holds it."""
        self.states: dict[TopicPartition, tuple[layout.LeaderIsr, int]] = {}
        self.reassignments: dict[TopicPartition, Reassignment] = {}
        """Partitions being moved (their assignment is the reassignment's replica set)."""
        self.active = True

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> None:
        """Failover: load the cluster, elect what has no live leader, tell every broker."""
        self._refresh_brokers()
        for topic in self.store.children(layout.TOPICS, watch=self._watch(self._topics_changed)):
            self._load_topic(topic)
        keys = self.assignments_keys()
        changed = self._elect_offline(keys)
        for key in keys:
            for broker_id in self.states[key][0].isr:
                if broker_id not in self.live and self._remove_from_isr(key, broker_id):
                    changed.append(key)
        self._announce(keys, to=list(self.live), changed=changed)
        self._deletions_requested()
        self._isr_changed()
        self._log_dir_events()
        for key in list(self.reassignments):  # a previous controller's moves resume
            self._maybe_finish_reassignment(key)

    def stop(self) -> None:
        self.active = False
        for channel in self.channels.values():
            channel.close()
        self.channels.clear()

    def assignments_keys(self) -> list[TopicPartition]:
        return [(t, p) for t, parts in self.assignments.items() for p in sorted(parts)]

    def _watch(self, action: Callable[[], None]) -> Callable[[object], None]:
        def fire(_event: object) -> None:
            self._schedule(lambda: self._if_active(action))
        return fire

    def _if_active(self, action: Callable[[], None]) -> None:
        if self.active:
            action()

    # ------------------------------------------------------------------ reads

    def _refresh_brokers(self) -> tuple[set[int], set[int], dict[int, tuple[bytes, int]]]:
        """Re-reads the registrations: (brokers that joined, brokers that left, bounced
        brokers' new registrations). Joined brokers are live on return, gone ones not.

        A broker whose registration was re-created since the last read (a restart quick
        enough that one read saw neither the old node's deletion nor the new one's
        creation) has bounced: as Kafka's controller does, its old incarnation is treated
        as gone now, and the caller re-adds the new one (:meth:`_add_broker`) once the
        old one's partitions are handled."""
        ids = self.store.children(layout.BROKER_IDS, watch=self._watch(self._brokers_changed))
        registrations: dict[int, tuple[bytes, int]] = {}
        for name in ids:
            broker_id = int(name)
            try:
                data, stat = self.store.get(layout.broker_path(broker_id))
            except NoNodeError:
                continue
            registrations[broker_id] = (data, stat.creation_id)
        bounced = {b: registration for b, registration in registrations.items()
                   if b in self.live and self.broker_epochs[b] != registration[1]}
        gone = (set(self.live) - set(registrations)) | set(bounced)
        joined = set(registrations) - set(self.live)
        for broker_id in gone:
            del self.live[broker_id]
            del self.broker_epochs[broker_id]
            self.shutting_down.discard(broker_id)
            self.offline_replicas.pop(broker_id, None)
            channel = self.channels.pop(broker_id, None)
            if channel is not None:
                channel.close()
        for broker_id in joined:
            self._add_broker(broker_id, *registrations[broker_id])
        return joined, gone, bounced

    def _add_broker(self, broker_id: int, data: bytes, epoch: int) -> None:
        endpoint = layout.decode_broker(broker_id, data)
        self.live[broker_id] = endpoint
        self.broker_epochs[broker_id] = epoch
        self.channels[broker_id] = self._open_channel(endpoint)

    def _load_topic(self, topic: str) -> list[TopicPartition]:
        """Reads the assignment (watching it for new partitions); new partitions get their
        first state node. Returns the partitions not known before."""
        try:
            data, stat = self.store.get(layout.topic_path(topic),
                                        watch=self._watch(lambda: self._topic_changed(topic)))
        except NoNodeError:
            return []
        assignment = layout.decode_assignment(topic, data)
        adding, removing = layout.decode_reassigning(topic, data)
        topic_id = layout.decode_topic_id(topic, data)
        if topic_id is None:
            topic_id = self._assign_topic_id(topic, data, stat.version)
        self.topic_ids[topic] = topic_id
        for index in set(adding) | set(removing):
            if (topic, index) not in self.reassignments and index in assignment:
                self.reassignments[(topic, index)] = Reassignment.stored(
                    assignment[index], adding.get(index, []), removing.get(index, []))
        known = self.assignments.get(topic, {})
        self.assignments[topic] = assignment
        added = [(topic, p) for p in sorted(assignment) if p not in known]
        self._load_or_create_states(topic, added)
        return added

    def _assign_topic_id(self, topic: str, data: bytes, version: int) -> uuid.UUID:
        """A topic created before topics had ids gets one now, written into its assignment
        node once (as Kafka's controller does when it finds a topic without one); a write
        that lost to another (a partition added meanwhile) is retried from a fresh read."""
        cluster_id = layout.decode_cluster_id(self.store.get(layout.CLUSTER_ID)[0])
        topic_id = legacy_topic_id(cluster_id, topic)
        path = layout.topic_path(topic)
        for _attempt in range(MAX_STATE_WRITE_ATTEMPTS):
            stored = layout.decode_topic_id(topic, data)
            if stored is not None:
                return stored
            adding, removing = layout.decode_reassigning(topic, data)
            document = layout.encode_assignment(layout.decode_assignment(topic, data), adding,
                                                removing, topic_id=topic_id)
            try:
                self.store.commit([Check(layout.CONTROLLER_EPOCH, self.epoch_version),
                                   SetData(path, document, version)])
            except BadVersionError:
                self._check_epoch()
                data, stat = self.store.get(path)
                version = stat.version
                continue
            log.info("controller %d: topic %s had no id; it is %s from now on",
                     self.broker_id, topic, topic_id)
            return topic_id
        raise CoordinationError(f"{path}: gave up after {MAX_STATE_WRITE_ATTEMPTS} conflicts")

    def _load_or_create_states(self, topic: str, keys: list[TopicPartition],
                               attempts: int = MAX_STATE_WRITE_ATTEMPTS) -> None:
        """Reads the state nodes that exist; the others (a new topic's, or new partitions')
        are created together, :data:`MAX_STATES_PER_COMMIT` to a batch, each batch checked
        against this controller's epoch: one write per topic, not three per partition."""
        missing = []
        for key in keys:
            path = layout.partition_state_path(*key)
            try:
                data, stat = self.store.get(path)
            except NoNodeError:
                missing.append(key)
                continue
            self.states[key] = (layout.LeaderIsr.decode(path, data), stat.version)
        if not missing:
            return
        partitions = layout.partitions_path(topic)
        existing = (set(self.store.children(partitions))
                    if self.store.exists(partitions) is not None else None)
        for start in range(0, len(missing), MAX_STATES_PER_COMMIT):
            batch = {key: self._first_state(key)
                     for key in missing[start:start + MAX_STATES_PER_COMMIT]}
            ops: list[Op] = [Check(layout.CONTROLLER_EPOCH, self.epoch_version)]
            if existing is None:
                ops.append(Create(partitions))
                existing = set()
            ops += [Create(layout.partition_path(*key)) for key in batch
                    if str(key[1]) not in existing]
            ops += [Create(layout.partition_state_path(*key), state.encode())
                    for key, state in batch.items()]
            try:
                self.store.commit(ops)
            except BadVersionError:
                raise FencedError(f"controller epoch {self.epoch} is no longer "
                                  "current") from None
            except NodeExistsError:  # created meanwhile: read again what is there
                if attempts <= 1:
                    raise CoordinationError(f"{partitions}: gave up after "
                                            f"{MAX_STATE_WRITE_ATTEMPTS} conflicts") from None
                self._load_or_create_states(topic, list(batch), attempts - 1)
                existing = set(self.store.children(partitions))
                continue
            self.states.update({key: (state, 0) for key, state in batch.items()})

    def _first_state(self, key: TopicPartition) -> layout.LeaderIsr:
        """A new partition's state: its first live replica leads, the live ones are the
        ISR (all of them if none is live)."""
        replicas = self.assignments[key[0]][key[1]]
        live_replicas = tuple(b for b in replicas if self._eligible(b))
        leader = live_replicas[0] if live_replicas else NO_LEADER
        return layout.LeaderIsr(leader, 0, live_replicas or tuple(replicas), self.epoch)

    def _eligible(self, broker_id: int) -> bool:
        return broker_id in self.live and broker_id not in self.shutting_down

    # ------------------------------------------------------------------ writes

    def _write_state(self, key: TopicPartition,
                     decide: Callable[[layout.LeaderIsr], layout.LeaderIsr | None]) -> bool:
        """Read-decide-write with a version check, retried from fresh state; False when
        ``decide`` says no change."""
        path = layout.partition_state_path(*key)
        for _attempt in range(MAX_STATE_WRITE_ATTEMPTS):
            current, version = self.states[key]
            new = decide(current)
            if new is None:
                return False
            try:
                self.store.commit([Check(layout.CONTROLLER_EPOCH, self.epoch_version),
                                   SetData(path, new.encode(), version)])
            except BadVersionError:
                self._check_epoch()
                data, stat = self.store.get(path)
                self.states[key] = (layout.LeaderIsr.decode(path, data), stat.version)
                if self.states[key][0] == new:  # it did apply: retried across a blip
                    return True
                continue
            self.states[key] = (new, version + 1)
            return True
        raise CoordinationError(f"{path}: gave up after {MAX_STATE_WRITE_ATTEMPTS} conflicts")

    def _check_epoch(self) -> None:
        _data, stat = self.store.get(layout.CONTROLLER_EPOCH)
        if stat.version != self.epoch_version:
            raise FencedError(f"controller epoch {self.epoch} is no longer current")

    def _apply_election(self, key: TopicPartition,
                        elect: Callable[[list[int], layout.LeaderIsr], Election | None]) -> bool:
        replicas = self.assignments[key[0]][key[1]]

        def decide(current: layout.LeaderIsr) -> layout.LeaderIsr | None:
            election = elect(replicas, current)
            if election is None:
                if current.leader == NO_LEADER:
                    return None
                return layout.LeaderIsr(NO_LEADER, current.leader_epoch + 1, current.isr,
                                    self.epoch)
            if (election.leader, election.isr) == (current.leader, current.isr):
                return None
            if election.unclean:
                log.warning("unclean leader election for %s-%d: broker %d was not in the "
                            "ISR %s, data may be lost", *key, election.leader, current.isr)
            return layout.LeaderIsr(election.leader, current.leader_epoch + 1, election.isr,
                                self.epoch)
        return self._write_state(key, decide)

    def _elect_offline(self, keys: Iterable[TopicPartition]) -> list[TopicPartition]:
        """Elects a leader for each partition whose leader is gone or offline."""
        changed = []
        for key in keys:
            live = self._live_for(key)

            def elect(replicas: list[int], current: layout.LeaderIsr,
                      live: set[int] = live) -> Election | None:
                return offline_partition_leader(replicas, current.isr, live,
                                                unclean=self.unclean_election)
            state, _version = self.states[key]
            if state.leader not in live and self._apply_election(key, elect):
                changed.append(key)
        return changed

    def _live_for(self, key: TopicPartition) -> set[int]:
        """The brokers that may hold ``key`` now: registered, not stopping, and with its
        replica online (not in a failed log directory)."""
        return {b for b in self.live if self._eligible(b)
                and key not in self.offline_replicas.get(b, ())}

    # ------------------------------------------------------------------ telling brokers

    def partition_state(self, key: TopicPartition) -> PartitionState:
        state, version = self.states[key]
        replicas = tuple(self.assignments[key[0]][key[1]])
        offline = tuple(b for b in replicas if b not in self.live
                        or key in self.offline_replicas.get(b, ()))
        return PartitionState(key[0], key[1], state.leader, state.leader_epoch, state.isr,
                              replicas, version, offline, topic_id=self.topic_ids[key[0]])

    def _announce(self, keys: list[TopicPartition], *, to: Iterable[int],
                  changed: Iterable[TopicPartition] = ()) -> None:
        """LeaderAndIsr to the replicas of ``changed`` (and of every key for brokers in
        ``to``), then UpdateMetadata of ``keys`` to every live broker."""
        states = {key: self.partition_state(key) for key in keys}
        targets = set(to)
        per_broker: dict[int, list[PartitionState]] = {}
        changed_set = set(changed)
        for key, state in states.items():
            for replica in state.replicas:
                if replica in self.live and (replica in targets or key in changed_set):
                    per_broker.setdefault(replica, []).append(state)
        leaders = tuple(self.live[s.leader] for s in states.values() if s.leader in self.live)
        for broker_id, broker_states in per_broker.items():
            self._send(broker_id, LeaderAndIsr(self.broker_id, self.epoch,
                                               tuple(broker_states), leaders))
        self._update_metadata(list(states.values()))

    def _update_metadata(self, states: list[PartitionState]) -> None:
        message = UpdateMetadata(self.broker_id, self.epoch, tuple(states),
                                 tuple(self.live[b] for b in sorted(self.live)))
        for broker_id in list(self.channels):
            self._send(broker_id, message)

    def _send(self, broker_id: int, message: ControllerMessage,
              on_answer: OnAnswer | None = None) -> None:
        """To the incarnation of ``broker_id`` this controller knows, stamped with its
        broker epoch: a later incarnation refuses it (STALE_BROKER_EPOCH)."""
        channel = self.channels.get(broker_id)
        if channel is not None:
            channel.send(replace(message, broker_epoch=self.broker_epochs[broker_id]),
                         on_answer)

    # ------------------------------------------------------------------ events

    def _brokers_changed(self) -> None:
        joined, gone, bounced = self._refresh_brokers()
        if gone:
            log.info("controller %d: brokers %s left", self.broker_id, sorted(gone))
        if bounced:
            log.info("controller %d: brokers %s restarted between two reads", self.broker_id,
                     sorted(bounced))
        if joined:
            log.info("controller %d: brokers %s joined", self.broker_id, sorted(joined))
        keys = self.assignments_keys()
        changed = self._elect_offline(keys)
        for key in keys:
            for broker_id in gone:
                if self._remove_from_isr(key, broker_id):
                    changed.append(key)
        if bounced:  # the new incarnations are live again, and may lead what went offline
            for broker_id, registration in bounced.items():
                self._add_broker(broker_id, *registration)
            changed += self._elect_offline(keys)
        self._announce(keys, to=joined | set(bounced), changed=changed)

    def _remove_from_isr(self, key: TopicPartition, broker_id: int) -> bool:
        def decide(current: layout.LeaderIsr) -> layout.LeaderIsr | None:
            if broker_id not in current.isr or current.leader == broker_id:
                return None
            isr = without_replica(current.isr, broker_id)
            if isr == current.isr:
                return None
            return layout.LeaderIsr(current.leader, current.leader_epoch + 1, isr, self.epoch)
        return self._write_state(key, decide)

    def _topics_changed(self) -> None:
        names = set(self.store.children(layout.TOPICS, watch=self._watch(self._topics_changed)))
        added: list[TopicPartition] = []
        for topic in sorted(names - set(self.assignments)):
            added.extend(self._load_topic(topic))
        for topic in set(self.assignments) - names:
            self._forget(topic)
        if added:
            self._announce(added, to=(), changed=added)

    def _topic_changed(self, topic: str) -> None:
        if topic in self.assignments:
            added = self._load_topic(topic)
            if added:
                self._announce(added, to=(), changed=added)

    def _notifications(self, parent: str, decode: Callable[[str, bytes], T],
                       on_change: Callable[[], None]) -> list[T]:
        """Takes the notifications under ``parent`` (each read, decoded and deleted; one
        that does not decode is logged and deleted too) and watches for the next ones."""
        found = []
        for name in self.store.children(parent, watch=self._watch(on_change)):
            path = f"{parent}/{name}"
            try:
                found.append(decode(path, self.store.get(path)[0]))
            except NoNodeError:
                continue
            except layout.LayoutError as exc:
                log.warning("controller %d: ignoring %s", self.broker_id, exc)
            with contextlib.suppress(NoNodeError):
                self.store.delete(path)
        return found

    def _isr_changed(self) -> None:
        """Leaders changed ISRs in the state nodes (Kafka 2.x's isr_change_notification):
        re-read those states and tell every broker with UpdateMetadata."""
        keys = {key for changed in self._notifications(
                    layout.ISR_CHANGE_NOTIFICATION, layout.decode_isr_change, self._isr_changed)
                for key in changed}
        known = sorted(key for key in keys if key in self.states)
        for key in known:
            path = layout.partition_state_path(*key)
            with contextlib.suppress(NoNodeError):
                data, stat = self.store.get(path)
                self.states[key] = (layout.LeaderIsr.decode(path, data), stat.version)
        if known:
            self._update_metadata([self.partition_state(key) for key in known])
        for key in known:  # a new replica may have joined the ISR
            if key in self.reassignments:
                self._maybe_finish_reassignment(key)

    def _log_dir_events(self) -> None:
        """Brokers whose log directory failed (``/log_dir_event_notification``, Kafka's
        LogDirEventNotification): each is sent a LeaderAndIsr of every replica it holds,
        and answers KAFKA_STORAGE_ERROR for those it lost (:meth:`_replicas_answered`)."""
        failed = set(self._notifications(layout.LOG_DIR_EVENT_NOTIFICATION,
                                         layout.decode_log_dir_event, self._log_dir_events))
        for broker_id in sorted(failed & set(self.live)):
            self._ask_for_offline_replicas(broker_id)

    def _ask_for_offline_replicas(self, broker_id: int) -> None:
        keys = [key for key in self.assignments_keys()
                if broker_id in self.assignments[key[0]][key[1]]]
        if not keys:
            return
        states = tuple(self.partition_state(key) for key in keys)
        leaders = tuple(self.live[s.leader] for s in states if s.leader in self.live)
        epoch = self.broker_epochs[broker_id]

        def answered(errors: PartitionErrors) -> None:  # on the broker's event loop
            self._schedule(lambda: self._if_active(
                lambda: self._replicas_answered(broker_id, epoch, errors)))
        self._send(broker_id, LeaderAndIsr(self.broker_id, self.epoch, states, leaders),
                   answered)

    def _replicas_answered(self, broker_id: int, epoch: int, errors: PartitionErrors) -> None:
        """Replicas a broker answered KAFKA_STORAGE_ERROR for are offline (Kafka's
        OfflineReplica): the partitions it led elect another leader (if another replica
        may lead), the others drop it from their ISR, and every broker hears of it with
        the replica listed offline."""
        if self.broker_epochs.get(broker_id) != epoch:
            return  # another incarnation by now
        lost = {key for key, code in errors.items()
                if code == KafkaStorageError.errno and key in self.states}
        new = sorted(lost - self.offline_replicas.get(broker_id, set()))
        if not new:
            return
        self.offline_replicas.setdefault(broker_id, set()).update(new)
        log.warning("controller %d: broker %d lost %d replicas with a log directory; moving "
                    "their leadership away", self.broker_id, broker_id, len(new))
        # A partition with no other replica to lead keeps its leader, which answers
        # KAFKA_STORAGE_ERROR: truer to clients than no leader at all.
        movable = [key for key in new if self.states[key][0].leader != broker_id
                   or offline_partition_leader(
                       self.assignments[key[0]][key[1]], self.states[key][0].isr,
                       self._live_for(key), unclean=self.unclean_election) is not None]
        changed = self._elect_offline(movable)
        for key in new:
            if self._remove_from_isr(key, broker_id):
                changed.append(key)
        self._announce(new, to=(), changed=changed)

    def _deletions_requested(self) -> None:
        for topic in self.store.children(layout.DELETE_TOPICS,
                                         watch=self._watch(self._deletions_requested)):
            self._delete_topic(topic)

    def _delete_topic(self, topic: str) -> None:
        assignment = self.assignments.get(topic, {})
        by_broker: dict[int, list[TopicPartition]] = {}
        for index, replicas in assignment.items():
            for broker_id in replicas:
                by_broker.setdefault(broker_id, []).append((topic, index))
        for broker_id, keys in by_broker.items():
            self._send(broker_id, StopReplica(self.broker_id, self.epoch, tuple(keys), True))
        topic_id = self.topic_ids.get(topic, ZERO)
        self._update_metadata([PartitionState(topic, index, LEADER_DURING_DELETE, 0, (), (),
                                              topic_id=topic_id)
                               for index in assignment])
        self._forget(topic)
        for path in (layout.topic_path(topic), layout.topic_config_path(topic),
                     layout.delete_topic_path(topic)):
            with contextlib.suppress(NoNodeError):
                self.store.delete(path, recursive=True)
        log.info("controller %d: deleted topic %s", self.broker_id, topic)

    def _forget(self, topic: str) -> None:
        self.topic_ids.pop(topic, None)
        for index in self.assignments.pop(topic, {}):
            self.states.pop((topic, index), None)
            self.reassignments.pop((topic, index), None)

    # ------------------------------------------------------------------ requests

    def controlled_shutdown(self, broker_id: int,
                            broker_epoch: int = NO_BROKER_EPOCH) -> list[TopicPartition]:
        """Moves leadership off a stopping broker and takes it out of the ISRs; returns
        the partitions with other replicas that it still leads (no other live ISR member
        to take over). A request
        from an earlier incarnation of the broker (an older ``broker_epoch``) is refused
        with STALE_BROKER_EPOCH, as Kafka does since KIP-380."""
        if broker_id not in self.live:
            raise BrokerIdNotRegisteredError(f"broker {broker_id} is not registered")
        current = self.broker_epochs[broker_id]
        if broker_epoch != NO_BROKER_EPOCH and broker_epoch < current:
            raise StaleBrokerEpochError(f"broker {broker_id}'s epoch is {current}; the "
                                        f"request was for epoch {broker_epoch}")
        self.shutting_down.add(broker_id)
        keys = self.assignments_keys()
        changed = []
        for key in keys:
            live = self._live_for(key)

            def elect(replicas: list[int], current: layout.LeaderIsr,
                      live: set[int] = live) -> Election:
                return (controlled_shutdown_leader(replicas, current.isr, live, broker_id)
                        or Election(current.leader, current.isr))
            state, _version = self.states[key]
            if state.leader == broker_id:
                if self._apply_election(key, elect):
                    changed.append(key)
            elif self._remove_from_isr(key, broker_id):
                changed.append(key)
        self._announce(keys, to=(), changed=changed)
        # Its replicas stop now, as Kafka's OfflineReplica step does: a follower fetching
        # until the broker exits would be taken back into the ISRs it just left, and
        # acks=all would wait for it after it is gone.
        # As Kafka's controller, only a partition with another replica counts as still led:
        # one whose only replica is the stopping broker has nowhere to go, and waiting for
        # it would only delay the stop.
        still_led = [key for key in keys if self.states[key][0].leader == broker_id
                     and len(self.assignments[key[0]][key[1]]) > 1]
        followed = tuple(key for key in keys if self.states[key][0].leader != broker_id
                         and broker_id in self.assignments[key[0]][key[1]])
        if followed:
            self._send(broker_id, StopReplica(self.broker_id, self.epoch, followed, False))
        return still_led

    def elect_on_request(self, kind: ElectionType, keys: Iterable[TopicPartition] | None
                         ) -> dict[TopicPartition, int | BrokerResponseError]:
        """ElectLeaders: for each partition (every one for None), the leader it has after
        the election, or the error Kafka answers (see :mod:`election_requests`)."""
        wanted = list(keys) if keys is not None else self.assignments_keys()
        results: dict[TopicPartition, int | BrokerResponseError] = {}
        changed = []
        for key in wanted:
            try:
                state = self._reload_state(key) if key in self.states else None
            except NoNodeError:
                state = None
            if state is None:
                results[key] = UnknownTopicOrPartitionError(f"{key[0]}-{key[1]}")
                continue
            replicas = self.assignments[key[0]][key[1]]
            live = self._live_for(key)
            outcome = requested_election(kind, f"{key[0]}-{key[1]}", replicas, state.leader,
                                         state.isr, live)
            if isinstance(outcome, BrokerResponseError):
                results[key] = outcome
                continue
            def elect(replicas: list[int], current: layout.LeaderIsr,
                      key: TopicPartition = key, live: set[int] = live) -> Election:
                again = requested_election(kind, f"{key[0]}-{key[1]}", replicas,
                                           current.leader, current.isr, live)
                return (Election(current.leader, current.isr)
                        if isinstance(again, BrokerResponseError) else again)
            if self._apply_election(key, elect):
                changed.append(key)
            results[key] = self.states[key][0].leader
        if changed:
            self._announce(changed, to=(), changed=changed)
        return results

    def _reload_state(self, key: TopicPartition) -> layout.LeaderIsr:
        """The partition state node as it is now (a leader may have grown the ISR since),
        read before an election as Kafka's partition state machine does."""
        path = layout.partition_state_path(*key)
        data, stat = self.store.get(path)
        self.states[key] = (layout.LeaderIsr.decode(path, data), stat.version)
        return self.states[key][0]

    def rebalance_leaders(self) -> list[TopicPartition]:
        """The auto.leader.rebalance check: preferred elections for brokers over
        ``leader.imbalance.per.broker.percentage``; returns the partitions moved."""
        leaders = {key: state.leader for key, (state, _v) in self.states.items()}
        preferred = {key: self.assignments[key[0]][key[1]][0] for key in self.states
                     if self.assignments[key[0]][key[1]]}
        chosen = imbalanced(leaders, preferred, self.imbalance_percentage)
        if not chosen:
            return []
        log.info("controller %d: leaders of %s are not their preferred replicas; "
                 "rebalancing", self.broker_id, chosen)
        outcomes = self.elect_on_request(ElectionType.PREFERRED, chosen)
        return [key for key, outcome in outcomes.items() if outcome == preferred[key]]

    # ------------------------------------------------------------------ reassignments

    def alter_reassignments(self, requests: dict[TopicPartition, list[int] | None]
                            ) -> dict[TopicPartition, BrokerResponseError | None]:
        """AlterPartitionReassignments (KIP-455): each partition starts moving to its target
        replicas (a new target replaces one under way), or, for None, its move is
        cancelled; returns each partition's error, None once the change is under way."""
        results: dict[TopicPartition, BrokerResponseError | None] = {}
        for key, target in requests.items():
            name = f"{key[0]}-{key[1]}"
            try:
                if key not in self.states:
                    raise UnknownTopicOrPartitionError(name)
                if target is None:
                    self._cancel_reassignment(key)
                else:
                    self._start_reassignment(key, checked_target(name, target, self.live))
            except BrokerResponseError as exc:
                results[key] = exc
                continue
            results[key] = None
        return results

    def list_reassignments(self, keys: Iterable[TopicPartition] | None
                           ) -> dict[TopicPartition, Reassignment]:
        """The moves under way (of ``keys`` only, unless None)."""
        wanted = self.reassignments if keys is None else set(keys)
        return {key: move for key, move in sorted(self.reassignments.items())
                if key in wanted}

    def _start_reassignment(self, key: TopicPartition, target: tuple[int, ...]) -> None:
        """Kafka's first phase: the assignment becomes target plus leaving replicas (stored
        with adding/removing, so a new controller resumes), the leader epoch is bumped and
        every replica hears of it: the new ones start fetching."""
        topic, index = key
        previous = self.reassignments.get(key)
        original = previous.original if previous else tuple(self.assignments[topic][index])
        move = Reassignment(original, target)
        abandoned = [b for b in previous.adding if b not in move.replicas] if previous else []
        self.reassignments[key] = move
        self.assignments[topic][index] = move.replicas
        self._write_assignment(topic)
        self._write_state(key, self._next_epoch)
        self._announce([key], to=(), changed=[key])
        self._delete_replicas(key, abandoned)
        log.info("controller %d: reassigning %s-%d from %s to %s", self.broker_id, topic,
                 index, list(original), list(target))
        self._maybe_finish_reassignment(key)

    def _cancel_reassignment(self, key: TopicPartition) -> None:
        """Back to the original replicas; the ones being added are deleted."""
        move = self.reassignments.get(key)
        if move is None:
            raise NoReassignmentInProgressError(f"{key[0]}-{key[1]}: no reassignment is in "
                                                "progress")
        log.info("controller %d: cancelling the reassignment of %s-%d", self.broker_id, *key)
        self._finish_reassignment(key, move.original, move.adding)

    def _maybe_finish_reassignment(self, key: TopicPartition) -> None:
        move = self.reassignments[key]
        if move.complete(self._reload_state(key).isr):
            log.info("controller %d: %s-%d moved to %s", self.broker_id, *key,
                     list(move.target))
            self._finish_reassignment(key, move.target, move.removing)

    def _finish_reassignment(self, key: TopicPartition, replicas: tuple[int, ...],
                             leaving: list[int]) -> None:
        """Kafka's second phase: the assignment is ``replicas``; a leader outside them (or
        gone) hands over to the first of them in the ISR, the ISR keeps only them, the
        leader epoch is bumped, and the ``leaving`` replicas are stopped and deleted."""
        topic, index = key
        live = self._live_for(key)

        def decide(current: layout.LeaderIsr) -> layout.LeaderIsr:
            isr = tuple(b for b in current.isr if b in replicas) or current.isr
            leader = current.leader
            if leader not in replicas or leader not in live:
                leader = next((b for b in replicas if b in isr and b in live), NO_LEADER)
            return layout.LeaderIsr(leader, current.leader_epoch + 1, isr, self.epoch)
        del self.reassignments[key]
        self.assignments[topic][index] = list(replicas)
        self._write_state(key, decide)
        self._write_assignment(topic)
        self._announce([key], to=(), changed=[key])
        self._delete_replicas(key, leaving)

    def _next_epoch(self, current: layout.LeaderIsr) -> layout.LeaderIsr:
        return replace(current, leader_epoch=current.leader_epoch + 1,
                       controller_epoch=self.epoch)

    def _delete_replicas(self, key: TopicPartition, brokers: Iterable[int]) -> None:
        for broker_id in brokers:
            self._send(broker_id, StopReplica(self.broker_id, self.epoch, (key,), True))

    def _write_assignment(self, topic: str) -> None:
        """The topic's assignment node from this controller's view, with its partitions
        under way as adding/removing replicas; partitions added meanwhile are kept."""
        path = layout.topic_path(topic)
        moving = {index: move for (name, index), move in self.reassignments.items()
                  if name == topic}
        for _attempt in range(MAX_STATE_WRITE_ATTEMPTS):
            data, stat = self.store.get(path)
            assignment = {**layout.decode_assignment(topic, data), **self.assignments[topic]}
            document = layout.encode_assignment(
                assignment, {index: move.adding for index, move in moving.items()},
                {index: move.removing for index, move in moving.items()},
                topic_id=self.topic_ids[topic])
            try:
                self.store.commit([Check(layout.CONTROLLER_EPOCH, self.epoch_version),
                                   SetData(path, document, stat.version)])
            except BadVersionError:
                self._check_epoch()
                continue
            return
        raise CoordinationError(f"{path}: gave up after {MAX_STATE_WRITE_ATTEMPTS} conflicts")
