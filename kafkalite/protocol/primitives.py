"""Codecs for Kafka's primitive wire types, built as closures once per (type, form).

A decoder is ``decode(buf, pos) -> (value, next_pos)``; an encoder is
``encode(value, out)`` appending byte chunks (and, for RECORDS, possibly an opaque
object with ``__len__`` that the caller sends as is, e.g. a file region for sendfile).
Every way bad input can fail surfaces as :class:`ProtocolDecodeError` or
:class:`ProtocolEncodeError` naming what was being read or written.
"""

from __future__ import annotations

import struct
import uuid
from abc import ABC, abstractmethod
from collections.abc import Callable
from typing import Any

from kafkalite.errors import KafkaError, ProtocolDecodeError
from kafkalite.protocol.varint import decode_uvarint, decode_varint, encode_uvarint, encode_varint

Buffer = bytes | bytearray | memoryview
Decoder = Callable[[Buffer, int], tuple[Any, int]]
Encoder = Callable[[Any, list[Any]], None]
INT32_MAX = 2**31 - 1
"""The largest int32: Kafka's "no limit" for int32 settings and fields, the top of
correlation ids, sequences and a segment's relative offsets."""

BYTES_LIKE = (bytes, bytearray, memoryview)


class ProtocolEncodeError(KafkaError, ValueError):
    """A value that cannot be encoded as its schema field; ``path`` names the field."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


class FieldDecodeError(ProtocolDecodeError):
    """A decode failure inside a struct; ``path`` names the field being read."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}" if path else reason)
        self.path = path
        self.reason = reason


def _truncated(what: str, pos: int, need: int, buf: Buffer) -> ProtocolDecodeError:
    return ProtocolDecodeError(
        f"truncated {what} at byte {pos}: need {need} bytes, {max(len(buf) - pos, 0)} left"
    )


class FieldType(ABC):
    """A wire type: knows how to build its decoder and encoder for one message version."""

    name: str

    @abstractmethod
    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder: ...

    @abstractmethod
    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder: ...

    @abstractmethod
    def default(self, nullable: bool) -> Any:
        """A fresh default value (``None`` for nullable variable-length types)."""

    def __repr__(self) -> str:
        return self.name


class _Fixed(FieldType):
    """A fixed-width big-endian number."""

    def __init__(self, name: str, fmt: str, zero: Any) -> None:
        self.name = name
        self._struct = struct.Struct(">" + fmt)
        self._zero = zero

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        unpack_from = self._struct.unpack_from
        size = self._struct.size
        name = self.name

        def decode(buf: Buffer, pos: int) -> tuple[Any, int]:
            try:
                return unpack_from(buf, pos)[0], pos + size
            except struct.error:
                raise _truncated(name, pos, size, buf) from None

        return decode

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        pack = self._struct.pack
        name = self.name

        def encode(value: Any, out: list[Any]) -> None:
            try:
                out.append(pack(value))
            except struct.error as exc:
                raise ProtocolEncodeError("", f"{name} cannot encode {value!r} ({exc})") from None

        return encode

    def default(self, nullable: bool) -> Any:
        return self._zero


class _Bool(FieldType):
    name = "bool"

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        def decode(buf: Buffer, pos: int) -> tuple[bool, int]:
            if pos >= len(buf):
                raise _truncated("bool", pos, 1, buf)
            return buf[pos] != 0, pos + 1

        return decode

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        def encode(value: Any, out: list[Any]) -> None:
            if value is True:
                out.append(b"\x01")
            elif value is False:
                out.append(b"\x00")
            else:
                raise ProtocolEncodeError("", f"bool expected, got {type(value).__name__}")

        return encode

    def default(self, nullable: bool) -> bool:
        return False


