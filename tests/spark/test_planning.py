"""Option parsing, JSON offsets, range planning and Arrow conversion: no Spark job needed."""

from __future__ import annotations

import socket

import msgpack
import pyarrow as pa
import pytest
from hypothesis import given
from hypothesis import strategies as st
from pyspark.sql.types import (
    BinaryType,
    DataType,
    IntegerType,
    LongType,
    StringType,
    StructField,
    StructType,
    TimestampNTZType,
)

from kafkalite.arrow import record_batch
from kafkalite.errors import BrokerUnreachableError, ConfigError, KafkaError
from kafkalite.records.v2_records import Columns
from kafkalite.spark.kafka_access import OffsetResolver, with_retries
from kafkalite.spark.offsets import offsets_from_json, offsets_to_json, parse_offset_spec
from kafkalite.spark.options import (
    TopicSelection,
    ValueEncoding,
    parse_read_options,
    parse_write_options,
)
from kafkalite.spark.planning import OffsetRange, cap_offsets, ranges_between, split_ranges
from kafkalite.spark.schema import (
    ArrowBatchBuilder,
    SchemaError,
    ValueDecodeError,
    check_read_schema,
    source_schema_ddl,
)
from kafkalite.structs import ConsumerRecord, TopicPartition

BASE = {"kafka.bootstrap.servers": "127.0.0.1:9092", "subscribe": "a,b"}


def tp(topic: str, partition: int) -> TopicPartition:
    return TopicPartition(topic, partition)


# ---------------------------------------------------------------- options


def test_read_options_parse_spark_names_case_insensitively() -> None:
    options = parse_read_options({**BASE, "STARTINGOFFSETS": '{"a": {"0": 5, "1": -2}}',
                                  "kafka.fetch.max.bytes": "1048576", "minPartitions": "4",
                                  "includeHeaders": "true", "failOnDataLoss": "false"},
                                 streaming=False)
    assert options.selection == TopicSelection(topics=("a", "b"))
    assert options.starting == {tp("a", 0): 5, tp("a", 1): -2}
    assert options.ending == "latest"
    assert options.client_config == {"bootstrap_servers": "127.0.0.1:9092",
                                      "fetch_max_bytes": 1048576}
    assert (options.min_partitions, options.include_headers, options.fail_on_data_loss) == \
        (4, True, False)


def test_streaming_defaults_to_latest_and_batch_to_earliest() -> None:
    assert parse_read_options(BASE, streaming=True).starting == "latest"
    assert parse_read_options(BASE, streaming=False).starting == "earliest"


@pytest.mark.parametrize(("options", "named"), [
    ({**BASE, "startingOffset": "earliest"}, "startingoffset"),
    ({**BASE, "kafka.enable.auto.commit": "true"}, "kafka.enable.auto.commit"),
    ({"subscribe": "a"}, "kafka.bootstrap.servers"),
    ({**BASE, "assign": '{"a": [0]}'}, "subscribe"),
    ({**BASE, "minPartitions": "0"}, "minPartitions"),
    ({**BASE, "maxRecordsPerPartition": "0"}, "maxRecordsPerPartition"),
    ({**BASE, "startingOffsetsByTimestamp": '{"a": {"0": -1}}'}, "startingOffsetsByTimestamp"),
    ({**BASE, "endingOffsetsByTimestamp": "[]"}, "endingOffsetsByTimestamp"),
    ({**BASE, "startingOffsetsByTimestampStrategy": "earliest"},
     "startingOffsetsByTimestampStrategy"),
    ({**BASE, "fetchOffset.numRetries": "-1"}, "fetchOffset.numRetries"),
    ({**BASE, "groupIdPrefix": " "}, "groupIdPrefix"),
    ({**BASE, "startingOffsets": "latest"}, "startingOffsets"),
    ({**BASE, "endingOffsets": '{"a": {"0": -2}}'}, "endingOffsets"),
    ({**BASE, "startingOffsets": '{"a": {"x": 1}}'}, "startingOffsets"),
    ({**BASE, "startingOffsets": "{not json"}, "startingOffsets"),
    ({**BASE, "valueFormat": "msgpack"}, "valueSchema"),
    ({**BASE, "valueFormat": "avro", "valueSchema": "a int"}, "valueFormat"),
    ({**BASE, "includeHeaders": "yes"}, "includeHeaders"),
    ({"kafka.bootstrap.servers": "h:1", "subscribePattern": "("}, "subscribePattern"),
    ({"kafka.bootstrap.servers": "h:1", "assign": '{"a": ["0"]}'}, "assign"),
])
def test_bad_batch_read_options_name_the_option(options: dict[str, str], named: str) -> None:
    with pytest.raises(ConfigError) as info:
        parse_read_options(options, streaming=False)
    assert info.value.key == named


