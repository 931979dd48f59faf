"""The source's columns (those of Spark's Kafka source), the check of a user-declared schema,
and records -> Arrow batches.

Readers hand Spark ``pyarrow.RecordBatch`` es rather than row tuples: Spark then skips its
per-row type checks and conversion, which is most of the cost of a Python data source.

A Python data source gets no column pruning from Spark: every column it declares crosses
into the JVM on every query, whatever the query selects. The one lever is the schema the
user declares (``spark.read.format("kafkalite").schema("value binary, offset long")``):
Spark hands it to the reader as the read schema, and the reader builds exactly those
columns, in that order. :func:`check_read_schema` holds a declared schema to the source's
columns, so a typo or a wrong type fails at planning rather than as nulls or garbage.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pyarrow as pa
from pyspark.sql.types import (
    ArrayType,
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructType,
    TimestampType,
)

from kafkalite.errors import KafkaError
from kafkalite.serde import unpack_msgpack
from kafkalite.spark.options import ValueEncoding

HEADERS_TYPE = ArrayType(StructType().add("key", StringType()).add("value", BinaryType()))
"""The ``headers`` column's type (read and write)."""

_COLUMN_TYPES: dict[str, DataType | None] = {
    "key": BinaryType(), "value": None, "topic": StringType(), "partition": IntegerType(),
    "offset": LongType(), "timestamp": TimestampType(), "timestampType": IntegerType(),
    "headers": HEADERS_TYPE,
}
"""The source's columns in order; the options decide ``value``'s type (binary, or a struct
with valueFormat=msgpack) and whether ``headers`` is there (includeHeaders)."""

_NULLABLE = frozenset({"key", "value"})
"""Columns that hold nulls (no key, a tombstone), so a declaration must not say NOT NULL."""


def source_columns(include_headers: bool) -> list[str]:
    """The source's column names, in the order of its default schema."""
    return [name for name in _COLUMN_TYPES if include_headers or name != "headers"]


def _column_ddl(name: str, value: ValueEncoding) -> str:
    fixed = _COLUMN_TYPES[name]
    return value.column_ddl() if fixed is None else fixed.simpleString()


def source_schema_ddl(value: ValueEncoding, include_headers: bool) -> str:
    """The read schema as a DDL string; Spark parses it, so nested value types need no JVM here."""
    return ", ".join(f"{name} {_column_ddl(name, value)}"
                     for name in source_columns(include_headers))


class SchemaError(KafkaError, ValueError):
    """A declared read schema (``.schema(...)``) the source cannot fill; names the column."""

    def __init__(self, column: str | None, message: str) -> None:
        super().__init__(message if column is None else f"column {column!r}: {message}")
        self.column = column


def check_read_schema(schema: StructType, value: ValueEncoding, include_headers: bool) -> None:
    """Refuse, at planning, a read schema that is not a selection of the source's columns.

    The default schema passes as it is. A declared one may name any of the source's
    columns, each at most once, in any order, with the source's type (compared without
    nullability, except that ``key`` and ``value`` may hold nulls); with
    ``valueFormat=msgpack`` ``value`` must be a struct, which then decodes the maps (Spark
    cannot parse ``valueSchema`` without a JVM here, so the two are not compared).
    """
    allowed = source_columns(include_headers)
    if not schema.fields:
        raise SchemaError(None, f"a read schema needs at least one of the source's columns: "
                          f"{', '.join(allowed)}")
    seen: set[str] = set()
    for field in schema.fields:
        name = field.name
        if name not in allowed:
            raise SchemaError(name, _unknown(name, allowed, include_headers))
        if name in seen:
            raise SchemaError(name, "declared twice")
        seen.add(name)
        _check_type(name, field.dataType, value)
        if name in _NULLABLE and not field.nullable:
            raise SchemaError(name, "is null for records without one, so it cannot be NOT NULL")


def _unknown(name: str, allowed: list[str], include_headers: bool) -> str:
    if name == "headers" and not include_headers:
        return "needs the option includeHeaders=true"
    hint = next((f" (did you mean {known!r}?)" for known in allowed
                 if known.lower() == name.lower()), "")
    return (f"not a column of the kafkalite source{hint}; its columns: "
            f"{', '.join(allowed)}")


def _check_type(name: str, declared: DataType, value: ValueEncoding) -> None:
    if name == "value" and value.format == "msgpack":
        if not isinstance(declared, StructType):
            raise SchemaError(name, f"must be a struct with valueFormat=msgpack "
                              f"(valueSchema {value.schema_ddl!r}), not {declared.simpleString()}")
        return
    expected = _column_ddl(name, value)
    # simpleString leaves nullability out, as Spark's DDL parser and F.struct() differ there.
    if declared.simpleString() != expected:
        raise SchemaError(name, f"must be {expected}, not {declared.simpleString()}")


class ValueDecodeError(KafkaError):
    """A record value that does not decode as the configured ``valueFormat``/``valueSchema``."""


Column = Callable[[pa.RecordBatch], pa.Array]


class ArrowBatchBuilder:
    """Turns ``Consumer.poll_arrow`` batches into Arrow batches of exactly Spark's expected
    schema, the source's default or a declared selection of its columns: only the columns
    asked for are built, and those are taken or cast, not rebuilt (except msgpack values)."""

    def __init__(self, arrow_schema: pa.Schema, value: ValueEncoding) -> None:
        self.schema = arrow_schema
        self._msgpack = value.format == "msgpack"
        self._columns = [self._column(field) for field in arrow_schema]

    @property
    def needs_timestamp_type(self) -> bool:
        """Whether ``poll_arrow`` must add its ``timestamp_type`` column."""
        return "timestampType" in self.schema.names

    def _column(self, field: pa.Field) -> Column:
        name, arrow_type = field.name, field.type
        if name == "value":
            return lambda records: self._values(records, arrow_type)
        source = "timestamp_type" if name == "timestampType" else name

        def taken(records: pa.RecordBatch) -> pa.Array:
            return records.column(source)

        def cast(records: pa.RecordBatch) -> pa.Array:
            return records.column(source).cast(arrow_type)

        return cast if name in ("timestamp", "timestampType", "headers") else taken

    def build(self, records: pa.RecordBatch) -> pa.RecordBatch:
        return pa.RecordBatch.from_arrays([column(records) for column in self._columns],
                                          schema=self.schema)

    def _values(self, records: pa.RecordBatch, value_type: pa.DataType) -> pa.Array:
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
            return pa.array(decoded, value_type)
        except (pa.ArrowInvalid, pa.ArrowTypeError) as exc:
            topic, partition, offsets = (records.column(name)
                                         for name in ("topic", "partition", "offset"))
            raise ValueDecodeError(f"{topic[0]}-{partition[0]} offsets {offsets[0]}.."
                                   f"{offsets[-1]}: msgpack values do not fit valueSchema "
                                   f"({value_type}): {exc}") from None


def _where(records: pa.RecordBatch, index: int) -> str:
    topic, partition, offset = (records.column(name)[index].as_py()
                                for name in ("topic", "partition", "offset"))
    return f"{topic}-{partition} offset {offset}: "
