"""Offsets as Spark's Kafka source writes them: ``{"topic": {"partition": offset}}`` JSON.

The same shape serves the ``startingOffsets`` / ``endingOffsets`` options (where -2 means
earliest and -1 latest) and the offsets a streaming query keeps in its checkpoint, so a
checkpoint's offsets can be pasted into ``startingOffsets`` of another query.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Literal

from kafkalite.errors import ConfigError
from kafkalite.structs import TopicPartition

EARLIEST = -2
LATEST = -1

PartitionOffsets = dict[TopicPartition, int]
OffsetSpec = Literal["earliest", "latest"] | PartitionOffsets
"""Where to start or stop: every partition's earliest or latest, or an offset per partition."""


def parse_offset_spec(text: str, option: str) -> OffsetSpec:
    """``earliest``, ``latest`` or a JSON object of per-partition offsets."""
    word = text.strip().lower()
    if word in ("earliest", "latest"):
        return "earliest" if word == "earliest" else "latest"
    offsets = offsets_from_json(load_json(text, option), option)
    for tp, offset in offsets.items():
        if offset < EARLIEST:
            raise ConfigError(option, f"offset {offset} of {tp.topic}-{tp.partition} is "
                              "invalid (use -2 for earliest, -1 for latest, or an offset >= 0)")
    return offsets


def parse_partition_list(text: str, option: str) -> tuple[TopicPartition, ...]:
    """The ``assign`` option: ``{"topicA": [0, 1], "topicB": [2]}``."""
    data = load_json(text, option)
    if not isinstance(data, dict) or not data:
        raise ConfigError(option, 'must be a JSON object such as {"topic": [0, 1]}')
    partitions: list[TopicPartition] = []
    for topic, ids in data.items():
        if not isinstance(ids, list) or not all(_is_int(p) and p >= 0 for p in ids):
            raise ConfigError(option, f"topic {topic!r} must map to a list of partition ids")
        partitions.extend(TopicPartition(topic, p) for p in ids)
    return tuple(sorted(set(partitions)))


def offsets_from_json(data: Any, option: str = "offsets") -> PartitionOffsets:
    """``{"topic": {"0": 5}}`` (already decoded JSON) into ``{TopicPartition: offset}``."""
    if not isinstance(data, dict):
        raise ConfigError(option, 'must be a JSON object such as {"topic": {"0": 42}}')
    offsets: PartitionOffsets = {}
    for topic, partitions in data.items():
        if not isinstance(partitions, dict):
            raise ConfigError(option, f"topic {topic!r} must map to an object of "
                              "partition -> offset")
        for partition, offset in partitions.items():
            if not str(partition).isdigit() or not _is_int(offset):
                raise ConfigError(option, f"{topic!r}: {partition!r} -> {offset!r} is not a "
                                  "partition id mapped to an integer offset")
            offsets[TopicPartition(topic, int(partition))] = offset
    return offsets


def offsets_to_json(offsets: Mapping[TopicPartition, int]) -> dict[str, dict[str, int]]:
    """The inverse of :func:`offsets_from_json`, sorted so equal offsets give equal JSON."""
    data: dict[str, dict[str, int]] = {}
    for tp in sorted(offsets):
        data.setdefault(tp.topic, {})[str(tp.partition)] = offsets[tp]
    return data


def load_json(text: str, option: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise ConfigError(option, f"is neither 'earliest'/'latest' nor valid JSON: {exc}") \
            from None


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)