def test_streaming_rejects_ending_offsets() -> None:
    with pytest.raises(ConfigError, match="endingOffsets"):
        parse_read_options({**BASE, "endingOffsets": "latest"}, streaming=True)
    with pytest.raises(ConfigError, match="endingOffsetsByTimestamp"):
        parse_read_options({**BASE, "endingOffsetsByTimestamp": '{"a": {"0": 1}}'},
                           streaming=True)


def test_a_batch_read_ignores_streaming_options_with_a_warning(
        caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level("WARNING", logger="kafkalite.spark.options"):
        options = parse_read_options({**BASE, "maxOffsetsPerTrigger": "10",
                                      "minOffsetsPerTrigger": "5", "maxTriggerDelay": "1m"},
                                     streaming=False)
    assert (options.max_offsets_per_trigger, options.min_offsets_per_trigger) == (None, None)
    assert sorted(r.getMessage() for r in caplog.records) == [
        f"{name} option ignored in batch queries"
        for name in ("maxOffsetsPerTrigger", "maxTriggerDelay", "minOffsetsPerTrigger")]


def test_new_source_options_parse_with_sparks_defaults() -> None:
    default = parse_read_options(BASE, streaming=True)
    assert (default.timestamp_strategy, default.max_trigger_delay_ms,
            default.fetch_offset_retries, default.fetch_offset_retry_interval_ms) == \
        ("error", 15 * 60_000, 3, 10)
    assert default.group_id.startswith("spark-kafka-source-") and not default.group_id_given
    assert parse_read_options(BASE, streaming=True).group_id != default.group_id  # per query
    options = parse_read_options({
        **BASE, "startingOffsetsByTimestamp": '{"a": {"0": 1700000000000}}',
        "startingOffsetsByTimestampStrategy": "LATEST", "minOffsetsPerTrigger": "50",
        "maxTriggerDelay": "30s", "maxRecordsPerPartition": "1000",
        "fetchOffset.numRetries": "5", "fetchOffset.retryIntervalMs": "100",
        "groupIdPrefix": "reports"}, streaming=True)
    assert options.starting_by_timestamp == {tp("a", 0): 1_700_000_000_000}
    assert (options.timestamp_strategy, options.min_offsets_per_trigger,
            options.max_trigger_delay_ms, options.max_records_per_partition) == \
        ("latest", 50, 30_000, 1000)
    assert (options.fetch_offset_retries, options.fetch_offset_retry_interval_ms) == (5, 100)
    assert options.group_id.startswith("reports-")
    named = parse_read_options({**BASE, "kafka.group.id": "etl", "groupIdPrefix": "x"},
                               streaming=False)
    assert (named.group_id, named.group_id_given) == ("etl", True)
    assert "group_id" not in named.client_config


def test_offset_lookups_retry_then_name_what_failed() -> None:
    calls: list[int] = []
    sleeps: list[float] = []

    def flaky() -> str:
        calls.append(1)
        if len(calls) < 3:
            raise KafkaError("no leader")
        return "offsets"

    assert with_retries(flaky, "latest offsets", 3, 20, sleeps.append) == "offsets"
    assert (len(calls), sleeps) == (3, [0.02, 0.02])
    calls.clear()
    with pytest.raises(KafkaError, match=r"fetching latest offsets failed 2 times"):
        with_retries(lambda: flaky() and flaky(), "latest offsets", 1, 0, sleeps.append)


def test_no_broker_reachable_fails_the_lookup_at_once() -> None:
    """Connection refused is not retried fetchOffset.numRetries times: the same settings
    fail the same way, and the error names the address and the cause."""
    calls: list[int] = []

    def unreachable() -> str:
        calls.append(1)
        raise BrokerUnreachableError("no metadata update within 2 s: connection refused at h:1")

    with pytest.raises(BrokerUnreachableError, match=r"fetching topics: .*connection refused"):
        with_retries(unreachable, "topics", 3, 0, lambda _s: None)
    assert len(calls) == 1


def test_a_read_from_a_closed_port_names_it() -> None:
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        unused_port = f"127.0.0.1:{probe.getsockname()[1]}"
    options = parse_read_options({"kafka.bootstrap.servers": unused_port, "subscribe": "t",
                                  "kafka.default.api.timeout.ms": "2000",
                                  "fetchoffset.numretries": "3"}, streaming=False)
    with OffsetResolver(options) as resolver, pytest.raises(BrokerUnreachableError) as info:
        resolver.partitions()
    assert f"connection refused at {unused_port}" in str(info.value)
    assert "failed 4 times" not in str(info.value)


def test_max_records_per_partition_then_min_partitions() -> None:
    ranges = [OffsetRange("a", 0, 0, 100), OffsetRange("a", 1, 10, 15)]
    pieces = split_ranges(ranges, None, 30)
    assert [(r.partition, r.start, r.end) for r in pieces] == [
        (0, 0, 25), (0, 25, 50), (0, 50, 75), (0, 75, 100), (1, 10, 15)]
    assert len(split_ranges(ranges, 8, 60)) >= 8
    assert max(r.size for r in split_ranges(ranges, 8, 60)) <= 60


def test_write_options_check_producer_settings_on_the_driver() -> None:
    options = parse_write_options({"kafka.bootstrap.servers": "h:1", "topic": "t",
                                   "kafka.linger.ms": "20", "kafka.acks": "1"})
    assert options.client_config == {"bootstrap_servers": "h:1", "linger_ms": 20, "acks": 1}
    with pytest.raises(ConfigError) as info:
        parse_write_options({"kafka.bootstrap.servers": "h:1", "kafka.lingerms": "5"})
    assert info.value.key == "kafka.lingerms"
    with pytest.raises(ConfigError) as info:
        parse_write_options({"kafka.bootstrap.servers": "h:1", "subscribe": "t"})
    assert info.value.key == "subscribe"


# ---------------------------------------------------------------- offsets


def test_offset_spec_words_and_json() -> None:
    assert parse_offset_spec(" Earliest ", "o") == "earliest"
    assert parse_offset_spec('{"t": {"1": -1, "0": 7}}', "o") == {tp("t", 1): -1, tp("t", 0): 7}
    with pytest.raises(ConfigError, match="-3"):
        parse_offset_spec('{"t": {"0": -3}}', "o")


@given(st.dictionaries(st.tuples(st.sampled_from(["a", "b.c", "d-e"]), st.integers(0, 50)),
                       st.integers(0, 2**62)))
def test_checkpoint_json_round_trips(raw: dict[tuple[str, int], int]) -> None:
    offsets = {TopicPartition(*key): value for key, value in raw.items()}
    assert offsets_from_json(offsets_to_json(offsets)) == offsets


# ---------------------------------------------------------------- planning


def test_ranges_between_skips_empty_and_reads_new_partitions_from_zero() -> None:
    start = {tp("t", 0): 10, tp("t", 1): 5}
    end = {tp("t", 0): 10, tp("t", 1): 9, tp("t", 2): 3}
    assert ranges_between(start, end) == [OffsetRange("t", 1, 5, 9), OffsetRange("t", 2, 0, 3)]


@given(st.lists(st.integers(0, 1000), min_size=1, max_size=8), st.integers(1, 40))
def test_split_covers_every_offset_once_in_at_least_min_pieces(sizes: list[int],
                                                              min_partitions: int) -> None:
    ranges = [OffsetRange("t", p, 100, 100 + size) for p, size in enumerate(sizes) if size]
    pieces = split_ranges(ranges, min_partitions)
    covered = sorted((r.partition, o) for r in pieces for o in range(r.start, r.end))
    assert covered == sorted((r.partition, o) for r in ranges for o in range(r.start, r.end))
    assert all(r.size > 0 for r in pieces)
    total = sum(sizes)
    assert len(pieces) >= min(min_partitions, total)


@given(st.dictionaries(st.integers(0, 7), st.tuples(st.integers(0, 100), st.integers(0, 500)),
                       min_size=1), st.integers(1, 600))
def test_cap_reads_exactly_the_limit_or_everything(parts: dict[int, tuple[int, int]],
                                                   limit: int) -> None:
    start = {tp("t", p): s for p, (s, _) in parts.items()}
    latest = {tp("t", p): s + lag for p, (s, lag) in parts.items()}
    end = cap_offsets(start, latest, limit)
    assert all(start[k] <= end[k] <= latest[k] for k in latest)
    backlog = sum(lag for _, lag in parts.values())
    assert sum(end[k] - start[k] for k in end) == min(limit, backlog)


def test_cap_shares_by_backlog() -> None:
    start = {tp("t", 0): 0, tp("t", 1): 0}
    assert cap_offsets(start, {tp("t", 0): 300, tp("t", 1): 100}, 100) == \
        {tp("t", 0): 75, tp("t", 1): 25}


# ---------------------------------------------------------------- arrow batches

SCHEMA = pa.schema([
    ("key", pa.binary()), ("value", pa.struct([("user", pa.string()), ("n", pa.int32())])),
    ("topic", pa.string()), ("partition", pa.int32()), ("offset", pa.int64()),
    ("timestamp", pa.timestamp("us", tz="UTC")), ("timestampType", pa.int32()),
    ("headers", pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))),
])