class _Varint(FieldType):
    """Unsigned LEB128 or zig-zag signed varint/varlong, range-checked on encode."""

    def __init__(self, name: str, lo: int, hi: int, signed: bool) -> None:
        self.name = name
        self._lo, self._hi, self._signed = lo, hi, signed

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        read = decode_varint if self._signed else decode_uvarint
        lo, hi, name = self._lo, self._hi, self.name

        def decode(buf: Buffer, pos: int) -> tuple[int, int]:
            value, end = read(buf, pos)
            if not lo <= value <= hi:
                raise ProtocolDecodeError(f"{name} {value} out of range at byte {pos}")
            return value, end

        return decode

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        write = encode_varint if self._signed else encode_uvarint
        lo, hi, name = self._lo, self._hi, self.name

        def encode(value: Any, out: list[Any]) -> None:
            if type(value) is not int or not lo <= value <= hi:
                raise ProtocolEncodeError("", f"{name} cannot encode {value!r}")
            out.append(write(value))

        return encode

    def default(self, nullable: bool) -> int:
        return 0


ZERO_UUID = uuid.UUID(int=0)
"""Kafka's null UUID: no topic id (a request naming the topic instead, or an id unknown)."""


class _Uuid(FieldType):
    name = "uuid"
    ZERO = ZERO_UUID

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        def decode(buf: Buffer, pos: int) -> tuple[uuid.UUID, int]:
            end = pos + 16
            if end > len(buf):
                raise _truncated("uuid", pos, 16, buf)
            return uuid.UUID(bytes=bytes(buf[pos:end])), end

        return decode

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        def encode(value: Any, out: list[Any]) -> None:
            if not isinstance(value, uuid.UUID):
                raise ProtocolEncodeError("", f"uuid.UUID expected, got {type(value).__name__}")
            out.append(value.bytes)

        return encode

    def default(self, nullable: bool) -> uuid.UUID:
        return self.ZERO


_INT16 = struct.Struct(">h")
_INT32 = struct.Struct(">i")
_NULL_INT16 = _INT16.pack(-1)
_NULL_INT32 = _INT32.pack(-1)


def length_reader(prefix: str, compact: bool, nullable: bool, what: str) -> Decoder:
    """Reads a length/count prefix: -1 means null (only when nullable).

    ``prefix`` is the classic width ("int16" for strings, "int32" for bytes and arrays);
    compact forms use an unsigned varint holding N+1 (0 = null). The length is checked
    against the bytes left only by the caller, which knows the element size.
    """
    if compact:

        def read(buf: Buffer, pos: int) -> tuple[int, int]:
            raw, end = decode_uvarint(buf, pos)
            if raw == 0 and not nullable:
                raise ProtocolDecodeError(f"null {what} at byte {pos} in a non-nullable field")
            if raw > INT32_MAX:
                raise ProtocolDecodeError(f"{what} length {raw - 1} too large at byte {pos}")
            return raw - 1, end

        return read
    unpack_from = (_INT16 if prefix == "int16" else _INT32).unpack_from
    size = 2 if prefix == "int16" else 4

    def read_classic(buf: Buffer, pos: int) -> tuple[int, int]:
        try:
            (n,) = unpack_from(buf, pos)
        except struct.error:
            raise _truncated(f"{what} length", pos, size, buf) from None
        if n < -1 or (n == -1 and not nullable):
            raise ProtocolDecodeError(f"invalid {what} length {n} at byte {pos}")
        return n, pos + size

    return read_classic


def length_writer(prefix: str, compact: bool) -> Callable[[int], bytes]:
    """Encodes a length/count prefix; -1 encodes null."""
    if compact:
        return lambda n: encode_uvarint(n + 1)
    pack = (_INT16 if prefix == "int16" else _INT32).pack
    return pack


