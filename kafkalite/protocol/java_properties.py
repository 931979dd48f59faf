"""Java ``.properties`` text, the format Kafka's broker configs and client config files use.

One parser for both sides: the broker reads ``server.properties`` and ``meta.properties``
with it, the command-line tools read ``--command-config`` files with it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

_KEY_VALUE = re.compile(r"(?P<key>[^=:\s]+)\s*[=:\s]?\s*(?P<value>.*)$")
"""A key ends at the first ``=``, ``:`` or whitespace; one separator, padded, follows."""


def parse_properties(lines: Iterable[str]) -> dict[str, str]:
    """``key=value`` / ``key: value`` / ``key value`` lines, ``#`` and ``!`` comments, and a
    trailing backslash that continues the value on the next line (its indent dropped)."""
    result: dict[str, str] = {}
    pending = ""
    for raw in lines:
        line = pending + raw.strip() if pending else raw.strip()
        if line.endswith("\\") and not line.endswith("\\\\"):
            pending = line[:-1]
            continue
        pending = ""
        if not line or line[0] in "#!":
            continue
        match = _KEY_VALUE.match(line)
        if match is not None:
            result[match["key"]] = match["value"].strip()
    return result
