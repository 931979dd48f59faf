"""Replica placement as Kafka's AdminUtils does it.

Without racks, partition ``p``'s first replica goes to broker ``(p + start) % n`` and its
followers are shifted by an amount that grows each time ``p`` wraps past ``n``, so the
followers of one broker's partitions spread over all others. With racks, brokers are first
interleaved rack by rack, and a follower skips a broker whose rack (or itself) already holds
a replica while some rack (or broker) holds none. ``start`` and ``shift`` are random unless
given (tests fix them).
"""

from __future__ import annotations

import random
from collections.abc import Mapping, Sequence

from kafkalite.protocol.errors import InvalidReplicationFactorError, InvalidRequestError

_random = random.Random()
"""Not the global generator: that one is the application's (it may seed it)."""


def assign_replicas(brokers: Mapping[int, str | None], partitions: int, replication_factor: int,
                    *, first_partition: int = 0, start: int | None = None,
                    shift: int | None = None) -> dict[int, list[int]]:
    """``brokers`` maps each live broker id to its rack (None without one)."""
    if partitions <= 0:
        raise InvalidRequestError(f"number of partitions must be positive, got {partitions}")
    if replication_factor <= 0:
        raise InvalidReplicationFactorError(
            f"replication factor must be positive, got {replication_factor}")
    if replication_factor > len(brokers):
        raise InvalidReplicationFactorError(
            f"replication factor {replication_factor} is larger than the {len(brokers)} "
            "available brokers")
    racks = {rack for rack in brokers.values()}
    if None in racks and len(racks) > 1:
        raise InvalidRequestError("some brokers have a broker.rack and some do not; "
                                  "give every broker one, or none")
    count = len(brokers)
    start = _random.randrange(count) if start is None else start
    shift = _random.randrange(count) if shift is None else shift
    if None in racks:
        return _without_racks(sorted(brokers), partitions, replication_factor,
                              first_partition, start, shift)
    return _with_racks(dict(brokers), partitions, replication_factor, first_partition,
                       start, shift)


def _follower(first: int, step: int, replica: int, count: int) -> int:
    return (first + 1 + (step + replica) % (count - 1)) % count


def _without_racks(ids: Sequence[int], partitions: int, factor: int, first_partition: int,
                   start: int, shift: int) -> dict[int, list[int]]:
    count = len(ids)
    result: dict[int, list[int]] = {}
    index = first_partition
    for _ in range(partitions):
        if index > 0 and index % count == 0:
            shift += 1
        first = (index + start) % count
        result[index] = [ids[first]] + [ids[_follower(first, shift, j, count)]
                                        for j in range(factor - 1)]
        index += 1
    return result


def rack_alternated(brokers: Mapping[int, str | None]) -> list[int]:
    """One broker from each rack in turn (racks sorted, brokers sorted within a rack)."""
    by_rack: dict[str, list[int]] = {}
    for broker_id, rack in sorted(brokers.items()):
        by_rack.setdefault(str(rack), []).append(broker_id)
    ordered = [by_rack[rack] for rack in sorted(by_rack)]
    result: list[int] = []
    for i in range(max(len(group) for group in ordered)):
        result.extend(group[i] for group in ordered if i < len(group))
    return result


def _with_racks(brokers: dict[int, str | None], partitions: int, factor: int,
                first_partition: int, start: int, shift: int) -> dict[int, list[int]]:
    order = rack_alternated(brokers)
    count = len(order)
    rack_count = len(set(brokers.values()))
    result: dict[int, list[int]] = {}
    index = first_partition
    for _ in range(partitions):
        if index > 0 and index % count == 0:
            shift += 1
        first = (index + start) % count
        leader = order[first]
        replicas = [leader]
        racks_used = {brokers[leader]}
        k = 0
        for _replica in range(factor - 1):
            while True:
                candidate = order[_follower(first, shift * rack_count, k, count)]
                k += 1
                rack = brokers[candidate]
                if (rack not in racks_used or len(racks_used) == rack_count) and (
                        candidate not in replicas or len(replicas) == count):
                    replicas.append(candidate)
                    racks_used.add(rack)
                    break
        result[index] = replicas
        index += 1
    return result
