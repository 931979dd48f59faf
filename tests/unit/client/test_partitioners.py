import random
from collections import Counter
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st

from kafkalite.errors import ConfigError
from kafkalite.producer.partitioners import (
    CallablePartitioner,
    DefaultPartitioner,
    Partitioner,
    PartitionSource,
    RandomPartitioner,
    RoundRobinPartitioner,
    UniformStickyPartitioner,
    partition_for_key,
    resolve_partitioner,
    unkeyed_choices,
)
from kafkalite.protocol.errors import UnknownTopicOrPartitionError

from .metadata_bodies import cluster_with, metadata_body

ALL_UP = cluster_with({"t": 6})
HALF_DOWN = cluster_with({"t": [0, -1, 1, -1, 2, -1]})  # partitions 1, 3, 5 have no leader
ALL_DOWN = cluster_with({"t": [-1, -1, -1]})


def send(partitioner: Partitioner, key: bytes | None, cluster: PartitionSource = ALL_UP) -> int:
    return partitioner.partition("t", key, key, b"v", b"v", cluster)


@pytest.mark.parametrize("factory", [DefaultPartitioner, RandomPartitioner])
@given(key=st.binary(max_size=40))
def test_keyed_records_use_murmur2_over_all_partitions(
    factory: type[Partitioner], key: bytes
) -> None:
    partitioner = factory()
    expected = partition_for_key(key, 6)
    assert send(partitioner, key) == expected
    # A leaderless partition does not move keys elsewhere (that would break per-key order).
    assert send(partitioner, key, HALF_DOWN) == expected


def test_default_partitioner_sticks_to_one_partition_until_a_batch_closes() -> None:
    partitioner = DefaultPartitioner(random.Random(7))
    first = send(partitioner, None)
    assert {send(partitioner, None) for _ in range(200)} == {first}
    partitioner.on_new_batch("t", ALL_UP, first)
    second = send(partitioner, None)
    assert second != first
    assert {send(partitioner, None) for _ in range(50)} == {second}


def test_stale_new_batch_notice_does_not_switch_again() -> None:
    partitioner = DefaultPartitioner(random.Random(1))
    current = send(partitioner, None)
    partitioner.on_new_batch("t", ALL_UP, (current + 1) % 6)  # a batch on another partition
    assert send(partitioner, None) == current


def test_sticky_partitions_spread_over_batches_and_skip_unavailable() -> None:
    partitioner = DefaultPartitioner(random.Random(3))
    chosen = Counter()
    for _ in range(600):
        partition = send(partitioner, None, HALF_DOWN)
        chosen[partition] += 1
        partitioner.on_new_batch("t", HALF_DOWN, partition)
    assert set(chosen) == {0, 2, 4}
    assert min(chosen.values()) > 100


def test_sticky_partition_moves_when_its_leader_goes_away() -> None:
    partitioner = DefaultPartitioner(random.Random(5))
    leaders = [0, 1, 2, 0, 1, 2]
    current = send(partitioner, None, cluster_with({"t": leaders}))
    leaders[current] = -1
    moved = send(partitioner, None, cluster_with({"t": leaders}))
    assert moved != current


def test_no_available_partition_falls_back_to_all_partitions() -> None:
    for partitioner in (DefaultPartitioner(), RandomPartitioner(), RoundRobinPartitioner()):
        assert send(partitioner, None, ALL_DOWN) in {0, 1, 2}


def test_uniform_sticky_ignores_keys() -> None:
    partitioner = UniformStickyPartitioner(random.Random(11))
    first = send(partitioner, b"key-a")
    assert {send(partitioner, key) for key in (b"key-b", None, b"key-c" * 9)} == {first}
    partitioner.on_new_batch("t", ALL_UP, first)
    assert send(partitioner, b"key-a") != first


def test_random_partitioner_uses_only_available_partitions_for_null_keys() -> None:
    partitioner = RandomPartitioner(random.Random(2))
    chosen = Counter(send(partitioner, None, HALF_DOWN) for _ in range(600))
    assert set(chosen) == {0, 2, 4}