def record(offset: int, value: bytes | None, headers: tuple = ()) -> ConsumerRecord:
    return ConsumerRecord("t", 3, offset, 1_700_000_000_123, 0, b"k", value, headers)


def polled(records: list[ConsumerRecord]) -> pa.RecordBatch:
    """What ``poll_arrow(timestamp_type=True)`` returns for these records of t-3."""
    columns = Columns([r.offset for r in records], [r.timestamp for r in records],
                      [r.key for r in records], [r.value for r in records],
                      [r.headers for r in records])
    return record_batch([("t", 3, 0, columns)], timestamp_type=True)


def test_arrow_batch_decodes_msgpack_values_and_headers() -> None:
    builder = ArrowBatchBuilder(SCHEMA, ValueEncoding("msgpack", "user string, n int"))
    batch = builder.build(polled([record(5, msgpack.packb({"user": "ann", "n": 2}),
                                         (("h", b"1"),)), record(6, None)]))
    assert batch.schema.equals(SCHEMA)
    rows = batch.to_pylist()
    assert rows[0]["value"] == {"user": "ann", "n": 2}
    assert rows[0]["headers"] == [{"key": "h", "value": b"1"}]
    assert rows[1]["value"] is None
    assert rows[0]["timestamp"].timestamp() == 1_700_000_000.123
    assert (rows[1]["partition"], rows[1]["offset"]) == (3, 6)


