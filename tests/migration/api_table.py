"""The API tables of docs/migration.md, computed from kafka-python and kafkalite by
introspection: names per module, config keys per client, public methods per client.

``python -m tests.migration.api_table`` rewrites the generated part of the page;
``test_api_table.py`` fails when the committed page differs from what this computes.
"""

from __future__ import annotations

import importlib
import inspect
import re
import sys
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any

import kafka

from kafkalite.admin import UNSENT_ADMIN_APIS
from kafkalite.client.client import CLIENT_DEFAULTS
from kafkalite.client.settings import IGNORED_CLIENT_KEYS, SECURITY_DEFAULTS, SECURITY_KEY_NOTES
from kafkalite.consumer.config import CONSUMER_DEFAULTS, IGNORED_CONSUMER_KEYS
from kafkalite.producer.config import (
    IGNORED_PRODUCER_KEYS,
    PRODUCER_DEFAULTS,
    REFUSED_PRODUCER_KEYS,
)

PAGE = Path(__file__).resolve().parents[2] / "docs" / "migration.md"
BEGIN = "<!-- BEGIN GENERATED API TABLES (python -m tests.migration.api_table) -->"
END = "<!-- END GENERATED API TABLES -->"

MODULES = ["kafka", "kafka.errors", "kafka.admin", "kafka.structs", "kafka.consumer",
           "kafka.producer", "kafka.partitioner", "kafka.serializer",
           "kafka.coordinator.assignors.abstract", "kafka.coordinator.assignors.range",
           "kafka.coordinator.assignors.roundrobin",
           "kafka.coordinator.assignors.sticky.sticky_assignor"]

PUBLIC_NAMES = {
    "kafka.coordinator.assignors.abstract": ["AbstractPartitionAssignor"],
    "kafka.coordinator.assignors.sticky.sticky_assignor": ["StickyPartitionAssignor"],
}
"""Modules without ``__all__`` whose other names are implementation helpers."""

ADMIN_RESULT_DIFFERENCES = {
    "create_acls": "`failed` lists `(acl, error)` pairs; kafka-python 3 lists error classes",
    "create_partitions": "returns None; kafka-python 3 returns its CreatePartitionsResponse "
                         "object",
    "delete_acls": "each filter's matches are `(acl, error or None)` pairs and its error is "
                   "None when it has none; kafka-python 3 gives bare ACLs and `NoError`",
    "describe_acls": "returns `(acls, None)`; kafka-python 3 returns `(acls, NoError)`",
    "describe_configs": "`{ConfigResource: {key: value}}`, every key by default; kafka-python 3 "
                        "returns `{'topic': {name: {key: {'value', 'config_source', ...}}}}` "
                        "with modified keys only",
    "describe_groups": "each description also reads as kafka-python 3's dict; "
                       "`authorized_operations` is None unless asked for (kafka-python 3 "
                       "always asks), and `member_assignment` is kafkalite's "
                       "ConsumerProtocolAssignment (`.partitions`, not `.assigned_partitions`)",
    "describe_topics": "`{name: TopicDescription}`; kafka-python 3 returns a list of Metadata "
                       "topic dicts",
    "elect_leaders": "`{tp: None or error}`; kafka-python 3 returns its ElectLeadersResponse "
                     "object",
    "list_partition_offsets": "OffsetAndTimestamp has no `leader_epoch`, and a timestamp past "
                              "the last record is left out (kafka-python 3 gives offset -1)",
    "list_topics": "returns a set; kafka-python 3 returns a list (`in`, `len` and iterating "
                   "work alike)",
}
"""kafka-python 3 admin methods whose result kafkalite shapes differently, and how. Each is a
documented kafkalite shape older than the kafka-python 3 one, so it stays (a change would
break programs written for kafkalite); every other method returns 3.0's shape."""

CONSUMER_KWARGS = {"consumer_timeout_ms"}
"""Consumer settings kafkalite takes as named constructor arguments rather than config."""


def _public_names(module_name: str) -> list[str]:
    if module_name in PUBLIC_NAMES:
        return PUBLIC_NAMES[module_name]
    module = importlib.import_module(module_name)
    names = getattr(module, "__all__", None)
    if names is None:
        names = [n for n, v in vars(module).items() if not n.startswith("_")
                 and not inspect.ismodule(v)
                 and getattr(v, "__module__", module_name).startswith(module_name)]
    return sorted(set(names))


def _has(module_name: str, name: str) -> bool:
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return False
    return hasattr(module, name)


def names_table() -> list[str]:
    rows = ["| kafka-python module | kafkalite module | supported | not supported |",
            "|---|---|---|---|"]
    for module in MODULES:
        ours = "kafkalite" + module.removeprefix("kafka")
        names = _public_names(module)
        have = [n for n in names if _has(ours, n)]
        missing = [n for n in names if not _has(ours, n)]
        shown = f"all {len(have)}" if not missing else ", ".join(f"`{n}`" for n in have) or "-"
        if module == "kafka.errors":
            shown = f"{len(have)} of {len(names)} error classes"
        rows.append(f"| `{module}` | `{ours}` | {shown} | "
                    f"{', '.join(f'`{n}`' for n in missing) or '-'} |")
    return rows


