"""The decoded record every reader yields, whatever the batch format it came from."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from kafkalite.records.reader import RecordBatchView

Header = tuple[str, bytes | None]
NO_HEADERS: tuple[Header, ...] = ()

CREATE_TIME = 0
LOG_APPEND_TIME = 1
NO_TIMESTAMP_TYPE = -1
"""Magic-0 messages have neither a timestamp (it reads as -1) nor a timestamp type."""


@dataclass(slots=True, eq=False)
class Record:
    """One record with its absolute offset; ``batch`` is the batch or wrapper it came from.

    Batch-level facts (producer id, transactional and control flags, the timestamp type)
    stay on ``batch`` so decoding does not copy them into every record.
    """

    offset: int
    timestamp: int
    key: bytes | None
    value: bytes | None
    headers: tuple[Header, ...]
    batch: RecordBatchView = field(repr=False)

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime, -1 none (magic 0)."""
        return self.batch.timestamp_type