@pytest.mark.parametrize("value", [b"\xc1", msgpack.packb([1, 2]), msgpack.packb({"n": "x"})])
def test_undecodable_msgpack_value_names_where(value: bytes) -> None:
    builder = ArrowBatchBuilder(SCHEMA, ValueEncoding("msgpack", "user string, n int"))
    with pytest.raises(ValueDecodeError, match="t-3 offset"):
        builder.build(polled([record(9, value)]))


def test_read_options_check_consumer_settings_on_the_driver() -> None:
    with pytest.raises(ConfigError) as info:
        parse_read_options({**BASE, "kafka.fetch.max.bytez": "1"}, streaming=False)
    assert info.value.key == "kafka.fetch.max.bytez"


def test_arrow_batch_builds_only_the_declared_columns_in_their_order() -> None:
    declared = pa.schema([("offset", pa.int64()), ("value", pa.binary()),
                          ("partition", pa.int32())])
    builder = ArrowBatchBuilder(declared, ValueEncoding())
    assert not builder.needs_timestamp_type  # poll_arrow can leave timestamp_type out
    columns = Columns([7, 8], [1, 2], [b"k", None], [b"a", None], [(), ()])
    batch = builder.build(record_batch([("t", 3, 0, columns)]))
    assert batch.schema.equals(declared)
    assert batch.to_pylist() == [{"offset": 7, "value": b"a", "partition": 3},
                                 {"offset": 8, "value": None, "partition": 3}]
    assert ArrowBatchBuilder(SCHEMA, ValueEncoding("msgpack", "user string, n int")) \
        .needs_timestamp_type