def test_round_robin_cycles_available_partitions_keyed_or_not() -> None:
    partitioner = RoundRobinPartitioner()
    assert [send(partitioner, b"same-key") for _ in range(12)] == [0, 1, 2, 3, 4, 5] * 2
    assert [send(partitioner, None, HALF_DOWN) for _ in range(6)] == [0, 2, 4] * 2


def test_round_robin_counts_per_topic() -> None:
    partitioner = RoundRobinPartitioner()
    cluster = cluster_with({"a": 3, "b": 3})
    picks = [partitioner.partition(topic, None, None, None, None, cluster) for topic in "aabab"]
    assert picks == [0, 1, 0, 2, 1]


def test_unknown_topic_is_a_typed_error() -> None:
    for partitioner in (DefaultPartitioner(), RandomPartitioner(), RoundRobinPartitioner()):
        for key in (None, b"k"):
            with pytest.raises(UnknownTopicOrPartitionError, match="'nope'"):
                partitioner.partition("nope", key, key, None, None, ALL_UP)


class EvenOnly(Partitioner):
    def partition(
        self,
        topic: str,
        key: Any,
        key_bytes: bytes | None,
        value: Any,
        value_bytes: bytes | None,
        cluster: PartitionSource,
    ) -> int:
        return 2 * (len(value_bytes or b"") % 3)


def test_resolve_accepts_instances_subclasses_and_names() -> None:
    instance = EvenOnly()
    assert resolve_partitioner(instance) is instance
    assert isinstance(resolve_partitioner(EvenOnly), EvenOnly)
    assert send(resolve_partitioner(EvenOnly), None) == 2
    expected = {
        "default": DefaultPartitioner,
        "murmur2_random": DefaultPartitioner,
        "random": RandomPartitioner,
        "round_robin": RoundRobinPartitioner,
        "uniform_sticky": UniformStickyPartitioner,
    }
    for name, cls in expected.items():
        assert type(resolve_partitioner(name)) is cls


def test_resolve_wraps_a_legacy_callable() -> None:
    calls = []

    def pick_last_available(
        key_bytes: bytes | None, all_parts: list[int], available: list[int]
    ) -> int:
        calls.append((key_bytes, all_parts, available))
        return available[-1]

    partitioner = resolve_partitioner(pick_last_available)
    assert isinstance(partitioner, CallablePartitioner)
    assert send(partitioner, b"k", HALF_DOWN) == 4
    assert calls == [(b"k", [0, 1, 2, 3, 4, 5], [0, 2, 4])]


@pytest.mark.parametrize("bad", ["murmur3", "", 42, b"default", object()])
def test_resolve_rejects_unknown_values(bad: object) -> None:
    with pytest.raises(ConfigError, match=r"^partitioner: ") as info:
        resolve_partitioner(bad)
    assert info.value.key == "partitioner"


def test_the_producers_view_of_sticky_choices_follows_the_partitioner_and_the_leaders() -> None:
    leaders = [0, 1, 2, 0, 1, 2]
    cluster = cluster_with({"t": leaders})
    partitioner = DefaultPartitioner(random.Random(9))
    choices = unkeyed_choices(partitioner, cluster)
    assert choices == {}
    current = send(partitioner, None, cluster)
    assert choices == {"t": current}
    partitioner.on_new_batch("t", cluster, current)
    assert choices["t"] != current
    current = choices["t"]
    cluster.update_from_metadata(metadata_body({"t": leaders}), 0)  # nothing changed
    assert choices == {"t": current}
    leaders[current] = -1
    cluster.update_from_metadata(metadata_body({"t": leaders}), 0)
    assert "t" not in choices  # the next unkeyed record asks the partitioner, which moves
    assert send(partitioner, None, cluster) != current


class KeyLengthSticky(DefaultPartitioner):
    def partition(self, topic: str, key: Any, key_bytes: bytes | None, value: Any,
                  value_bytes: bytes | None, cluster: PartitionSource) -> int:
        return len(value_bytes or b"") % 6


def test_only_built_in_sticky_choices_skip_the_partitioner() -> None:
    assert unkeyed_choices(UniformStickyPartitioner(), cluster_with({"t": 6})) == {}
    for partitioner in (EvenOnly(), RandomPartitioner(), RoundRobinPartitioner(),
                        KeyLengthSticky()):
        assert unkeyed_choices(partitioner, cluster_with({"t": 6})) is None
