"""Plain-text tables and JSON for command output (no dependency, stable for scripts)."""

from __future__ import annotations

import json
import sys
from collections.abc import Sequence
from typing import Any


def print_table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> None:
    """Columns padded to their widest cell, as kafka-consumer-groups prints them."""
    cells = [[str(h) for h in headers], *[["-" if c is None else str(c) for c in row]
                                          for row in rows]]
    widths = [max(len(row[i]) for row in cells) for i in range(len(headers))]
    for row in cells:
        print("  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True))
              .rstrip())


def print_json(data: Any) -> None:
    json.dump(data, sys.stdout, indent=2, sort_keys=False)
    sys.stdout.write("\n")
