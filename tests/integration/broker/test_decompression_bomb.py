"""A zstd bomb (issue 30, item 12.1): a topic owner raises ``max.message.bytes`` to 2 GiB
and produces a batch of a few hundred KB whose 2,048 records decompress to 1 GiB.

The broker (an EmbeddedCluster in this process, ``kafkalite.batch.decompressed.max.bytes``
at 8 MiB) refuses it with MESSAGE_TOO_LARGE naming that key, and the memory it allocated
meanwhile (tracemalloc's peak, which sees the broker's thread) stays within a few times
the bound, far below the bomb's size; the process's peak RSS does not grow by the bomb
either. The partition still takes a normal batch afterwards.
"""

from __future__ import annotations

import resource
import struct
import tracemalloc
from collections.abc import Callable
from typing import Any

import crc32c
import zstandard

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import MessageTooLargeError
from kafkalite.protocol.varint import encode_varint
from kafkalite_server.embedded import EmbeddedCluster

MIB = 1 << 20
BOUND = 8 * MIB
RECORDS = 2048
VALUE = 512 * 1024  # 2048 x 512 KiB = 1 GiB of records


def _zstd_bomb() -> tuple[bytes, int]:
    """(compressed records section, record count): valid records, streamed through zstd so
    the gigabyte never exists in this process."""
    packer = zstandard.ZstdCompressor(level=3).compressobj()
    zeros = bytes(VALUE)
    parts = []
    for index in range(RECORDS):
        body_head = b"\x00\x00" + encode_varint(index) + encode_varint(-1) + encode_varint(VALUE)
        length = len(body_head) + VALUE + 1
        parts.append(packer.compress(encode_varint(length) + body_head))
        parts.append(packer.compress(zeros))
        parts.append(packer.compress(b"\x00"))  # no headers
    parts.append(packer.flush())
    return b"".join(parts), RECORDS


def _v2_batch(section: bytes, count: int, codec: int) -> bytes:
    """A v2 batch header (base offset 0, no producer) around a records section."""
    header = bytearray(61)
    struct.pack_into(">qiibIhiqqqhii", header, 0, 0, 49 + len(section), 0, 2, 0, codec,
                     count - 1, 1000, 1000, -1, -1, -1, count)
    crc = crc32c.crc32c(section, crc32c.crc32c(bytes(header[21:])))
    struct.pack_into(">I", header, 17, crc)
    return bytes(header) + section


def _produce(client: Any, records: bytes) -> dict[str, Any]:
    body = {"transactional_id": None, "acks": 1, "timeout_ms": 30_000,
            "topic_data": [{"name": "bombed", "partition_data": [{"index": 0,
                                                              "records": records}]}]}
    return client.call(ApiKey.PRODUCE, 8, body)["responses"][0]["partition_responses"][0]


def test_a_zstd_bomb_is_refused_within_the_brokers_bound(
        cluster_factory: Callable[..., EmbeddedCluster], wire: Callable[[str], Any],
        make_batch: Callable[..., bytes]) -> None:
    cluster = cluster_factory(kafkalite_batch_decompressed_max_bytes=str(BOUND))
    client = wire(cluster.bootstrap_servers)
    topics = [{"name": "bombed", "num_partitions": 1, "replication_factor": 1,
               "assignments": [], "configs": [{"name": "max.message.bytes",
                                               "value": str(2**31 - 1)}]}]
    created = client.call(ApiKey.CREATE_TOPICS, 4, {"topics": topics, "timeout_ms": 5000,
                                                    "validate_only": False})
    assert created["topics"][0]["error_code"] == 0
    section, count = _zstd_bomb()
    bomb = _v2_batch(section, count, codec=4)
    assert len(bomb) < MIB  # small on the wire

    rss_before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024
    tracemalloc.start()
    try:
        refused = _produce(client, bomb)
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    rss_growth = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024 - rss_before

    assert refused["error_code"] == MessageTooLargeError.errno
    assert "kafkalite.batch.decompressed.max.bytes 8388608" in refused["error_message"]
    assert peak < 4 * BOUND + len(bomb) * 4  # the bound, the request, a few copies
    assert rss_growth < 256 * MIB  # not the gigabyte
    assert _produce(client, make_batch([b"fine"]))["error_code"] == 0
