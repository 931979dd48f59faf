"""``__transaction_state`` records: TransactionLogKey / TransactionLogValue.

Key: ``version int16 (0), transactional id string``. Value (version 0, non-flexible):
``version int16, producer id int64, producer epoch int16, transaction timeout ms int32,
transaction status int8, transaction partitions [topic string, partition ids [int32]]
(nullable), last update timestamp int64, start timestamp int64``. Version 1 values (the
flexible encoding with tagged previous/next producer ids) are read too. A null value is
the tombstone of an expired transactional id. The partition of a transactional id is
``abs(hashCode(id)) % transaction.state.log.num.partitions``, like groups
(:mod:`kafkalite_server.coordinator.hashing`).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from kafkalite.protocol.varint import decode_uvarint
from kafkalite_server.txn.state import TxnState

KEY_VERSION = 0
VALUE_VERSION = 0
_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_VALUE_HEAD = struct.Struct(">hqhib")
_TIMES = struct.Struct(">qq")


class TransactionLogFormatError(Exception):
    """A ``__transaction_state`` record that is not TransactionLogKey/Value."""


@dataclass(frozen=True, slots=True)
class TxnLogValue:
    producer_id: int
    producer_epoch: int
    timeout_ms: int
    state: TxnState
    partitions: frozenset[tuple[str, int]]
    last_update_ms: int
    start_ms: int


def encode_key(transactional_id: str) -> bytes:
    raw = transactional_id.encode()
    return _INT16.pack(KEY_VERSION) + _INT16.pack(len(raw)) + raw


def decode_key(data: bytes) -> str:
    if len(data) < 4:
        raise TransactionLogFormatError(f"key of {len(data)} bytes")
    (version,) = _INT16.unpack_from(data)
    (length,) = _INT16.unpack_from(data, 2)
    if version != KEY_VERSION or len(data) != 4 + length:
        raise TransactionLogFormatError(f"key version {version}, length {length}")
    return data[4:].decode()


def encode_value(value: TxnLogValue) -> bytes:
    parts = [_VALUE_HEAD.pack(VALUE_VERSION, value.producer_id, value.producer_epoch,
                              value.timeout_ms, value.state.id)]
    by_topic: dict[str, list[int]] = {}
    for topic, index in sorted(value.partitions):
        by_topic.setdefault(topic, []).append(index)
    parts.append(_INT32.pack(len(by_topic)))
    for topic, indexes in by_topic.items():
        raw = topic.encode()
        parts += [_INT16.pack(len(raw)), raw, _INT32.pack(len(indexes)),
                  struct.pack(f">{len(indexes)}i", *indexes)]
    parts.append(_TIMES.pack(value.last_update_ms, value.start_ms))
    return b"".join(parts)


def decode_value(data: bytes) -> TxnLogValue:
    try:
        (version,) = _INT16.unpack_from(data)
        if version == 0:
            return _decode_v0(data)
        if version == 1:
            return _decode_v1(data)
    except (struct.error, ValueError, UnicodeDecodeError) as exc:
        raise TransactionLogFormatError(f"value: {exc}") from exc
    raise TransactionLogFormatError(f"value version {version}")


def _decode_v0(data: bytes) -> TxnLogValue:
    _version, pid, epoch, timeout, status = _VALUE_HEAD.unpack_from(data)
    pos = _VALUE_HEAD.size
    (count,) = _INT32.unpack_from(data, pos)
    pos += 4
    partitions = set()
    for _ in range(max(count, 0)):
        (length,) = _INT16.unpack_from(data, pos)
        topic = data[pos + 2:pos + 2 + length].decode()
        pos += 2 + length
        (n,) = _INT32.unpack_from(data, pos)
        pos += 4
        for index in struct.unpack_from(f">{n}i", data, pos):
            partitions.add((topic, index))
        pos += 4 * n
    update, start = _TIMES.unpack_from(data, pos)
    return TxnLogValue(pid, epoch, timeout, TxnState.from_id(status), frozenset(partitions),
                       update, start)


def _decode_v1(data: bytes) -> TxnLogValue:
    """The flexible encoding: compact strings and arrays (length + 1), tagged fields."""
    _version, pid, epoch, timeout, status = _VALUE_HEAD.unpack_from(data)
    pos = _VALUE_HEAD.size
    count, pos = decode_uvarint(data, pos)
    partitions = set()
    for _ in range(max(count - 1, 0)):
        length, pos = decode_uvarint(data, pos)
        topic = data[pos:pos + length - 1].decode()
        pos += length - 1
        n, pos = decode_uvarint(data, pos)
        for index in struct.unpack_from(f">{n - 1}i", data, pos):
            partitions.add((topic, index))
        pos += 4 * (n - 1)
        tags, pos = decode_uvarint(data, pos)
        pos = _skip_tags(data, pos, tags)
    update, start = _TIMES.unpack_from(data, pos)
    return TxnLogValue(pid, epoch, timeout, TxnState.from_id(status), frozenset(partitions),
                       update, start)


def _skip_tags(data: bytes, pos: int, count: int) -> int:
    for _ in range(count):
        _tag, pos = decode_uvarint(data, pos)
        size, pos = decode_uvarint(data, pos)
        pos += size
    return pos