class _String(FieldType):
    name = "string"

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        read_len = length_reader("int16", flexible, nullable, "string")

        def decode(buf: Buffer, pos: int) -> tuple[str | None, int]:
            n, pos = read_len(buf, pos)
            if n < 0:
                return None, pos
            end = pos + n
            if end > len(buf):
                raise ProtocolDecodeError(
                    f"string length {n} exceeds the {len(buf) - pos} bytes left at byte {pos}"
                )
            try:
                return str(buf[pos:end], "utf-8"), end
            except UnicodeDecodeError as exc:
                raise ProtocolDecodeError(f"string at byte {pos} is not UTF-8: {exc}") from None

        return decode

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        write_len = length_writer("int16", flexible)
        limit = INT32_MAX if flexible else 0x7FFF

        def encode(value: Any, out: list[Any]) -> None:
            if value is None:
                if not nullable:
                    raise ProtocolEncodeError("", "None given for a non-nullable string")
                out.append(write_len(-1))
                return
            if not isinstance(value, str):
                raise ProtocolEncodeError("", f"str expected, got {type(value).__name__}")
            data = value.encode("utf-8")
            if len(data) > limit:
                raise ProtocolEncodeError("", f"string of {len(data)} bytes exceeds {limit}")
            out.append(write_len(len(data)))
            out.append(data)

        return encode

    def default(self, nullable: bool) -> str | None:
        return None if nullable else ""


class _Bytes(FieldType):
    """BYTES decodes to ``bytes``; RECORDS decodes to a zero-copy ``memoryview`` slice and
    encodes any object with ``__len__`` as its own chunk (the broker's sendfile regions)."""

    def __init__(self, name: str, zero_copy: bool) -> None:
        self.name = name
        self._zero_copy = zero_copy

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        read_len = length_reader("int32", flexible, nullable, self.name)
        zero_copy = self._zero_copy
        name = self.name

        def decode(buf: Buffer, pos: int) -> tuple[Any, int]:
            n, pos = read_len(buf, pos)
            if n < 0:
                return None, pos
            end = pos + n
            if end > len(buf):
                raise ProtocolDecodeError(
                    f"{name} length {n} exceeds the {len(buf) - pos} bytes left at byte {pos}"
                )
            if zero_copy:
                return memoryview(buf)[pos:end], end
            return bytes(buf[pos:end]), end

        return decode

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        write_len = length_writer("int32", flexible)
        opaque_ok = self._zero_copy
        name = self.name

        def encode(value: Any, out: list[Any]) -> None:
            if value is None:
                if not nullable:
                    raise ProtocolEncodeError("", f"None given for non-nullable {name}")
                out.append(write_len(-1))
                return
            if isinstance(value, memoryview):
                size = value.nbytes
            elif isinstance(value, bytes | bytearray) or (
                opaque_ok and hasattr(value, "__len__") and not isinstance(value, str)
            ):
                size = len(value)
            else:
                raise ProtocolEncodeError("", f"bytes expected, got {type(value).__name__}")
            out.append(write_len(size))
            if size:
                out.append(value)

        return encode

    def default(self, nullable: bool) -> bytes | None:
        return None if nullable or self._zero_copy else b""


INT8: FieldType = _Fixed("int8", "b", 0)
INT16: FieldType = _Fixed("int16", "h", 0)
INT32: FieldType = _Fixed("int32", "i", 0)
INT64: FieldType = _Fixed("int64", "q", 0)
UINT16: FieldType = _Fixed("uint16", "H", 0)
UINT32: FieldType = _Fixed("uint32", "I", 0)
FLOAT64: FieldType = _Fixed("float64", "d", 0.0)
BOOL: FieldType = _Bool()
UVARINT: FieldType = _Varint("unsigned varint", 0, (1 << 32) - 1, signed=False)
VARINT: FieldType = _Varint("varint", -(1 << 31), (1 << 31) - 1, signed=True)
VARLONG: FieldType = _Varint("varlong", -(1 << 63), (1 << 63) - 1, signed=True)
UUID: FieldType = _Uuid()
STRING: FieldType = _String()
BYTES: FieldType = _Bytes("bytes", zero_copy=False)
RECORDS: FieldType = _Bytes("records", zero_copy=True)
