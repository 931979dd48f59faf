import pytest

from kafkalite_server.coordinator.hashing import (
    java_string_hashcode,
    java_utils_abs,
    partition_for,
)


def reference_hashcode(text: str) -> int:
    """Java's documented formula, s[0]*31^(n-1) + ... + s[n-1], summed in big integers over
    UTF-16 code units and only then wrapped to int32: independent of the Horner loop."""
    units = [
        int.from_bytes(text.encode("utf-16-be", "surrogatepass")[i : i + 2], "big")
        for i in range(0, len(text.encode("utf-16-be", "surrogatepass")), 2)
    ]
    total = sum(unit * 31 ** (len(units) - 1 - i) for i, unit in enumerate(units))
    wrapped = total % 2**32
    return wrapped - 2**32 if wrapped >= 2**31 else wrapped


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("", 0),
        ("a", 97),
        ("ab", 97 * 31 + 98),
        # 0xD83D * 31 + 0xDE00: an emoji is two UTF-16 units, not one code point.
        ("\U0001f600", 55357 * 31 + 56832),
        # The classic Java puzzler: this string hashes to Integer.MIN_VALUE.
        ("polygenelubricants", -(2**31)),
    ],
)
def test_hashcode_vectors(text: str, expected: int) -> None:
    assert java_string_hashcode(text) == expected


@pytest.mark.parametrize(
    "text",
    [
        "console-consumer-12345",
        "my-group",
        "KafkaConsumerDemo",
        "groupé",
        "x" * 200,
        "\u00ff\u4e2d",
    ],
)
def test_hashcode_matches_the_formula(text: str) -> None:
    assert java_string_hashcode(text) == reference_hashcode(text)


def test_hashcode_stays_int32() -> None:
    value = java_string_hashcode("console-consumer-12345")
    assert -(2**31) <= value < 2**31


def test_utils_abs_maps_min_value_to_zero() -> None:
    assert java_utils_abs(-(2**31)) == 0
    assert java_utils_abs(-5) == 5
    assert java_utils_abs(7) == 7


def test_partition_for_min_value_hash_is_zero() -> None:
    assert partition_for("polygenelubricants", 50) == 0


@pytest.mark.parametrize("group", ["console-consumer-12345", "", "a", "KafkaConsumerDemo", "g-1"])
def test_partition_is_abs_hash_mod_partitions(group: str) -> None:
    assert partition_for(group, 50) == abs(reference_hashcode(group)) % 50
    assert partition_for("a", 50) == 97 % 50


def test_partition_count_must_be_positive() -> None:
    with pytest.raises(ValueError, match="needs partitions"):
        partition_for("g", 0)


def test_partition_matches_the_seed_worked_example() -> None:
    # Seed 004 computes abs("KafkaConsumerDemo".hashCode()) % 50 = 35 on a real cluster.
    assert partition_for("KafkaConsumerDemo", 50) == 35
