"""Partitioners: which partition of a topic a record goes to when the caller does not say.

Keyed records are hashed with Java's murmur2, so the same key lands on the same partition from
kafkalite, the Java client, kafka-python, aiokafka and librdkafka's ``murmur2_random``; the
hash runs over *all* partitions so a key does not move while a leader is down. Records
without a key are spread, by default stickily (KIP-480): one partition until the producer
closes a batch for it, which makes fewer, fuller batches than picking per record.

Partitioners are called from user threads concurrently; the built-in ones are thread-safe.
"""

from __future__ import annotations

import itertools
import random
import struct
import threading
from abc import ABC, abstractmethod
from collections.abc import Callable, Collection, Mapping, Sequence
from typing import Any, Protocol

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import UnknownTopicOrPartitionError

_MURMUR2_SEED = 0x9747B28C
_MURMUR2_M = 0x5BD1E995
_MASK32 = 0xFFFFFFFF


def murmur2(data: bytes | bytearray | memoryview) -> int:
    """Java's ``Utils.murmur2``: 32-bit MurmurHash2, returned as a signed int like Java's."""
    length = len(data)
    h = (_MURMUR2_SEED ^ length) & _MASK32
    for k in struct.unpack_from(f"<{length >> 2}I", data):
        k = (k * _MURMUR2_M) & _MASK32
        k ^= k >> 24
        h = ((h * _MURMUR2_M) & _MASK32) ^ ((k * _MURMUR2_M) & _MASK32)
    tail = length & 3
    if tail:
        base = length - tail
        if tail == 3:
            h ^= data[base + 2] << 16
        if tail >= 2:
            h ^= data[base + 1] << 8
        h = ((h ^ data[base]) * _MURMUR2_M) & _MASK32
    h ^= h >> 13
    h = (h * _MURMUR2_M) & _MASK32
    h ^= h >> 15
    return h - 0x100000000 if h & 0x80000000 else h


class PartitionSource(Protocol):
    """What a partitioner needs from the cluster; :class:`ClusterMetadata` provides it."""

    def partitions_for_topic(self, topic: str) -> Collection[int] | None: ...

    def available_partitions_for_topic(self, topic: str) -> Collection[int]: ...


class WatchedPartitionSource(PartitionSource, Protocol):
    """A :class:`PartitionSource` that calls listeners after each metadata update."""

    def add_listener(self, listener: Callable[[Any], None]) -> None: ...


def _known_partitions(topic: str, cluster: PartitionSource) -> Collection[int]:
    partitions = cluster.partitions_for_topic(topic)
    if not partitions:
        raise UnknownTopicOrPartitionError(f"no partition metadata for topic {topic!r}")
    return partitions


def all_partitions(topic: str, cluster: PartitionSource) -> list[int]:
    """Sorted partition ids of ``topic``; a typed error (not an IndexError) when there are none."""
    return sorted(_known_partitions(topic, cluster))


def partition_count(topic: str, cluster: PartitionSource) -> int:
    return len(_known_partitions(topic, cluster))


def available_partitions(topic: str, cluster: PartitionSource) -> list[int]:
    return sorted(cluster.available_partitions_for_topic(topic))


def partition_for_key(key_bytes: bytes, num_partitions: int) -> int:
    """The Java client's choice: ``toPositive(murmur2(key)) % numPartitions`` over all of them.

    Kafka numbers a topic's partitions 0..n-1, so the result is the partition id.
    """
    return (murmur2(key_bytes) & 0x7FFFFFFF) % num_partitions


class Partitioner(ABC):
    """Base class for partitioners; the signatures mirror the Java client's.

    Subclass it and pass the class or an instance as the producer's ``partitioner``.
    """

    def configure(self, config: Mapping[str, Any]) -> None:  # noqa: B027 optional hook
        """Called once with the producer's configuration before the first record."""

    @abstractmethod
    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: PartitionSource,
    ) -> int:
        """Return the partition id for one record."""

    def on_new_batch(  # noqa: B027 optional hook
        self, topic: str, cluster: PartitionSource, prev_partition: int
    ) -> None:
        """Called when the producer closes a batch on ``prev_partition`` (sticky hook)."""

    def close(self) -> None:  # noqa: B027 optional hook
        """Called when the producer closes."""


class _StickyChoice:
    """Per-topic sticky partition for KIP-480: kept until a batch on it closes."""

    def __init__(self, rng: random.Random) -> None:
        self._rng = rng
        self._lock = threading.Lock()
        self._current: dict[str, int] = {}

    def get(self, topic: str, cluster: PartitionSource) -> int:
        current = self._current.get(topic)
        if current is not None and current in cluster.available_partitions_for_topic(topic):
            return current  # the per-record fast path: no sorting, no lock
        partitions = all_partitions(topic, cluster)
        candidates = available_partitions(topic, cluster) or partitions
        with self._lock:
            current = self._current.get(topic)
            if current is not None and current in candidates:
                return current
            return self._pick(topic, candidates, current)

    @property
    def current(self) -> Mapping[str, int]:
        """The live choice per topic (callers only read it)."""
        return self._current

    def forget_unavailable(self, cluster: PartitionSource) -> None:
        """Metadata listener: drop each choice whose partition has no leader now, so the
        topic's next record picks again, as :meth:`get` would have on seeing it."""
        with self._lock:
            for topic, partition in list(self._current.items()):
                if partition not in cluster.available_partitions_for_topic(topic):
                    del self._current[topic]

    def move_on(self, topic: str, cluster: PartitionSource, prev_partition: int) -> None:
        """Switch away from ``prev_partition``; a stale notice (already switched) is ignored."""
        available = available_partitions(topic, cluster)
        with self._lock:
            current = self._current.get(topic)
            if current is None or current == prev_partition:
                self._pick(topic, available or all_partitions(topic, cluster), current)

    def _pick(self, topic: str, candidates: Sequence[int], previous: int | None) -> int:
        others = [p for p in candidates if p != previous] or list(candidates)
        choice = self._rng.choice(others)
        self._current[topic] = choice
        return choice


