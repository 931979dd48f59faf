"""Cross-check a few hand-written aiokafka 0.14 protocol structs against our schemas: the
bytes aiokafka encodes decode here, and re-encoding our decoding gives the same bytes."""

from __future__ import annotations

from typing import Any

import pytest

from kafkalite.protocol import ApiKey
from kafkalite.protocol.api import APIS

produce = pytest.importorskip("aiokafka.protocol.produce")
fetch = pytest.importorskip("aiokafka.protocol.fetch")
metadata = pytest.importorskip("aiokafka.protocol.metadata")
group = pytest.importorskip("aiokafka.protocol.group")

BATCH = bytes(range(70))

CASES: list[tuple[str, Any, ApiKey, str, int, dict[str, Any]]] = [
    (
        "produce-v7-request",
        produce.ProduceRequest_v7(None, -1, 30000, [("t", [(0, BATCH), (3, b"")])]),
        ApiKey.PRODUCE, "request", 7,
        {"acks": -1, "timeout_ms": 30000, "topic_data": [
            {"name": "t", "partition_data": [{"index": 0, "records": BATCH}, {"index": 3, "records": b""}]}]},
    ),
    (
        "fetch-v11-response",
        fetch.FetchResponse_v11(0, 0, 0, [("t", [(1, 0, 10, 9, 0, None, -1, BATCH)])]),
        ApiKey.FETCH, "response", 11,
        {"responses": [{"topic": "t", "partitions": [{
            "partition_index": 1, "high_watermark": 10, "last_stable_offset": 9,
            "log_start_offset": 0, "aborted_transactions": None, "records": BATCH}]}]},
    ),
    (
        "metadata-v5-response",
        metadata.MetadataResponse_v5(
            0, [(1, "localhost", 9092, None)], "cluster", 1,
            [(0, "t", False, [(0, 0, 1, [1], [1], [])])],
        ),
        ApiKey.METADATA, "response", 5,
        {"brokers": [{"node_id": 1, "host": "localhost", "port": 9092, "rack": None}],
         "cluster_id": "cluster", "controller_id": 1,
         "topics": [{"name": "t", "partitions": [{
             "partition_index": 0, "leader_id": 1, "replica_nodes": [1], "isr_nodes": [1]}]}]},
    ),
    (
        "join-group-v5-request",
        group.JoinGroupRequest_v5("g", 10000, 300000, "", None, "consumer", [("range", b"\x00\x01")]),
        ApiKey.JOIN_GROUP, "request", 5,
        {"group_id": "g", "session_timeout_ms": 10000, "rebalance_timeout_ms": 300000,
         "member_id": "", "group_instance_id": None, "protocol_type": "consumer",
         "protocols": [{"name": "range", "metadata": b"\x00\x01"}]},
    ),
]


@pytest.mark.parametrize(("struct", "key", "kind", "version", "expected"),
                         [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_aiokafka_bytes_decode_here_and_re_encode_identically(
    struct: Any, key: ApiKey, kind: str, version: int, expected: dict[str, Any]
) -> None:
    message = APIS[key].request if kind == "request" else APIS[key].response
    theirs = struct.encode()
    decoded, end = message.decode(theirs, 0, version)
    assert end == len(theirs)
    assert _subset(_plain(decoded), expected)
    assert message.encode(decoded, version) == theirs
    assert message.encode(expected, version) == theirs


def _subset(got: Any, expected: Any) -> bool:
    """Every field the case names has that value (the others are schema defaults)."""
    if isinstance(expected, dict):
        return all(_subset(got[k], v) for k, v in expected.items())
    if isinstance(expected, list):
        return len(got) == len(expected) and all(map(_subset, got, expected))
    return bool(got == expected)


def _plain(value: Any) -> Any:
    if isinstance(value, memoryview):
        return value.tobytes()
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value
