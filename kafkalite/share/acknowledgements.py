"""What a share consumer acknowledges, until it is sent (sans-IO).

Each acquired record gets one acknowledge type: ACCEPT (processed), RELEASE (give it to
someone, maybe this consumer, again), REJECT (never deliver it again), or GAP, which the
consumer sends by itself for an acquired offset that held no record (a control record, a
record compaction removed). They wait per partition until the next ShareFetch to the
partition's leader carries them, or ShareAcknowledge (a commit) does; on the wire,
consecutive offsets of one type travel as one range.
"""

from __future__ import annotations

from collections.abc import Iterable
from enum import IntEnum
from typing import Any

from kafkalite.structs import TopicPartition


class AcknowledgeType(IntEnum):
    """How a record was processed (confluent-kafka's and the Java client's names)."""

    ACCEPT = 1
    RELEASE = 2
    REJECT = 3


GAP = 0
"""The acknowledge type of an offset at which there was no record."""


class PendingAcknowledgements:
    def __init__(self) -> None:
        self._by_partition: dict[TopicPartition, dict[int, int]] = {}

    def add(self, tp: TopicPartition, offset: int, kind: int) -> None:
        self._by_partition.setdefault(tp, {})[offset] = kind

    def partitions(self) -> set[TopicPartition]:
        return set(self._by_partition)

    def take(self, partitions: Iterable[TopicPartition]) -> dict[TopicPartition, dict[int, int]]:
        """The acknowledgements of ``partitions``, no longer pending."""
        return {tp: taken for tp in partitions
                if (taken := self._by_partition.pop(tp, None))}

    def __bool__(self) -> bool:
        return bool(self._by_partition)


def wire_batches(acks: dict[int, int]) -> list[dict[str, Any]]:
    """ShareFetch/ShareAcknowledge ``acknowledgement_batches``: ranges of consecutive
    offsets with one type."""
    batches: list[dict[str, Any]] = []
    for offset in sorted(acks):
        kind = acks[offset]
        last = batches[-1] if batches else None
        if last is not None and last["last_offset"] + 1 == offset \
                and last["acknowledge_types"] == [kind]:
            last["last_offset"] = offset
        else:
            batches.append({"first_offset": offset, "last_offset": offset,
                            "acknowledge_types": [kind]})
    return batches