def _default(value: Any) -> str:
    if isinstance(value, type):
        return value.__name__
    if callable(value) or (isinstance(value, Iterable) and not isinstance(value, str)
                           and not isinstance(value, tuple)):
        return type(value).__name__
    text = repr(value)
    text = re.sub(r" at 0x[0-9a-f]+", "", text)
    return text if len(text) <= 40 else text[:37] + "..."


def _key_status(key: str, accepted: Iterable[str], ignored: dict[str, str]) -> str:
    if key in ignored:
        return f"ignored: {ignored[key]}"
    if key in SECURITY_KEY_NOTES:
        return f"checked: {SECURITY_KEY_NOTES[key]}"
    if key in REFUSED_PRODUCER_KEYS:
        return f"checked: {REFUSED_PRODUCER_KEYS[key]}"
    if key in SECURITY_DEFAULTS:
        return "accepted, unused under PLAINTEXT (TLS/SASL are not supported yet)"
    if key in accepted:
        return "supported"
    return "**not accepted**"


def config_table(title: str, theirs: dict[str, Any], ours: dict[str, Any],
                 ignored: dict[str, str], extra: set[str] = frozenset()) -> list[str]:
    rows = [f"#### {title}", "", "| key | kafka-python default | kafkalite default | status |",
            "|---|---|---|---|"]
    accepted = set(ours) | set(extra)
    for key in sorted(theirs):
        mine = _default(ours[key]) if key in ours else "-"
        rows.append(f"| `{key}` | `{_default(theirs[key])}` | `{mine}` | "
                    f"{_key_status(key, accepted, ignored)} |")
    return [*rows, ""]


def _methods(cls: type) -> dict[str, Callable[..., Any]]:
    return {n: m for n, m in inspect.getmembers(cls)
            if not n.startswith("_") and callable(m) and not isinstance(m, type)}


def _params(func: Callable[..., Any]) -> tuple[list[str], bool]:
    try:
        signature = inspect.signature(func)
    except (TypeError, ValueError):
        return [], True
    names = [p.name for p in signature.parameters.values()
             if p.kind not in (p.VAR_POSITIONAL, p.VAR_KEYWORD) and p.name != "self"]
    flexible = any(p.kind is p.VAR_KEYWORD for p in signature.parameters.values())
    return names, flexible


def methods_table(title: str, theirs: type, ours: type,
                  unsupported: dict[str, str],
                  differences: dict[str, str] | None = None) -> list[str]:
    rows = [f"#### {title}", "", "| method | status |", "|---|---|"]
    mine = _methods(ours)
    for name, func in sorted(_methods(theirs).items()):
        if name in unsupported:
            status = f"not supported yet: {unsupported[name]}"
        elif name not in mine:
            status = "**missing**"
        else:
            wanted, _ = _params(func)
            have, flexible = _params(mine[name])
            absent = [p for p in wanted if p not in have]
            status = "supported" if flexible or not absent else \
                "supported; not accepted: " + ", ".join(f"`{p}`" for p in absent)
            if name in (differences or {}):
                status += f"; result differs: {(differences or {})[name]}"
        rows.append(f"| `{name}` | {status} |")
    return [*rows, ""]


def generate() -> str:
    from kafkalite.admin import AdminClient
    from kafkalite.consumer import Consumer
    from kafkalite.producer import Producer

    admin_unsent = {m: f"raises UnsupportedVersionError naming {api}"
                    for m, api in UNSENT_ADMIN_APIS.items()}
    producer_keys = {**CLIENT_DEFAULTS, **PRODUCER_DEFAULTS}
    consumer_keys = {**CLIENT_DEFAULTS, **CONSUMER_DEFAULTS}
    lines = [
        BEGIN,
        f"Generated from kafka-python {kafka.__version__} and this version of kafkalite.",
        "",
        "### Names",
        "",
        *names_table(),
        "",
        "### Configuration keys",
        "",
        *config_table("Producer", kafka.KafkaProducer.DEFAULT_CONFIG, producer_keys,
                      {**IGNORED_CLIENT_KEYS, **IGNORED_PRODUCER_KEYS}),
        *config_table("Consumer", kafka.KafkaConsumer.DEFAULT_CONFIG, consumer_keys,
                      {**IGNORED_CLIENT_KEYS, **IGNORED_CONSUMER_KEYS}, CONSUMER_KWARGS),
        *config_table("AdminClient", kafka.KafkaAdminClient.DEFAULT_CONFIG,
                      dict(CLIENT_DEFAULTS), dict(IGNORED_CLIENT_KEYS)),
        "### Methods",
        "",
        *methods_table("Producer", kafka.KafkaProducer, Producer, {}),
        *methods_table("Consumer", kafka.KafkaConsumer, Consumer, {}),
        *methods_table("AdminClient", kafka.KafkaAdminClient, AdminClient, admin_unsent,
                      ADMIN_RESULT_DIFFERENCES),
        END,
    ]
    return "\n".join(lines)


def render_page(text: str) -> str:
    """``text`` with its generated part replaced by a fresh one (appended if absent)."""
    fresh = generate()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        tail = rest.split(END, 1)[1]
        return head + fresh + tail
    return text.rstrip("\n") + "\n\n" + fresh + "\n"


def main() -> int:
    PAGE.write_text(render_page(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
