"""kafka-python's ``kafka.serializer`` names, for programs migrating from it.

``Serializer`` / ``Deserializer`` have kafka-python 3's three-argument shape
(``topic, headers, data``); instances work as ``key_serializer`` / ``value_serializer`` /
``key_deserializer`` / ``value_deserializer``. kafkalite's own two-argument serializers are in
:mod:`kafkalite.serde`.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from kafkalite.serde import HeadersDeserializer as Deserializer
from kafkalite.serde import HeadersSerializer as Serializer

_Headers = Sequence[tuple[str, bytes | None]] | None


class DefaultSerializer(Serializer, Deserializer):
    """``str`` to bytes in ``encoding`` (bytes pass through); back to ``str`` when reading."""

    def __init__(self, encoding: str = "utf-8") -> None:
        self.encoding = encoding

    def serialize(self, topic: str, headers: _Headers, data: Any) -> bytes | None:
        if data is None or isinstance(data, bytes):
            return data
        if not isinstance(data, str):
            raise TypeError(f"DefaultSerializer: expected str or bytes for topic {topic!r}, "
                            f"got {type(data).__name__}")
        return data.encode(self.encoding)

    def deserialize(self, topic: str, headers: _Headers, data: bytes | None) -> Any:
        return None if data is None else bytes(data).decode(self.encoding)


class JsonSerializer(DefaultSerializer):
    """JSON text in ``encoding``; ``None`` stays a tombstone both ways."""

    def serialize(self, topic: str, headers: _Headers, data: Any) -> bytes | None:
        return None if data is None else json.dumps(data).encode(self.encoding)

    def deserialize(self, topic: str, headers: _Headers, data: bytes | None) -> Any:
        return None if data is None else json.loads(bytes(data).decode(self.encoding))


class SerializeWrapper(Serializer):
    """A one-argument function (``data -> bytes``) as a :class:`Serializer`; ``None`` passes
    the data through."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def serialize(self, topic: str, headers: _Headers, data: Any) -> Any:
        return data if self.fn is None else self.fn(data)


class DeserializeWrapper(Deserializer):
    """A one-argument function (``bytes -> value``) as a :class:`Deserializer`; ``None``
    passes the bytes through."""

    def __init__(self, fn: Any) -> None:
        self.fn = fn

    def deserialize(self, topic: str, headers: _Headers, data: bytes | None) -> Any:
        return data if self.fn is None else self.fn(data)


__all__ = ["DefaultSerializer", "DeserializeWrapper", "Deserializer", "JsonSerializer",
           "SerializeWrapper", "Serializer"]
