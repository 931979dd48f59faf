"""Which record codec runs: the compiled one when it was built, else the Python one.

``kafkalite.records._speedups`` is a C extension that the build compiles when a C compiler
is at hand (see ``hatch_build.py``). It runs the per-record loops of RecordBatch v2:
decoding a batch's records into columns, encoding records into a batch body (the
producer's open batch is a compiled ``RecordsWriter``, whose twin is
:class:`~kafkalite.records.builder.PythonRecordsWriter`), and the broker's validation walk
over a produced batch (:mod:`kafkalite.records.validation`). The
Python code stays the reference: the compiled functions return exactly what it returns,
or None for anything outside the common case (every malformed record among it), and the
caller then runs the Python code on the same input, so errors are always the Python
codec's.

``KAFKALITE_NO_SPEEDUPS=1`` in the environment selects the Python codec even when the
extension is there; it is read once, at import.
"""

from __future__ import annotations

import os
from types import ModuleType

API_VERSION = 6
"""The extension's ``API_VERSION`` this code expects; a stale build is ignored (4: the
first with ``RecordsWriter``; 5: ``RecordsWriter.seal``; 6: ``slot_records``)."""
DISABLE_VARIABLE = "KAFKALITE_NO_SPEEDUPS"


def _load() -> ModuleType | None:
    if os.environ.get(DISABLE_VARIABLE, "") not in ("", "0"):
        return None
    try:
        from kafkalite.records import _speedups  # type: ignore[attr-defined]
    except ImportError:
        return None
    return _speedups if getattr(_speedups, "API_VERSION", None) == API_VERSION else None


speedups: ModuleType | None = _load()
"""The compiled codec, or None when the Python codec runs."""

ENABLED = speedups is not None
