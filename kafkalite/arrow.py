"""Records as Apache Arrow columns: what ``Consumer.poll_arrow`` returns and what
``Producer.send_batch`` takes besides plain sequences.

pyarrow is optional: it is imported when one of these functions runs, and its absence is
an :class:`ImportError` that names the extra to install. The schema mirrors the record:

====================  =====================================  ==================
column                type                                   null when
====================  =====================================  ==================
``key``               binary                                 the key is null
``value``             binary                                 the value is null
``topic``             string                                 never
``partition``         int32                                  never
``offset``            int64                                  never
``timestamp``         timestamp[ms]                          never
``headers``           list<struct<key: string, value: binary>>  never (empty list)
====================  =====================================  ==================

``poll_arrow(timestamp_type=True)`` adds ``timestamp_type`` (int8: 0 CreateTime,
1 LogAppendTime), which the Spark source needs for its ``timestampType`` column.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import chain
from typing import TYPE_CHECKING, Any

from kafkalite.records.accelerator import speedups
from kafkalite.records.builder import BinaryColumn
from kafkalite.records.record import Header
from kafkalite.records.v2_records import Columns, SectionRange

if TYPE_CHECKING:
    import pyarrow

INSTALL_HINT = "pip install 'kafkalite[arrow]'"
_compiled_decode_arrow = getattr(speedups, "decode_arrow", None)


def require_pyarrow() -> Any:
    """The pyarrow module, or an ImportError saying how to install it."""
    try:
        import pyarrow
    except ImportError as exc:
        raise ImportError(f"this API needs pyarrow: {INSTALL_HINT}") from exc
    return pyarrow


def record_schema(*, timestamp_type: bool = False) -> pyarrow.Schema:
    """The schema of ``Consumer.poll_arrow``'s record batches."""
    pa = require_pyarrow()
    schema = pa.schema([
        ("key", pa.binary()),
        ("value", pa.binary()),
        ("topic", pa.string()),
        ("partition", pa.int32()),
        ("offset", pa.int64()),
        ("timestamp", pa.timestamp("ms")),
        ("headers", _headers_type(pa)),
    ])
    return schema.append(pa.field("timestamp_type", pa.int8())) if timestamp_type else schema


def _headers_type(pa: Any) -> Any:
    return pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def record_batch(parts: Sequence[tuple[str, int, int, Columns | SectionRange]], *,
                 timestamp_type: bool = False) -> pyarrow.RecordBatch:
    """One RecordBatch from runs of records: ``(topic, partition, timestamp type, records)``
    per run, the records decoded columns or a range of a plain records section; the
    timestamp types become a column with ``timestamp_type``.

    When every run is a plain section and the compiled codec is built, the records are
    decoded in one call straight into Arrow buffers (no Python object per record);
    otherwise through Python columns. Both give equal batches.
    """
    pa = require_pyarrow()
    schema = record_schema(timestamp_type=timestamp_type)
    if not parts:
        return pa.RecordBatch.from_pylist([], schema=schema)
    runs = [(part[0], part[1], part[2], _run_length(part[3])) for part in parts]
    decoded = _decode_arrow(parts)
    if decoded is None:
        columns = [part[3] if isinstance(part[3], Columns) else part[3].columns()
                   for part in parts]
        arrays = _record_arrays(pa, columns)
        headers = _headers_array(pa, [part.headers for part in columns], len(arrays[0]))
    else:
        arrays = _buffer_arrays(pa, decoded)
        headers = _no_headers(pa, len(arrays[0]))
    arrays[2:2] = [_repeated(pa, pa.string(), [(topic, size) for topic, _, _, size in runs]),
                   _repeated(pa, pa.int32(), [(partition, size)
                                              for _, partition, _, size in runs])]
    arrays.append(headers)
    if timestamp_type:
        arrays.append(_repeated(pa, pa.int8(), [(kind, size) for _, _, kind, size in runs]))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _run_length(records: Columns | SectionRange) -> int:
    return len(records) if isinstance(records, Columns) else records.stop - records.start


def _decode_arrow(parts: Sequence[tuple[str, int, int, Columns | SectionRange]]
                  ) -> tuple[Any, ...] | None:
    """The compiled codec's Arrow buffers of every run, or None where it is not built or
    declines (a run already decoded into columns among them)."""
    if _compiled_decode_arrow is None:
        return None
    sections = []
    for part in parts:
        records = part[3]
        if isinstance(records, Columns):
            return None
        sections.append((*records.section, records.start, records.stop))
    return _compiled_decode_arrow(sections)


def _buffer_arrays(pa: Any, decoded: tuple[Any, ...]) -> list[Any]:
    """key, value, offset and timestamp arrays over the compiled codec's buffers."""
    (count, key_validity, key_offsets, key_data, key_nulls, value_validity, value_offsets,
     value_data, value_nulls, offsets, timestamps) = decoded
    buffer = pa.py_buffer
    return [
        _binary_array(pa, count, key_validity, key_offsets, key_data, key_nulls),
        _binary_array(pa, count, value_validity, value_offsets, value_data, value_nulls),
        pa.Array.from_buffers(pa.int64(), count, [None, buffer(offsets)], 0),
        pa.Array.from_buffers(pa.timestamp("ms"), count, [None, buffer(timestamps)], 0),
    ]


