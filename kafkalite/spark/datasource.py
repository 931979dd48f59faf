"""The ``kafkalite`` Spark data source: the entry point Spark instantiates per query."""

from __future__ import annotations

from typing import Any

from pyspark.sql import SparkSession
from pyspark.sql.datasource import (
    DataSource,
    DataSourceReader,
    DataSourceStreamReader,
    DataSourceStreamWriter,
    DataSourceWriter,
)
from pyspark.sql.types import StructType

from kafkalite.spark.options import (
    parse_read_options,
    parse_schema_options,
    parse_write_options,
)
from kafkalite.spark.readers import BatchReader, StreamReader
from kafkalite.spark.schema import source_schema_ddl
from kafkalite.spark.writers import BatchWriter, StreamWriter, check_write_schema


class KafkaliteDataSource(DataSource):
    """``spark.read.format("kafkalite")`` and friends; options as Spark's Kafka source."""

    @classmethod
    def name(cls) -> str:
        return "kafkalite"

    def schema(self) -> str:
        value, include_headers = parse_schema_options(self.options)
        return source_schema_ddl(value, include_headers)

    def reader(self, schema: StructType) -> DataSourceReader:
        return BatchReader(parse_read_options(self.options, streaming=False), schema)

    def streamReader(self, schema: StructType) -> DataSourceStreamReader:
        return StreamReader(parse_read_options(self.options, streaming=True), schema)

    def writer(self, schema: StructType, overwrite: bool) -> DataSourceWriter:
        options = parse_write_options(self.options)
        check_write_schema(schema, options)
        return BatchWriter(options)

    def streamWriter(self, schema: StructType, overwrite: bool) -> DataSourceStreamWriter:
        options = parse_write_options(self.options)
        check_write_schema(schema, options)
        return StreamWriter(options)


def register(spark: SparkSession | Any) -> None:
    """Make ``format("kafkalite")`` available in this Spark session."""
    spark.dataSource.register(KafkaliteDataSource)
