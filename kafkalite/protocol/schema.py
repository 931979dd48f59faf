"""Schemas as data, and the one generic engine that encodes and decodes them.

A message is described once (:class:`Message` of :class:`Field` s, with nested
:class:`Struct` and :class:`Array` types) with the versions each field exists in, the
versions it is nullable in, and, for flexible versions, tagged fields with their tag
numbers. For each (struct, version) the engine compiles a flat list of per-field codec
closures once and caches it, so decoding a request is a loop over prepared functions.

Decoded bodies are plain dicts holding *every* field of the schema (absent fields carry
their default), so handlers never branch on the version to read a field.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple

from kafkalite.errors import ProtocolDecodeError
from kafkalite.protocol.primitives import (
    BYTES_LIKE,
    Buffer,
    Decoder,
    Encoder,
    FieldDecodeError,
    FieldType,
    ProtocolEncodeError,
    length_reader,
    length_writer,
)
from kafkalite.protocol.varint import decode_uvarint, encode_uvarint


class Versions(NamedTuple):
    """An inclusive version range; ``lo > hi`` means no version."""

    lo: int
    hi: int

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version <= self.hi

    @staticmethod
    @functools.cache
    def parse(spec: str) -> Versions:
        """``"3+"``, ``"2-5"``, ``"4"`` or ``"none"``; cached, as headers ask on every request."""
        if spec == "none":
            return Versions(1, 0)
        if spec.endswith("+"):
            return Versions(int(spec[:-1]), 0x7FFF)
        lo, _, hi = spec.partition("-")
        return Versions(int(lo), int(hi or lo))


_NO_DEFAULT: Any = object()


@dataclass(frozen=True)
class Field:
    """One field: its snake_case name, wire type, and version ranges.

    ``versions``/``nullable``/``tagged`` use :meth:`Versions.parse` notation. A field with
    ``tag`` set is a tagged field in its ``tagged`` versions (only in flexible versions).
    ``default`` overrides the type's default (0, "", False, [] or None when nullable).
    """

    name: str
    type: FieldType
    versions: str = "0+"
    nullable: str = "none"
    tag: int | None = None
    tagged: str = "none"
    default: Any = _NO_DEFAULT

    def default_value(self) -> Any:
        """A fresh default (new list/dict each call for mutable defaults)."""
        if self.default is not _NO_DEFAULT:
            return list(self.default) if isinstance(self.default, list) else self.default
        return self.type.default(self.nullable != "none")


class _Compiled(NamedTuple):
    decode: Decoder
    encode: Encoder


_STRUCT_PRESENT = b"\x01"
_STRUCT_NULL = b"\xff"


class Struct(FieldType):
    """A nested structure: a sequence of fields (plus a tag buffer in flexible versions).

    A nullable struct field (ShareGroupHeartbeat's ``assignment``) is preceded on the
    wire by an int8: -1 for null, 1 for a struct that follows, as Kafka writes it."""

    name = "struct"

    def __init__(self, *fields: Field) -> None:
        self.fields = fields
        self._cache: dict[tuple[int, bool], _Compiled] = {}

    def default(self, nullable: bool) -> dict[str, Any] | None:
        if nullable:
            return None
        return {f.name: f.default_value() for f in self.fields}

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        decode = self.compiled(version, flexible).decode
        if not nullable:
            return decode

        def decode_nullable(buf: Buffer, pos: int) -> tuple[dict[str, Any] | None, int]:
            if pos >= len(buf):
                raise ProtocolDecodeError(f"struct marker missing at byte {pos}")
            marker = buf[pos]
            if marker == 0xFF:
                return None, pos + 1
            if marker != 1:
                raise ProtocolDecodeError(f"struct marker {marker} at byte {pos} is not "
                                          "-1 (null) or 1 (present)")
            return decode(buf, pos + 1)

        return decode_nullable

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        encode = self.compiled(version, flexible).encode
        if not nullable:
            return encode

        def encode_nullable(value: Any, out: list[Any]) -> None:
            if value is None:
                out.append(_STRUCT_NULL)
                return
            out.append(_STRUCT_PRESENT)
            encode(value, out)

        return encode_nullable

    def compiled(self, version: int, flexible: bool) -> _Compiled:
        key = (version, flexible)
        found = self._cache.get(key)
        if found is None:
            found = self._cache[key] = _compile_struct(self.fields, version, flexible)
        return found


class Array(FieldType):
    """An array (int32 count, or compact uvarint N+1 in flexible versions; -1/0 = null)."""

    def __init__(self, element: FieldType) -> None:
        self.element = element
        self.name = f"[{element.name}]"

    def default(self, nullable: bool) -> list[Any] | None:
        return None if nullable else []

    def decoder(self, version: int, flexible: bool, nullable: bool) -> Decoder:
        read_len = length_reader("int32", flexible, nullable, "array")
        element = self.element.decoder(version, flexible, False)

        def decode(buf: Buffer, pos: int) -> tuple[list[Any] | None, int]:
            n, pos = read_len(buf, pos)
            if n < 0:
                return None, pos
            if n > len(buf) - pos:
                raise ProtocolDecodeError(
                    f"array count {n} exceeds the {len(buf) - pos} bytes left at byte {pos}"
                )
            items: list[Any] = []
            append = items.append
            index = 0
            try:
                for index in range(n):  # noqa: B007 (named in errors)
                    item, pos = element(buf, pos)
                    append(item)
            except FieldDecodeError as exc:
                raise FieldDecodeError(f"[{index}]{_dotted(exc.path)}", exc.reason) from None
            except ProtocolDecodeError as exc:
                raise FieldDecodeError(f"[{index}]", str(exc)) from None
            return items, pos

        return decode

    def encoder(self, version: int, flexible: bool, nullable: bool) -> Encoder:
        write_len = length_writer("int32", flexible)
        element = self.element.encoder(version, flexible, False)

        def encode(value: Any, out: list[Any]) -> None:
            if value is None:
                if not nullable:
                    raise ProtocolEncodeError("", "None given for a non-nullable array")
                out.append(write_len(-1))
                return
            if not isinstance(value, list | tuple):
                raise ProtocolEncodeError("", f"list expected, got {type(value).__name__}")
            out.append(write_len(len(value)))
            index = 0
            try:
                for index, item in enumerate(value):  # noqa: B007 (named in errors)
                    element(item, out)
            except ProtocolEncodeError as exc:
                raise ProtocolEncodeError(f"[{index}]{_dotted(exc.path)}", exc.reason) from None

        return encode


def _dotted(path: str) -> str:
    return path if not path or path.startswith("[") else "." + path


def _fresh_default_factory(f: Field) -> Callable[[], Any] | None:
    """None when the default is immutable and can be shared between decoded bodies."""
    value = f.default_value()
    return f.default_value if isinstance(value, list | dict) else None


def _compile_struct(fields: tuple[Field, ...], version: int, flexible: bool) -> _Compiled:
    shared_defaults: dict[str, Any] = {}
    fresh_defaults: list[tuple[str, Callable[[], Any]]] = []
    decode_steps: list[tuple[str, Decoder]] = []
    encode_steps: list[tuple[str, Encoder, Any]] = []
    tagged_decoders: dict[int, tuple[str, Decoder]] = {}
    tagged_encoders: list[tuple[int, str, Encoder, Any]] = []

    for f in fields:
        present = version in Versions.parse(f.versions)
        is_tagged = (
            present and flexible and f.tag is not None and version in Versions.parse(f.tagged)
        )
        if not present or is_tagged:
            factory = _fresh_default_factory(f)
            if factory is None:
                shared_defaults[f.name] = f.default_value()
            else:
                fresh_defaults.append((f.name, factory))
        if not present:
            continue
        nullable = version in Versions.parse(f.nullable)
        decode = f.type.decoder(version, flexible, nullable)
        encode = f.type.encoder(version, flexible, nullable)
        default = f.default_value()
        if default is None and not nullable:
            default = f.type.default(False)
        if is_tagged:
            assert f.tag is not None
            tagged_decoders[f.tag] = (f.name, decode)
            tagged_encoders.append((f.tag, f.name, encode, default))
        else:
            decode_steps.append((f.name, decode))
            encode_steps.append((f.name, encode, default))
    tagged_encoders.sort(key=lambda t: t[0])

    def decode_struct(buf: Buffer, pos: int) -> tuple[dict[str, Any], int]:
        out = shared_defaults.copy()
        for fresh_name, factory in fresh_defaults:
            out[fresh_name] = factory()
        name = ""
        try:
            for name, decode in decode_steps:
                out[name], pos = decode(buf, pos)
            if flexible:
                name = "tagged fields"
                pos = decode_tag_buffer(buf, pos, tagged_decoders, out)
        except FieldDecodeError as exc:
            raise FieldDecodeError(name + _dotted(exc.path), exc.reason) from None
        except ProtocolDecodeError as exc:
            raise FieldDecodeError(name, str(exc)) from None
        return out, pos

    def encode_struct(value: Any, out: list[Any]) -> None:
        if not isinstance(value, Mapping):
            raise ProtocolEncodeError("", f"mapping expected, got {type(value).__name__}")
        get = value.get
        name = ""
        try:
            for name, encode, default in encode_steps:
                encode(get(name, default), out)
            if flexible:
                name = "tagged fields"
                _encode_tags(value, tagged_encoders, out)
        except ProtocolEncodeError as exc:
            raise ProtocolEncodeError(name + _dotted(exc.path), exc.reason) from None

    return _Compiled(decode_struct, encode_struct)


def decode_tag_buffer(
    buf: Buffer, pos: int, decoders: dict[int, tuple[str, Decoder]], out: dict[str, Any]
) -> int:
    """Reads a tag buffer into ``out``; unknown tags are skipped, as the protocol requires.

    With no ``decoders`` it just skips the buffer (request/response headers)."""
    count, pos = decode_uvarint(buf, pos)
    for _ in range(count):
        tag, pos = decode_uvarint(buf, pos)
        size, pos = decode_uvarint(buf, pos)
        end = pos + size
        if end > len(buf):
            raise ProtocolDecodeError(f"tagged field {tag} of {size} bytes overruns the buffer")
        known = decoders.get(tag)
        if known is not None:
            name, decode = known
            try:  # a zero-copy view bounded at the tag's end keeps the value inside its size
                out[name], used_end = decode(memoryview(buf)[:end], pos)
            except ProtocolDecodeError as exc:
                raise ProtocolDecodeError(f"tagged field {name}: {exc}") from None
            if used_end != end:
                raise ProtocolDecodeError(f"tagged field {name} has {end - used_end} extra bytes")
        pos = end
    return pos


def _encode_tags(
    value: Mapping[str, Any], encoders: list[tuple[int, str, Encoder, Any]], out: list[Any]
) -> None:
    """Writes tagged fields whose value differs from the default, in tag order."""
    payloads: list[tuple[int, bytes]] = []
    for tag, name, encode, default in encoders:
        item = value.get(name, default)
        if item == default:
            continue
        parts: list[Any] = []
        try:
            encode(item, parts)
        except ProtocolEncodeError as exc:
            raise ProtocolEncodeError(name + _dotted(exc.path), exc.reason) from None
        payloads.append((tag, join_bytes(parts)))
    out.append(encode_uvarint(len(payloads)))
    for tag, payload in payloads:
        out.append(encode_uvarint(tag))
        out.append(encode_uvarint(len(payload)))
        out.append(payload)


def join_bytes(parts: list[Any]) -> bytes:
    """Joins encoded chunks; raises if one is an opaque (non-bytes) chunk."""
    try:
        return b"".join(parts)
    except TypeError:
        bad = next(p for p in parts if not isinstance(p, BYTES_LIKE))
        raise ProtocolEncodeError("", f"opaque {type(bad).__name__} chunk needs a frame list") from None


@dataclass(frozen=True)
class Message:
    """A top-level request/response (or stored record) schema: the versions it is
    defined for, which of them are flexible, and its fields."""

    name: str
    valid: str
    flexible: str
    fields: tuple[Field, ...]
    _struct: Struct = field(init=False, repr=False, compare=False)
    _by_version: dict[int, _Compiled] = field(init=False, repr=False, compare=False)
    """Each defined version's codec, once asked for: every request and response looks
    its version up, and the range checks cost more than the decode of a small body."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "_struct", Struct(*self.fields))
        object.__setattr__(self, "_by_version", {})

    def is_flexible(self, version: int) -> bool:
        return version in Versions.parse(self.flexible)

    def defines(self, version: int) -> bool:
        return version in Versions.parse(self.valid)

    def compiled(self, version: int) -> _Compiled:
        found = self._by_version.get(version)
        if found is None:
            if not self.defines(version):
                raise ValueError(f"{self.name} has no version {version}")
            found = self._by_version[version] = self._struct.compiled(
                version, self.is_flexible(version))
        return found

    def default(self) -> dict[str, Any]:
        return {f.name: f.default_value() for f in self.fields}

    def decode(self, buf: Buffer, pos: int, version: int) -> tuple[dict[str, Any], int]:
        """Decodes one body at ``pos``; returns it and the position after it."""
        try:
            return self.compiled(version).decode(buf, pos)
        except ProtocolDecodeError as exc:
            raise ProtocolDecodeError(f"{self.name} v{version}: {exc}") from None

    def encode_into(self, body: Mapping[str, Any], version: int, out: list[Any]) -> None:
        try:
            self.compiled(version).encode(body, out)
        except ProtocolEncodeError as exc:
            raise ProtocolEncodeError(f"{self.name} v{version}{_dotted(exc.path)}", exc.reason) from None

    def encode(self, body: Mapping[str, Any], version: int) -> bytes:
        """Encodes a body holding only bytes-like chunks into bytes."""
        out: list[Any] = []
        self.encode_into(body, version, out)
        return join_bytes(out)
