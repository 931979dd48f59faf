"""Serializers and deserializers for record keys and values.

A serializer turns a user object into the bytes a record carries; a deserializer does the
reverse. ``None`` always passes through untouched both ways, because a null value is a
tombstone on compacted topics and a null key means "no key": neither must become ``b"null"``.

Anything with a ``serialize(topic, value)`` / ``deserialize(topic, data)`` method works, and so
does a plain one-argument callable (kafka-python's ``key_serializer=str.encode`` style).
"""

from __future__ import annotations

import json
from abc import ABC, abstractmethod
from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

import msgpack

from kafkalite.errors import ConfigError

_BYTES_LIKE = (bytes, bytearray, memoryview)


@runtime_checkable
class Serializer(Protocol):
    def serialize(self, topic: str, value: Any) -> bytes | None: ...


@runtime_checkable
class Deserializer(Protocol):
    def deserialize(self, topic: str, data: bytes | None) -> Any: ...


def pack_msgpack(obj: Any) -> bytes:
    """msgpack with the bin type on, so ``bytes`` and ``str`` stay distinct after a round trip."""
    data: bytes = msgpack.packb(obj, use_bin_type=True)
    return data


def unpack_msgpack(data: bytes) -> Any:
    """Inverse of :func:`pack_msgpack`; maps may have non-string keys (ints, for example)."""
    return msgpack.unpackb(data, raw=False, strict_map_key=False)


class BytesSerializer:
    """Passes bytes-like values through; the default when no serializer is configured.

    Anything else is refused rather than guessed at (``str(obj).encode()`` would silently
    store ``"<object at 0x...>"``); ``config_key`` names the setting to use instead.
    """

    def __init__(self, config_key: str | None = None) -> None:
        self._config_key = config_key

    def serialize(self, topic: str, value: Any) -> bytes | None:
        if value is None or isinstance(value, bytes):
            return value
        if isinstance(value, _BYTES_LIKE):
            return bytes(value)
        hint = f"; set {self._config_key} to send other types" if self._config_key else ""
        raise TypeError(
            f"{self._config_key or 'BytesSerializer'}: expected bytes for topic {topic!r}, "
            f"got {type(value).__name__}{hint}"
        )


class BytesDeserializer:
    """Returns the record bytes unchanged."""

    def deserialize(self, topic: str, data: bytes | None) -> bytes | None:
        return data


class StringSerializer:
    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, value: str | None) -> bytes | None:
        if value is None:
            return None
        if not isinstance(value, str):
            raise TypeError(
                f"StringSerializer: expected str for topic {topic!r}, got {type(value).__name__}"
            )
        return value.encode(self.encoding)


class StringDeserializer:
    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def deserialize(self, topic: str, data: bytes | None) -> str | None:
        return None if data is None else bytes(data).decode(self.encoding)


class JsonSerializer:
    """Compact UTF-8 JSON; a Python ``None`` value stays a tombstone, not ``null``."""

    def serialize(self, topic: str, value: Any) -> bytes | None:
        if value is None:
            return None
        return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


class JsonDeserializer:
    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return None if data is None else json.loads(data)


class MsgpackSerializer:
    """msgpack for structured keys and values (smaller and faster than JSON, keeps bytes).

    Tuples come back as lists, as with JSON.
    """

    def serialize(self, topic: str, value: Any) -> bytes | None:
        return None if value is None else pack_msgpack(value)


class MsgpackDeserializer:
    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return None if data is None else unpack_msgpack(data)


class CallableSerializer:
    """Adapts a one-argument function (kafka-python's style) to :class:`Serializer`."""

    def __init__(self, func: Callable[[Any], Any], config_key: str) -> None:
        self._func = func
        self._config_key = config_key

    def serialize(self, topic: str, value: Any) -> bytes | None:
        if value is None:
            return None
        data = self._func(value)
        if data is None or isinstance(data, bytes):
            return data
        if isinstance(data, _BYTES_LIKE):
            return bytes(data)
        raise TypeError(
            f"{self._config_key} returned {type(data).__name__} for topic {topic!r}; "
            "it must return bytes or None"
        )


class CallableDeserializer:
    """Adapts a one-argument function to :class:`Deserializer`."""

    def __init__(self, func: Callable[[bytes], Any]) -> None:
        self._func = func

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        return None if data is None else self._func(data)


class HeadersSerializer(ABC):
    """kafka-python 3's serializer shape: ``serialize(topic, headers, data)``.

    Subclass it (as ``kafkalite.serializer.Serializer``) to reuse serializers written for
    kafka-python; the producer calls it with the record's headers.
    """

    @abstractmethod
    def serialize(self, topic: str, headers: Sequence[tuple[str, bytes | None]] | None,
                  data: Any) -> bytes | None: ...

    def close(self) -> None:  # noqa: B027 (optional hook, as in kafka-python)
        """Release resources; a subclass may override it."""


class HeadersDeserializer(ABC):
    """kafka-python 3's deserializer shape: ``deserialize(topic, headers, data)``."""

    @abstractmethod
    def deserialize(self, topic: str, headers: Sequence[tuple[str, bytes | None]] | None,
                    data: bytes | None) -> Any: ...

    def close(self) -> None:  # noqa: B027 (optional hook, as in kafka-python)
        """Release resources; a subclass may override it."""


class _HeadersAdapter:
    """Presents a :class:`HeadersSerializer` / :class:`HeadersDeserializer` as the two-argument
    shape the clients call; ``None`` still passes through untouched."""

    def __init__(self, inner: HeadersSerializer | HeadersDeserializer) -> None:
        self.inner = inner

    def serialize(self, topic: str, value: Any) -> bytes | None:
        assert isinstance(self.inner, HeadersSerializer)
        return None if value is None else self.inner.serialize(topic, [], value)

    def deserialize(self, topic: str, data: bytes | None) -> Any:
        assert isinstance(self.inner, HeadersDeserializer)
        return None if data is None else self.inner.deserialize(topic, [], data)


def resolve_serializer(value: object, config_key: str) -> Serializer:
    """Turn a ``key_serializer`` / ``value_serializer`` setting into a :class:`Serializer`.

    ``None`` means raw bytes only; a class is instantiated without arguments; a plain callable
    is called with the value. ``config_key`` appears in every error message.
    """
    if value is None:
        return BytesSerializer(config_key)
    if isinstance(value, type) and hasattr(value, "serialize"):
        value = value()
    if isinstance(value, HeadersSerializer):
        return _HeadersAdapter(value)
    if isinstance(value, Serializer):
        return value
    if callable(value):
        return CallableSerializer(value, config_key)
    raise ConfigError(
        config_key, f"expected a Serializer, a callable or None, got {type(value).__name__}"
    )


def resolve_deserializer(value: object, config_key: str) -> Deserializer:
    """Turn a ``key_deserializer`` / ``value_deserializer`` setting into a :class:`Deserializer`."""
    if value is None:
        return BytesDeserializer()
    if isinstance(value, type) and hasattr(value, "deserialize"):
        value = value()
    if isinstance(value, HeadersDeserializer):
        return _HeadersAdapter(value)
    if isinstance(value, Deserializer):
        return value
    if callable(value):
        return CallableDeserializer(value)
    raise ConfigError(
        config_key, f"expected a Deserializer, a callable or None, got {type(value).__name__}"
    )
