import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.partitioner.default import murmur2 as kafka_python_murmur2

from kafkalite.producer.partitioners import murmur2, partition_for_key


def _signed(value: int) -> int:
    return value - (1 << 32) if value & 0x80000000 else value


# apache/kafka UtilsTest.testMurmur2 (Java signed ints) and librdkafka's rdmurmur2.c unittest.
JAVA_VECTORS = [
    (b"21", -973932308),
    (b"foobar", -790332482),
    (b"a-little-bit-long-string", -985981536),
    (b"a-little-bit-longer-string", -1486304829),
    (b"lkjh234lh9fiuh90y23oiuhsafujhadof229phr9h19h89h8", -58897971),
    (b"abc", 479470107),
    (b"kafka", _signed(0xD067CF64)),
    (b"giberish123456789", _signed(0x8F552B0C)),
    (b"1234", _signed(0x9FC97B14)),
    (b"234", _signed(0xE7C009CA)),
    (b"34", _signed(0x873930DA)),
    (b"4", _signed(0x5A4B5CA1)),
    (b"PreAmbleWillBeRemoved,ThePrePartThatIs", _signed(0x78424F1C)),
    (b"", _signed(0x106E08D9)),
]


@pytest.mark.parametrize(("data", "expected"), JAVA_VECTORS)
def test_murmur2_matches_java_and_librdkafka_vectors(data: bytes, expected: int) -> None:
    assert murmur2(data) == expected


@pytest.mark.parametrize(
    ("key", "partition"),
    [(b"", 681), (b"a", 524), (b"ab", 434), (b"abc", 107), (b"123456789", 566), (b"\x00 ", 742)],
)
def test_partition_for_key_matches_java_with_1000_partitions(key: bytes, partition: int) -> None:
    assert partition_for_key(key, 1000) == partition


def test_murmur2_accepts_bytes_like() -> None:
    assert murmur2(bytearray(b"foobar")) == murmur2(memoryview(b"xfoobar")[1:]) == -790332482


@given(st.binary(max_size=300))
def test_murmur2_agrees_with_kafka_python(data: bytes) -> None:
    assert murmur2(data) == _signed(kafka_python_murmur2(data))
    assert -(2**31) <= murmur2(data) < 2**31


@given(st.binary(max_size=64), st.integers(min_value=1, max_value=5000))
def test_keyed_partition_agrees_with_kafka_python_formula(key: bytes, partitions: int) -> None:
    assert (
        partition_for_key(key, partitions) == (kafka_python_murmur2(key) & 0x7FFFFFFF) % partitions
    )
