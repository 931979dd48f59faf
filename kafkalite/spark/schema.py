"""The source's columns (those of Spark's Kafka source) and records -> Arrow batches.

Readers hand Spark ``pyarrow.RecordBatch`` es rather than row tuples: Spark then skips its
per-row type checks and conversion, which is most of the cost of a Python data source.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from kafkalite.errors import KafkaError
from kafkalite.serde import unpack_msgpack
from kafkalite.spark.options import ValueEncoding
from kafkalite.structs import ConsumerRecord

HEADERS_DDL = "array<struct<key: string, value: binary>>"


def source_schema_ddl(value: ValueEncoding, include_headers: bool) -> str:
    """The read schema as a DDL string; Spark parses it, so nested value types need no JVM here."""
    ddl = (f"key binary, value {value.column_ddl()}, topic string, partition int, "
           "offset bigint, timestamp timestamp, timestampType int")
    return f"{ddl}, headers {HEADERS_DDL}" if include_headers else ddl


class ValueDecodeError(KafkaError):
    """A record value that does not decode as the configured ``valueFormat``/``valueSchema``."""


class ArrowBatchBuilder:
    """Turns lists of ConsumerRecords into Arrow batches of exactly Spark's expected schema."""

    def __init__(self, arrow_schema: pa.Schema, value: ValueEncoding) -> None:
        self.schema = arrow_schema
        self._msgpack = value.format == "msgpack"
        self._value_type = arrow_schema.field("value").type
        self._timestamp_type = arrow_schema.field("timestamp").type
        self._with_headers = "headers" in arrow_schema.names
        self._header_type = arrow_schema.field("headers").type if self._with_headers else None

    def build(self, records: Sequence[ConsumerRecord]) -> pa.RecordBatch:
        topics, partitions, offsets, timestamps, timestamp_types, keys, values, headers = \
            list(zip(*records, strict=False))[:8]
        millis = pa.array(timestamps, pa.int64())
        columns: dict[str, pa.Array] = {
            "key": pa.array(keys, pa.binary()),
            "value": self._values(values, records),
            "topic": pa.array(topics, pa.string()),
            "partition": pa.array(partitions, pa.int32()),
            "offset": pa.array(offsets, pa.int64()),
            "timestamp": pc.multiply(millis, 1000).cast(self._timestamp_type),
            "timestampType": pa.array(timestamp_types, pa.int32()),
        }
        if self._with_headers:
            columns["headers"] = pa.array(
                [[{"key": k, "value": v} for k, v in hs] for hs in headers], self._header_type)
        return pa.RecordBatch.from_arrays([columns[name] for name in self.schema.names],
                                          schema=self.schema)

    def _values(self, values: Sequence[bytes | None],
                records: Sequence[ConsumerRecord]) -> pa.Array:
        if not self._msgpack:
            return pa.array(values, pa.binary())
        decoded: list[Any] = []
        for record, data in zip(records, values, strict=True):
            try:
                item = None if data is None else unpack_msgpack(data)
            except Exception as exc:
                raise ValueDecodeError(_where(record) + f"value is not msgpack: {exc}") from None
            if item is not None and not isinstance(item, dict):
                raise ValueDecodeError(_where(record) + "value is msgpack "
                                       f"{type(item).__name__}, not a map matching valueSchema")
            decoded.append(item)
        try:
            return pa.array(decoded, self._value_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            first = records[0]
            raise ValueDecodeError(f"{first.topic}-{first.partition} offsets {first.offset}.."
                                   f"{records[-1].offset}: msgpack values do not fit valueSchema "
                                   f"({self._value_type}): {exc}") from None


def _where(record: ConsumerRecord) -> str:
    return f"{record.topic}-{record.partition} offset {record.offset}: "