# ---------------------------------------------------------------- declared read schemas


def fields(*columns: tuple[str, DataType]) -> StructType:
    return StructType([StructField(name, kind, True) for name, kind in columns])


def test_a_selection_of_the_source_columns_passes_in_any_order() -> None:
    check_read_schema(fields(("offset", LongType()), ("value", BinaryType()),
                             ("topic", StringType())), ValueEncoding(), False)
    struct = StructType([StructField("user", StringType())])
    check_read_schema(fields(("value", struct)), ValueEncoding("msgpack", "user string"), False)


@pytest.mark.parametrize(("declared", "include_headers", "column", "message"), [
    (fields(("value", BinaryType()), ("size", IntegerType())), False, "size",
     "not a column of the kafkalite source; its columns: key, value, topic, partition, "
     "offset, timestamp, timestampType"),
    (fields(("Offset", LongType())), False, "Offset", "did you mean 'offset'"),
    (fields(("headers", BinaryType())), False, "headers", "needs the option includeHeaders"),
    (fields(("offset", IntegerType())), False, "offset", "must be bigint, not int"),
    (fields(("timestamp", TimestampNTZType())), False, "timestamp",
     "must be timestamp, not timestamp_ntz"),
    (fields(("value", StringType())), False, "value", "must be binary, not string"),
    (fields(("headers", StringType())), True, "headers",
     "must be array<struct<key:string,value:binary>>, not string"),
    (fields(("value", BinaryType()), ("value", BinaryType())), False, "value", "twice"),
    (StructType([StructField("key", BinaryType(), False)]), False, "key", "NOT NULL"),
])
def test_a_declared_schema_the_source_cannot_fill_names_the_column(
        declared: StructType, include_headers: bool, column: str, message: str) -> None:
    with pytest.raises(SchemaError, match=f"column '{column}'") as info:
        check_read_schema(declared, ValueEncoding(), include_headers)
    assert info.value.column == column
    assert message in str(info.value)


def test_msgpack_values_must_be_declared_as_a_struct() -> None:
    with pytest.raises(SchemaError, match="column 'value': must be a struct with "
                       "valueFormat=msgpack"):
        check_read_schema(fields(("value", BinaryType())),
                          ValueEncoding("msgpack", "user string"), False)


def test_an_empty_read_schema_is_refused_listing_the_columns() -> None:
    with pytest.raises(SchemaError, match="at least one of the source's columns: key, value"):
        check_read_schema(StructType(), ValueEncoding(), False)


def test_source_schema_ddl_lists_every_column() -> None:
    assert source_schema_ddl(ValueEncoding("msgpack", "n int"), True) == (
        "key binary, value struct<n int>, topic string, partition int, offset bigint, "
        "timestamp timestamp, timestampType int, headers array<struct<key:string,value:binary>>")
