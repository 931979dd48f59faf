"""The ``kafkalite`` Spark data source: the entry point Spark instantiates per query."""

from __future__ import annotations

from typing import Any

from pyspark.sql import DataFrameWriter, SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from kafkalite.spark.options import (
    ReadOptions,
    parse_read_options,
    parse_schema_options,
    parse_write_options,
)
from kafkalite.spark.readers import BatchReader, StreamReader
from kafkalite.spark.schema import check_read_schema, source_schema_ddl
from kafkalite.spark.writers import (
    BatchWriter,
    StreamWriter,
    check_save_mode,
    check_write_schema,
)


class KafkaliteDataSource(DataSource):
    """``spark.read.format("kafkalite")`` and friends; options as Spark's Kafka source."""

    @classmethod
    def name(cls) -> str:
        return "kafkalite"

    def schema(self) -> str:
        value, include_headers = parse_schema_options(self.options)
        return source_schema_ddl(value, include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(_checked_read_options(self.options, schema, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(_checked_read_options(self.options, schema, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        check_save_mode(overwrite)
        options = parse_write_options(self.options)
        check_write_schema(schema, options)
        return BatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_write_options(self.options)
        check_write_schema(schema, options)
        return StreamWriter(options)


def _checked_read_options(options: Any, schema: StructType, *, streaming: bool) -> ReadOptions:
    """The read options, once ``schema`` (the default, or one declared with ``.schema()``,
    which then selects the columns read) is known to be a selection of the source's."""
    parsed = parse_read_options(options, streaming=streaming)
    check_read_schema(schema, parsed.value, parsed.include_headers)
    return parsed


def register(spark: SparkSession | Any) -> None:
    """Make ``format("kafkalite")`` available in this Spark session.

    Also lets ``df.write.format("kafkalite").save()`` run without ``.mode("append")``, as
    with Spark's Kafka sink (see :func:`_default_to_append`).
    """
    spark.dataSource.register(KafkaliteDataSource)
    _default_to_append(DataFrameWriter)
    try:
        from pyspark.sql.connect.readwriter import DataFrameWriter as ConnectWriter
    except ImportError:  # Spark Connect's client dependencies are not installed
        return
    _default_to_append(ConnectWriter)


_DEFAULT_MODES = frozenset({None, "error", "errorifexists", "default"})


def _default_to_append(writer_class: Any) -> None:
    """Make a kafkalite write's default save mode (ErrorIfExists) Append.

    Spark refuses ErrorIfExists for every Python data source before the source is asked,
    while Spark's Kafka sink takes it (a topic is always appended to). So the writer
    class's ``format()`` and ``mode()`` turn "no mode" and ErrorIfExists into Append once
    the format is ``kafkalite``; other formats and other modes pass through unchanged.
    Idempotent: a class is wrapped once.
    """
    if getattr(writer_class, "_kafkalite_default_append", False):
        return
    original_format, original_mode = writer_class.format, writer_class.mode
    name = KafkaliteDataSource.name()

    def format(self: Any, source: str) -> Any:
        result = original_format(self, source)
        self._kafkalite_sink = source.lower() == name
        if self._kafkalite_sink and getattr(self, "_kafkalite_mode", None) in _DEFAULT_MODES:
            original_mode(self, "append")
        return result

    def mode(self: Any, saveMode: str | None) -> Any:
        if saveMode is None:  # save(mode=None) calls mode(None): keeps the mode set before
            return original_mode(self, saveMode)
        self._kafkalite_mode = saveMode.lower()
        if getattr(self, "_kafkalite_sink", False) and self._kafkalite_mode in _DEFAULT_MODES:
            saveMode = "append"
        return original_mode(self, saveMode)

    format.__doc__, mode.__doc__ = original_format.__doc__, original_mode.__doc__
    writer_class.format, writer_class.mode = format, mode
    writer_class._kafkalite_default_append = True
