"""Which partition of a coordinator's internal topic (and so which coordinator) owns a key.

Kafka places a group in ``__consumer_offsets`` and a transactional id in
``__transaction_state`` with ``Utils.abs(key.hashCode()) % partition count``. Every client and
admin tool that reads those topics computes the same thing, so the hash must be Java's
``String.hashCode`` exactly: over UTF-16 code units, in int32 arithmetic.
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


def partition_for(key: str, num_partitions: int) -> int:
    """The partition that stores ``key`` (a group id, a transactional id)."""
    if num_partitions <= 0:
        raise ValueError(f"an internal topic needs partitions, got {num_partitions}")
    return java_utils_abs(java_string_hashcode(key)) % num_partitions
