"""One broker's own view of the cluster, fed only by the controller's UpdateMetadata.

Metadata, FindCoordinator and the "unknown or led elsewhere?" question of the request
path read this cache; no broker reads another broker's objects or the controller's image.

A broker that has just registered has no view yet: until the controller's first
UpdateMetadata arrives its cache knows no brokers and no controller. ``wait_first_update``
lets Metadata hold its answer through that short window, because an answer with no brokers
sends some clients (librdkafka's admin controller lookup) into a wait they do not leave
before their own timeout.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import Callable, Set

from kafkalite_server.cluster.broker_endpoint import BrokerEndpoint
from kafkalite_server.cluster.messages import LEADER_DURING_DELETE, PartitionState, UpdateMetadata
from kafkalite_server.topic_ids import ZERO


class MetadataCache:
    def __init__(self, broker_id: int, cluster_id: str) -> None:
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self.controller_id = -1
        self.brokers: dict[int, BrokerEndpoint] = {}
        self._topics: dict[str, dict[int, PartitionState]] = {}
        self._ids: dict[str, uuid.UUID] = {}
        self._names: dict[uuid.UUID, str] = {}
        self._first_update = asyncio.Event()
        self._waiters: set[asyncio.Future[None]] = set()
        self._deletion_listeners: list[Callable[[Set[str]], None]] = []

    def on_topics_deleted(self, listener: Callable[[Set[str]], None]) -> None:
        """Calls ``listener`` with the names of the topics each UpdateMetadata deletes
        (Kafka's deleted partitions, which the group coordinator removes offsets of)."""
        self._deletion_listeners.append(listener)

    @property
    def has_first_update(self) -> bool:
        """Whether the controller's first UpdateMetadata has arrived (the cache knows every
        topic from then on)."""
        return self._first_update.is_set()

    async def wait_first_update(self, timeout_s: float) -> bool:
        """Waits at most ``timeout_s`` for the first UpdateMetadata; says whether it came."""
        if not self._first_update.is_set():
            try:
                await asyncio.wait_for(self._first_update.wait(), timeout_s)
            except TimeoutError:
                return False
        return True

    def update(self, message: UpdateMetadata) -> None:
        """Applies changed partitions (a LEADER_DURING_DELETE one removes its topic) and
        replaces the live broker list."""
        self.controller_id = message.controller_id
        self.brokers = {b.node_id: b for b in message.live_brokers}
        deleted: set[str] = set()
        for state in message.partitions:
            if state.leader == LEADER_DURING_DELETE:
                self._topics.pop(state.topic, None)
                self._names.pop(self._ids.pop(state.topic, ZERO), None)
                deleted.add(state.topic)
            else:
                if self._set_id(state.topic, state.topic_id):
                    self._topics.pop(state.topic, None)  # a predecessor's partitions
                self._topics.setdefault(state.topic, {})[state.partition] = state
        self._first_update.set()
        for waiter in self._waiters:
            if not waiter.done():
                waiter.set_result(None)
        self._waiters.clear()
        if deleted:
            for listener in self._deletion_listeners:
                listener(deleted)

    async def wait_until(self, condition: Callable[[], bool], timeout_s: float) -> bool:
        """Waits at most ``timeout_s`` until ``condition()`` holds, checking it after each
        UpdateMetadata; says whether it held. CreateTopics waits so for its partitions'
        leaders, as Kafka's DelayedCreatePartitions does, so a client that asks this broker
        right after the answer finds the topic usable."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout_s
        while not condition():
            remaining = deadline - loop.time()
            if remaining <= 0:
                return False
            waiter: asyncio.Future[None] = loop.create_future()
            self._waiters.add(waiter)
            try:
                await asyncio.wait_for(waiter, remaining)
            except TimeoutError:
                return condition()
            finally:
                self._waiters.discard(waiter)
        return True

    def has_leaders(self, topic: str, count: int) -> bool:
        """Whether the topic has at least ``count`` partitions here, each with a leader."""
        states = self.partitions_of(topic)
        return (states is not None and len(states) >= count
                and all(state.leader >= 0 for state in states))

    def broker_alive(self, broker_id: int) -> bool:
        """Registered, as the controller's last UpdateMetadata listed the live brokers."""
        return broker_id in self.brokers

    def _set_id(self, topic: str, topic_id: uuid.UUID) -> bool:
        """Records the topic's id; True when it replaces another: the topic was created
        again under its name and the update of its deletion never came here (the
        controller's channel to this broker was closed meanwhile), so what the cache holds
        of the name is the deleted topic's."""
        previous = self._ids.get(topic)
        if previous == topic_id or topic_id == ZERO:
            return False
        if previous is not None:
            self._names.pop(previous, None)
        self._ids[topic] = topic_id
        self._names[topic_id] = topic
        return previous is not None

    def topic_names(self) -> list[str]:
        return list(self._topics)

    def topic_id(self, topic: str) -> uuid.UUID:
        """The topic's id (KIP-516); ZERO for a topic not known here."""
        return self._ids.get(topic, ZERO)

    def topic_name(self, topic_id: uuid.UUID) -> str | None:
        """The name of the topic whose id is ``topic_id``; None for an id of no topic
        known here (one never created, or deleted: a topic created again under the same
        name has another id)."""
        return self._names.get(topic_id)

    def partitions_of(self, topic: str) -> list[PartitionState] | None:
        """The topic's partitions in index order, or None for a topic not known here."""
        found = self._topics.get(topic)
        if found is None:
            return None
        return [found[index] for index in sorted(found)]

    def partition(self, topic: str, index: int) -> PartitionState | None:
        return self._topics.get(topic, {}).get(index)

    def leader_endpoint(self, topic: str, index: int) -> BrokerEndpoint | None:
        state = self.partition(topic, index)
        return None if state is None else self.brokers.get(state.leader)
