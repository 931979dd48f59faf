"""Client settings written the Java way, as Kafka tools and Spark take them.

``fetch.max.bytes=1048576`` (kcat's ``-X``, Kafka's ``--producer-props``, Spark's
``kafka.``-prefixed options) is kafkalite's ``fetch_max_bytes=1048576``: dots become
underscores and the text becomes an int or a bool where it spells one. The clients validate
the result, so a misspelt key fails with an error naming it.
"""

from __future__ import annotations

import re
from typing import Any

_INT = re.compile(r"-?\d+")


def setting_name(java_name: str) -> str:
    """``fetch.max.bytes`` -> ``fetch_max_bytes`` (an underscored name stays as it is)."""
    return java_name.strip().replace(".", "_")


def typed_value(raw: str) -> Any:
    """Tools pass every value as text; the clients want ints and bools as such."""
    text = raw.strip()
    if _INT.fullmatch(text):
        return int(text)
    if text.lower() in ("true", "false"):
        return text.lower() == "true"
    return raw


def client_setting(java_name: str, raw: str) -> tuple[str, Any]:
    """One ``name=value`` property as a client keyword argument."""
    return setting_name(java_name), typed_value(raw)