class DefaultPartitioner(Partitioner):
    """Keyed: murmur2 like Java. Unkeyed: sticky on a random available partition (KIP-480)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._sticky = _StickyChoice(rng or random.Random())

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: PartitionSource,
    ) -> int:
        if key_bytes is not None:
            return partition_for_key(key_bytes, partition_count(topic, cluster))
        return self._sticky.get(topic, cluster)

    def on_new_batch(self, topic: str, cluster: PartitionSource, prev_partition: int) -> None:
        self._sticky.move_on(topic, cluster, prev_partition)

    def unkeyed_choices(self, cluster: WatchedPartitionSource) -> Mapping[str, int]:
        """The live sticky choice per topic for records without a key, which a producer
        reads instead of calling :meth:`partition` for each record (Java's producer keeps
        this choice in its accumulator, KIP-794). Kept true against ``cluster``: a choice
        whose partition lost its leader is dropped at the metadata update that says so."""
        cluster.add_listener(self._sticky.forget_unavailable)
        return self._sticky.current


class UniformStickyPartitioner(DefaultPartitioner):
    """Sticky for every record, keys ignored (Java's ``partitioner.ignore.keys=true``)."""

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: PartitionSource,
    ) -> int:
        return self._sticky.get(topic, cluster)


class RandomPartitioner(Partitioner):
    """Keyed: murmur2. Unkeyed: a random available partition per record (pre-2.4 Java)."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self._rng = rng or random.Random()

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: PartitionSource,
    ) -> int:
        if key_bytes is not None:
            return partition_for_key(key_bytes, partition_count(topic, cluster))
        return self._rng.choice(
            available_partitions(topic, cluster) or all_partitions(topic, cluster)
        )


class RoundRobinPartitioner(Partitioner):
    """Every record, keyed or not, to the next available partition of its topic (Java's)."""

    def __init__(self) -> None:
        self._counters: dict[str, itertools.count[int]] = {}

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: PartitionSource,
    ) -> int:
        partitions = all_partitions(topic, cluster)
        # next() on itertools.count is atomic under the GIL, as is dict.setdefault.
        turn = next(self._counters.setdefault(topic, itertools.count()))
        candidates = available_partitions(topic, cluster) or partitions
        return candidates[turn % len(candidates)]


LegacyPartitionFunction = Callable[[bytes | None, list[int], list[int]], int]


class CallablePartitioner(Partitioner):
    """Adapts kafka-python's old style, ``func(key_bytes, all_partitions, available)``."""

    def __init__(self, func: LegacyPartitionFunction) -> None:
        self._func = func

    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: PartitionSource,
    ) -> int:
        return self._func(
            key_bytes, all_partitions(topic, cluster), available_partitions(topic, cluster)
        )


def unkeyed_choices(partitioner: Partitioner,
                    cluster: WatchedPartitionSource) -> Mapping[str, int] | None:
    """:meth:`DefaultPartitioner.unkeyed_choices` for the built-in sticky partitioners
    (subclasses included) whose ``partition`` is not overridden; None for the rest, which
    ``send()`` asks per record."""
    if type(partitioner).partition not in (DefaultPartitioner.partition,
                                           UniformStickyPartitioner.partition):
        return None
    assert isinstance(partitioner, DefaultPartitioner)
    return partitioner.unkeyed_choices(cluster)


PARTITIONERS: Mapping[str, type[Partitioner]] = {
    "default": DefaultPartitioner,
    "murmur2_random": DefaultPartitioner,
    "random": RandomPartitioner,
    "round_robin": RoundRobinPartitioner,
    "uniform_sticky": UniformStickyPartitioner,
}


def resolve_partitioner(value: object) -> Partitioner:
    """Turn the producer's ``partitioner`` setting into a :class:`Partitioner`.

    Accepts an instance, a subclass (instantiated without arguments), one of the names in
    :data:`PARTITIONERS`, or a plain callable in kafka-python's legacy style.
    """
    if isinstance(value, Partitioner):
        return value
    if isinstance(value, type) and issubclass(value, Partitioner):
        return value()
    if isinstance(value, str):
        try:
            return PARTITIONERS[value]()
        except KeyError:
            names = ", ".join(sorted(PARTITIONERS))
            raise ConfigError(
                "partitioner",
                f"unknown partitioner {value!r}; use one of {names}, "
                "a Partitioner subclass or a callable",
            ) from None
    if callable(value):
        return CallablePartitioner(value)
    raise ConfigError(
        "partitioner",
        f"expected a Partitioner, a Partitioner subclass, a name or a callable, "
        f"got {type(value).__name__}",
    )
