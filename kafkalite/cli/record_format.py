"""How ``kafkalite consume`` prints records: kcat-style ``--format`` strings and ``--json``.

A format string is compiled once into a list of pieces (literal bytes, or a function of the
record), so printing a record is one join. Output is bytes: binary values pass through
untouched, exactly as kcat prints them.
"""

from __future__ import annotations

import base64
import json
from collections.abc import Callable
from typing import Any

from kafkalite.structs import ConsumerRecord

Piece = bytes | Callable[[ConsumerRecord], bytes]

DEFAULT_FORMAT = "%v\\n"

PLACEHOLDERS: dict[str, tuple[str, Callable[[ConsumerRecord], bytes]]] = {
    "t": ("topic", lambda r: r.topic.encode()),
    "p": ("partition", lambda r: str(r.partition).encode()),
    "o": ("offset", lambda r: str(r.offset).encode()),
    "k": ("key", lambda r: r.key or b""),
    "v": ("value", lambda r: r.value or b""),
    "T": ("timestamp (ms)", lambda r: str(r.timestamp).encode()),
    "h": ("headers as k=v,k=v", lambda r: _headers_text(r).encode()),
    "s": ("value size in bytes", lambda r: str(len(r.value or b"")).encode()),
    "%": ("a literal %", lambda r: b"%"),
}

_ESCAPES = {"n": b"\n", "t": b"\t", "r": b"\r", "\\": b"\\", "0": b"\0"}


class FormatError(ValueError):
    """A ``--format`` string with an unknown ``%x`` placeholder or ``\\x`` escape."""


def compile_format(fmt: str) -> Callable[[ConsumerRecord], bytes]:
    """``fmt`` as a function from a record (key and value as bytes) to its output bytes."""
    pieces: list[Piece] = []
    literal = bytearray()
    chars = iter(enumerate(fmt))
    for index, char in chars:
        if char not in "%\\":
            literal += char.encode()
            continue
        code = next(chars, (index, ""))[1]
        if char == "\\":
            if code not in _ESCAPES:
                raise FormatError(f"unknown escape \\{code} at position {index} of the format")
            literal += _ESCAPES[code]
        elif code == "%":
            literal += b"%"
        elif code in PLACEHOLDERS:
            if literal:
                pieces.append(bytes(literal))
                literal.clear()
            pieces.append(PLACEHOLDERS[code][1])
        else:
            raise FormatError(f"unknown placeholder %{code} at position {index} of the format "
                              f"(known: {' '.join('%' + p for p in PLACEHOLDERS)})")
    if literal:
        pieces.append(bytes(literal))
    frozen = tuple(pieces)

    def render(record: ConsumerRecord) -> bytes:
        return b"".join(p if isinstance(p, bytes) else p(record) for p in frozen)
    return render


def record_json(record: ConsumerRecord) -> dict[str, Any]:
    """One record as JSON-ready data.

    Keys, values and header values that are UTF-8 come out as strings; other bytes as
    ``key_base64`` / ``value_base64`` (and a ``{"base64": ...}`` header value) instead.
    """
    data: dict[str, Any] = {
        "topic": record.topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "timestamp_type": "LogAppendTime" if record.timestamp_type == 1 else "CreateTime",
    }
    for name, raw in (("key", record.key), ("value", record.value)):
        text = _utf8(raw)
        if raw is not None and text is None:
            data[f"{name}_base64"] = base64.b64encode(raw).decode()
        else:
            data[name] = text
    data["headers"] = [[key, _json_bytes(value)] for key, value in record.headers]
    return data


def render_json(record: ConsumerRecord) -> bytes:
    return json.dumps(record_json(record), ensure_ascii=False).encode() + b"\n"


def _utf8(raw: bytes | None) -> str | None:
    if raw is None:
        return None
    try:
        return raw.decode()
    except UnicodeDecodeError:
        return None


def _json_bytes(raw: bytes | None) -> Any:
    text = _utf8(raw)
    if raw is not None and text is None:
        return {"base64": base64.b64encode(raw).decode()}
    return text


def _headers_text(record: ConsumerRecord) -> str:
    return ",".join(f"{key}={(value or b'').decode(errors='backslashreplace')}"
                    for key, value in record.headers)


def format_help() -> str:
    """The placeholder table for ``--help``."""
    rows = [f"  %{code}  {meaning}" for code, (meaning, _) in PLACEHOLDERS.items()]
    return "\n".join([*rows, "  \\n \\t \\r \\\\  newline, tab, carriage return, backslash"])