def _binary_array(pa: Any, count: int, validity: bytes | None, offsets: bytes, data: bytes,
                  nulls: int) -> Any:
    """A binary array over the given buffers, without copying them."""
    buffer = pa.py_buffer
    return pa.Array.from_buffers(pa.binary(), count, [
        None if validity is None else buffer(validity), buffer(offsets), buffer(data)], nulls)


def _record_arrays(pa: Any, columns: list[Columns]) -> list[Any]:
    """key, value, offset and timestamp arrays from Python columns."""
    keys = list(chain.from_iterable(part.keys for part in columns))
    values = list(chain.from_iterable(part.values for part in columns))
    offsets = list(chain.from_iterable(part.offsets for part in columns))
    timestamps = list(chain.from_iterable(part.timestamps for part in columns))
    return [pa.array(keys, pa.binary()), pa.array(values, pa.binary()),
            pa.array(offsets, pa.int64()),
            pa.array(timestamps, pa.int64()).cast(pa.timestamp("ms"))]


def _repeated(pa: Any, arrow_type: Any, runs: list[tuple[Any, int]]) -> Any:
    """A column holding one value per run, repeated for the run's records; consecutive
    runs of one value (the batches of one partition) make one repeat."""
    merged: list[list[Any]] = []
    for value, count in runs:
        if merged and merged[-1][0] == value:
            merged[-1][1] += count
        else:
            merged.append([value, count])
    return pa.concat_arrays([pa.repeat(pa.scalar(value, arrow_type), count)
                             for value, count in merged])


def _no_headers(pa: Any, count: int) -> Any:
    """The headers column of ``count`` records without headers: every list empty."""
    header_type = _headers_type(pa)
    return pa.Array.from_buffers(header_type, count,
                                 [None, pa.py_buffer(bytes(4 * (count + 1)))],
                                 children=[pa.array([], header_type.value_type)])


def _headers_array(pa: Any, runs: list[list[tuple[Header, ...]]], count: int) -> Any:
    """The headers column; runs without any header cost one check per record."""
    if not any(any(run) for run in runs):
        return _no_headers(pa, count)
    rows = [[{"key": name, "value": value} for name, value in headers]
            for run in runs for headers in run]
    return pa.array(rows, _headers_type(pa))


def columns_from_arrow(values: Any, keys: Any, headers: Any,
                       timestamps: Any) -> tuple[list[Any], Any, Any, Any]:
    """``send_batch``'s inputs with any Arrow array or table turned into what it takes:
    keys and values as :class:`BinaryColumn` s, headers and timestamps as Python lists.

    A Table (or RecordBatch) as ``values`` supplies the ``value`` column and, when present
    and not given separately, ``key``, ``headers`` and ``timestamp``.
    """
    pa = require_pyarrow()
    if isinstance(values, pa.Table | pa.RecordBatch):
        table = values
        names = table.schema.names
        if "value" not in names:
            raise ValueError(f"send_batch needs a 'value' column; the table has {names}")
        values = table.column("value")
        if keys is None and "key" in names:
            keys = table.column("key")
        if headers is None and "headers" in names:
            headers = table.column("headers")
        if timestamps is None and "timestamp" in names:
            timestamps = table.column("timestamp")
    return (_binary_list(pa, values, "values"), None if keys is None
            else _binary_list(pa, keys, "keys"), _headers_list(pa, headers),
            _timestamp_list(pa, timestamps))


def _is_arrow(pa: Any, column: Any) -> bool:
    return isinstance(column, pa.Array | pa.ChunkedArray)


def _binary_list(pa: Any, column: Any, name: str) -> Any:
    """A binary or string column as a :class:`BinaryColumn` over its Arrow buffers (the
    producer encodes from them in place), or a list for fixed-size binary."""
    if not _is_arrow(pa, column):
        return column
    if isinstance(column, pa.ChunkedArray):
        column = column.combine_chunks()
    if pa.types.is_string(column.type):
        column = column.cast(pa.binary())
    elif pa.types.is_large_string(column.type):
        column = column.cast(pa.large_binary())
    if pa.types.is_fixed_size_binary(column.type):
        return column.to_pylist()
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)):
        raise TypeError(f"send_batch {name} must be a binary or string column, not "
                        f"{column.type}")
    if not len(column):
        return []
    import pyarrow.compute as pc

    validity, offsets, data = column.buffers()
    return BinaryColumn(validity if column.null_count else None, offsets,
                        b"" if data is None else data, column.offset, len(column),
                        4 if pa.types.is_binary(column.type) else 8,
                        pc.max(pc.binary_length(column)).as_py() or 0)


def _headers_list(pa: Any, column: Any) -> Any:
    if not _is_arrow(pa, column):
        return column
    return [None if row is None else [(item["key"], item["value"]) for item in row]
            for row in column.to_pylist()]


def _timestamp_list(pa: Any, column: Any) -> Any:
    if not _is_arrow(pa, column):
        return column
    if pa.types.is_timestamp(column.type):
        column = column.cast(pa.timestamp("ms")).cast(pa.int64())
    elif not pa.types.is_integer(column.type):
        raise TypeError(f"send_batch timestamps must be integers (ms) or timestamps, not "
                        f"{column.type}")
    return column.to_pylist()
