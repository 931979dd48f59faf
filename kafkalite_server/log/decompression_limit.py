"""How far the records of one batch may decompress, whoever sets the topic's limit.

A topic's ``max.message.bytes`` bounds the bytes of a batch as it arrives; a compressed
batch may hold far more (a 32 KB zstd batch can expand to gigabytes). Whatever the broker
decompresses (to validate a produce, recompress for the topic's ``compression.type``,
up-convert legacy messages, find a timestamp, compact, down-convert for old fetchers) is
bounded by the topic's ``max.message.bytes`` and by the broker's
``kafkalite.batch.decompressed.max.bytes`` (100 MiB by default), whichever is lower: a
topic owner who raises the first cannot make one batch cost the broker more than the
operator allows.
"""

from __future__ import annotations

from dataclasses import dataclass

from kafkalite.protocol.errors import MessageTooLargeError
from kafkalite_server.log.config import LogConfig

BATCH_DECOMPRESSED_MAX_BYTES = 100 * 1024 * 1024
"""``kafkalite.batch.decompressed.max.bytes``'s default: ``socket.request.max.bytes``'s."""
BATCH_DECOMPRESSED_KEY = "kafkalite.batch.decompressed.max.bytes"


@dataclass(frozen=True, slots=True)
class DecompressionLimit:
    """How far one batch's records may decompress: the topic's ``max.message.bytes`` or
    the broker's bound, whichever is lower, and the key that sets it (for errors)."""

    max_bytes: int
    key: str

    @classmethod
    def of(cls, config: LogConfig, broker_max_bytes: int | None) -> DecompressionLimit:
        if broker_max_bytes is not None and broker_max_bytes < config.max_message_bytes:
            return cls(broker_max_bytes, BATCH_DECOMPRESSED_KEY)
        return cls(config.max_message_bytes, "max.message.bytes")

    def too_large(self, what: str) -> MessageTooLargeError:
        return MessageTooLargeError(f"{what} decompress to more than {self.key} "
                                    f"{self.max_bytes} bytes")
