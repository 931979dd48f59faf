"""Which ``__consumer_offsets`` partition (and so which coordinator) owns a group.

Kafka places a group with ``Utils.abs(groupId.hashCode()) % offsets.topic.num.partitions``.
Every client and admin tool that reads the offsets topic computes the same thing, so the
hash must be Java's ``String.hashCode`` exactly: over UTF-16 code units, in int32 arithmetic.
"""

from __future__ import annotations

_INT32_MIN = -(2**31)


def java_string_hashcode(text: str) -> int:
    """Java's ``String.hashCode``: ``s[0]*31^(n-1) + ... + s[n-1]`` over UTF-16 units, as int32."""
    units = text.encode("utf-16-be", "surrogatepass")
    value = 0
    for index in range(0, len(units), 2):
        value = (value * 31 + (units[index] << 8 | units[index + 1])) & 0xFFFFFFFF
    return value - 2**32 if value >= 2**31 else value


def java_utils_abs(value: int) -> int:
    """Kafka's ``Utils.abs``: like ``Math.abs`` but maps Integer.MIN_VALUE to 0, not to itself."""
    return 0 if value == _INT32_MIN else abs(value)


def offsets_partition_for(group_id: str, num_partitions: int) -> int:
    """The ``__consumer_offsets`` partition that stores ``group_id``'s offsets and metadata."""
    if num_partitions <= 0:
        raise ValueError(f"offsets.topic.num.partitions must be positive, got {num_partitions}")
    return java_utils_abs(java_string_hashcode(group_id)) % num_partitions
