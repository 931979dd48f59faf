"""The message browser's decoding of keys and values: the first of UTF-8 (JSON when it
parses), msgpack and hex that fits."""

from __future__ import annotations

import msgpack

from kafkalite.console.values import decode_bytes


def test_null_stays_null() -> None:
    assert decode_bytes(None) == {"as": "null", "text": None}


def test_text_is_utf8_and_a_json_document_is_json() -> None:
    assert decode_bytes("héllo\n".encode()) == {"as": "utf-8", "text": "héllo\n"}
    assert decode_bytes(b'{"n": [1, 2]}') == {"as": "json", "text": '{"n": [1, 2]}'}
    assert decode_bytes(b"42") == {"as": "utf-8", "text": "42"}  # a bare number is text


def test_binary_msgpack_is_unpacked() -> None:
    assert decode_bytes(msgpack.packb({"id": 7, "tags": ["a"]})) == {
        "as": "msgpack", "text": '{"id": 7, "tags": ["a"]}'}


def test_anything_else_is_hex() -> None:
    assert decode_bytes(b"\xff\xfe\x00") == {"as": "hex", "text": "ff fe 00"}
    assert decode_bytes(b"\xc1") == {"as": "hex", "text": "c1"}  # msgpack's one unused byte
