"""The source's columns (those of Spark's Kafka source) and records -> Arrow batches.

Readers hand Spark ``pyarrow.RecordBatch`` es rather than row tuples: Spark then skips its
per-row type checks and conversion, which is most of the cost of a Python data source.
"""

from __future__ import annotations

from typing import Any

import pyarrow as pa

from kafkalite.errors import KafkaError
from kafkalite.serde import unpack_msgpack
from kafkalite.spark.options import ValueEncoding

HEADERS_DDL = "array<struct<key: string, value: binary>>"


def source_schema_ddl(value: ValueEncoding, include_headers: bool) -> str:
    """The read schema as a DDL string; Spark parses it, so nested value types need no JVM here."""
    ddl = (f"key binary, value {value.column_ddl()}, topic string, partition int, "
           "offset bigint, timestamp timestamp, timestampType int")
    return f"{ddl}, headers {HEADERS_DDL}" if include_headers else ddl


class ValueDecodeError(KafkaError):
    """A record value that does not decode as the configured ``valueFormat``/``valueSchema``."""


class ArrowBatchBuilder:
    """Turns ``Consumer.poll_arrow`` batches (with ``timestamp_type``) into Arrow batches of
    exactly Spark's expected schema: columns are cast, not rebuilt, except msgpack values."""

    def __init__(self, arrow_schema: pa.Schema, value: ValueEncoding) -> None:
        self.schema = arrow_schema
        self._msgpack = value.format == "msgpack"
        self._value_type = arrow_schema.field("value").type
        self._timestamp_type = arrow_schema.field("timestamp").type
        self._with_headers = "headers" in arrow_schema.names
        self._header_type = arrow_schema.field("headers").type if self._with_headers else None

    def build(self, records: pa.RecordBatch) -> pa.RecordBatch:
        columns: dict[str, pa.Array] = {
            "key": records.column("key"),
            "value": self._values(records),
            "topic": records.column("topic"),
            "partition": records.column("partition"),
            "offset": records.column("offset"),
            "timestamp": records.column("timestamp").cast(self._timestamp_type),
            "timestampType": records.column("timestamp_type").cast(pa.int32()),
        }
        if self._with_headers:
            columns["headers"] = records.column("headers").cast(self._header_type)
        return pa.RecordBatch.from_arrays([columns[name] for name in self.schema.names],
                                          schema=self.schema)

    def _values(self, records: pa.RecordBatch) -> pa.Array:
        values = records.column("value")
        if not self._msgpack:
            return values
        decoded: list[Any] = []
        for index, data in enumerate(values.to_pylist()):
            try:
                item = None if data is None else unpack_msgpack(data)
            except Exception as exc:
                raise ValueDecodeError(_where(records, index)
                                       + f"value is not msgpack: {exc}") from None
            if item is not None and not isinstance(item, dict):
                raise ValueDecodeError(_where(records, index) + "value is msgpack "
                                       f"{type(item).__name__}, not a map matching valueSchema")
            decoded.append(item)
        try:
            return pa.array(decoded, self._value_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            topic, partition, offsets = (records.column(name)
                                         for name in ("topic", "partition", "offset"))
            raise ValueDecodeError(f"{topic[0]}-{partition[0]} offsets {offsets[0]}.."
                                   f"{offsets[-1]}: msgpack values do not fit valueSchema "
                                   f"({self._value_type}): {exc}") from None


def _where(records: pa.RecordBatch, index: int) -> str:
    topic, partition, offset = (records.column(name)[index].as_py()
                                for name in ("topic", "partition", "offset"))
    return f"{topic}-{partition} offset {offset}: "
