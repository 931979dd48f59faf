"""How the message browser shows a key or a value: the bytes decoded the first way that fits.

UTF-8 text is tried first (a JSON document is UTF-8 text too, so it is shown as JSON when it
parses), then msgpack (which, for text, would mistake each ASCII byte for a small integer,
hence the order), then hex, which always fits.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import msgpack

Encoding = Literal["null", "json", "utf-8", "msgpack", "hex"]


def decode_bytes(data: bytes | None) -> dict[str, Any]:
    """``{"as": encoding, "text": what to show}``; ``text`` is None for a null."""
    if data is None:
        return {"as": "null", "text": None}
    try:
        text = data.decode("utf-8")
    except UnicodeDecodeError:
        pass
    else:
        if all(c.isprintable() or c in "\t\r\n" for c in text):
            return _as_json(text) or {"as": "utf-8", "text": text}
    try:
        unpacked = msgpack.unpackb(data, raw=False, strict_map_key=False)
    except (ValueError, msgpack.UnpackException, TypeError):
        pass
    else:
        return {"as": "msgpack", "text": json.dumps(unpacked, default=repr, ensure_ascii=False)}
    return {"as": "hex", "text": data.hex(" ")}


def _as_json(text: str) -> dict[str, Any] | None:
    """The text as a JSON object or array, or None: a bare number or word stays text."""
    if not text.lstrip().startswith(("{", "[")):
        return None
    try:
        document = json.loads(text)
    except ValueError:
        return None
    return {"as": "json", "text": json.dumps(document, ensure_ascii=False)}
