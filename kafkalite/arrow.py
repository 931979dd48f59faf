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

from kafkalite.records.record import Header
from kafkalite.records.v2_records import Columns

if TYPE_CHECKING:
    import pyarrow

INSTALL_HINT = "pip install 'kafkalite[arrow]'"


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


def record_batch(parts: Sequence[tuple[str, int, Columns, int]], *,
                 timestamp_type: bool = False) -> pyarrow.RecordBatch:
    """One RecordBatch from decoded columns: ``(topic, partition, columns, timestamp type)``
    per run; the timestamp types become a column with ``timestamp_type``."""
    pa = require_pyarrow()
    schema = record_schema(timestamp_type=timestamp_type)
    if not parts:
        return pa.RecordBatch.from_pylist([], schema=schema)
    keys = list(chain.from_iterable(part[2].keys for part in parts))
    values = list(chain.from_iterable(part[2].values for part in parts))
    offsets = list(chain.from_iterable(part[2].offsets for part in parts))
    timestamps = list(chain.from_iterable(part[2].timestamps for part in parts))
    arrays = [
        pa.array(keys, pa.binary()),
        pa.array(values, pa.binary()),
        _repeated(pa, pa.string(), [(part[0], len(part[2].offsets)) for part in parts]),
        _repeated(pa, pa.int32(), [(part[1], len(part[2].offsets)) for part in parts]),
        pa.array(offsets, pa.int64()),
        pa.array(timestamps, pa.int64()).cast(pa.timestamp("ms")),
        _headers_array(pa, [part[2].headers for part in parts], len(offsets)),
    ]
    if timestamp_type:
        arrays.append(_repeated(pa, pa.int8(), [(part[3], len(part[2].offsets))
                                                for part in parts]))
    return pa.RecordBatch.from_arrays(arrays, schema=schema)


def _repeated(pa: Any, arrow_type: Any, runs: list[tuple[Any, int]]) -> Any:
    """A column holding one value per run, repeated for the run's records."""
    return pa.concat_arrays([pa.repeat(pa.scalar(value, arrow_type), count)
                             for value, count in runs])


def _headers_array(pa: Any, runs: list[list[tuple[Header, ...]]], count: int) -> Any:
    """The headers column; runs without any header cost one check per record."""
    header_type = _headers_type(pa)
    if not any(any(run) for run in runs):
        return pa.ListArray.from_arrays(pa.array([0] * (count + 1), pa.int32()),
                                        pa.array([], header_type.value_type))
    rows = [[{"key": name, "value": value} for name, value in headers]
            for run in runs for headers in run]
    return pa.array(rows, header_type)


def columns_from_arrow(values: Any, keys: Any, headers: Any,
                       timestamps: Any) -> tuple[list[Any], Any, Any, Any]:
    """``send_batch``'s inputs with any Arrow array or table turned into Python lists.

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
    if not _is_arrow(pa, column):
        return column
    if pa.types.is_string(column.type) or pa.types.is_large_string(column.type):
        column = column.cast(pa.binary())
    if not (pa.types.is_binary(column.type) or pa.types.is_large_binary(column.type)
            or pa.types.is_fixed_size_binary(column.type)):
        raise TypeError(f"send_batch {name} must be a binary or string column, not "
                        f"{column.type}")
    return column.to_pylist()


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
