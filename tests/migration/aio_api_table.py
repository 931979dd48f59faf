"""The aiokafka tables of docs/migration.md, computed from aiokafka and kafkalite.aio by
introspection: names per module, constructor parameters, public methods.

``python -m tests.migration.aio_api_table`` rewrites the generated part of the page;
``test_aio_api_table.py`` fails when the committed page differs from what this computes.
"""

from __future__ import annotations

import inspect
import sys
from collections.abc import Callable
from typing import Any

import aiokafka

from kafkalite.aio.settings import IGNORED_PARAMETERS
from tests.migration.api_table import PAGE, _default, _has, _methods, _params, _public_names

BEGIN = "<!-- BEGIN GENERATED AIOKAFKA TABLES (python -m tests.migration.aio_api_table) -->"
END = "<!-- END GENERATED AIOKAFKA TABLES -->"
MODULES = ["aiokafka", "aiokafka.errors", "aiokafka.structs", "aiokafka.abc", "aiokafka.admin"]

NOT_YET_SUPPORTED: dict[str, str] = {
    "AIOKafkaClient": "aiokafka's low-level client; kafkalite.aio's own is internal",
}
"""aiokafka names kafkalite.aio does not offer yet, with what to use meanwhile."""

PARAMETER_NOTES: dict[str, str] = {
    "acks": "unset means 1, or all with idempotence, as in aiokafka",
    "partitioner": "a callable (key_bytes, all_partitions, available_partitions), as "
                   "aiokafka's; the default is murmur2 for keys, random without",
    "partition_assignment_strategy": "kafkalite's assignors (classes, instances or names: "
                                     "range, roundrobin, sticky); the default is "
                                     "roundrobin, as aiokafka's",
}
"""What a supported parameter takes where aiokafka's type does not carry over as is."""


def _ours(module: str) -> str:
    return "kafkalite.aio" + module.removeprefix("aiokafka")


def names_table() -> list[str]:
    rows = ["| aiokafka module | kafkalite module | supported | not supported yet |",
            "|---|---|---|---|"]
    for module in MODULES:
        names = _public_names(module)
        have = [n for n in names if _has(_ours(module), n)]
        missing = [n for n in names if not _has(_ours(module), n)]
        shown = f"all {len(have)}" if not missing else ", ".join(f"`{n}`" for n in have)
        if module == "aiokafka.errors":
            shown = f"{len(have)} of {len(names)} error classes"
        absent = ", ".join(f"`{n}` ({NOT_YET_SUPPORTED.get(n, 'missing')})" for n in missing)
        rows.append(f"| `{module}` | `{_ours(module)}` | {shown} | {absent or '-'} |")
    return rows


def _defaults(func: Callable[..., Any]) -> dict[str, Any]:
    return {p.name: p.default for p in inspect.signature(func).parameters.values()
            if p.kind is p.KEYWORD_ONLY}


def _shown(value: Any) -> str:
    """A default as the table shows it; a bare ``object()`` is an "unset" sentinel."""
    return "unset" if type(value) is object else _default(value)


def parameters_table(title: str, theirs: type, ours: type) -> list[str]:
    rows = [f"#### {title}", "", "| parameter | aiokafka default | kafkalite default | status |",
            "|---|---|---|---|"]
    mine = _defaults(ours.__init__)  # type: ignore[misc]
    for name, default in sorted(_defaults(theirs.__init__).items()):  # type: ignore[misc]
        if name in IGNORED_PARAMETERS:
            status = f"ignored: {IGNORED_PARAMETERS[name]}"
        elif name in mine:
            status = "supported" + (f": {PARAMETER_NOTES[name]}" if name in PARAMETER_NOTES
                                    else "")
        else:
            status = "**not accepted**"
        ours_default = f"`{_shown(mine[name])}`" if name in mine else "-"
        rows.append(f"| `{name}` | `{_shown(default)}` | {ours_default} | {status} |")
    return [*rows, ""]


def methods_table(title: str, theirs: type, ours: type) -> list[str]:
    rows = [f"#### {title}", "", "| method | status |", "|---|---|"]
    mine = _methods(ours)
    for name, func in sorted(_methods(theirs).items()):
        if name not in mine:
            status = "**not supported yet**"
        else:
            wanted, _ = _params(func)
            have, flexible = _params(mine[name])
            absent = [p for p in wanted if p not in have]
            status = "supported" if flexible or not absent else \
                "supported; not accepted: " + ", ".join(f"`{p}`" for p in absent)
        rows.append(f"| `{name}` | {status} |")
    return [*rows, ""]


def generate() -> str:
    from aiokafka.admin import AIOKafkaAdminClient as TheirAdmin

    from kafkalite.aio import AIOKafkaConsumer, AIOKafkaProducer
    from kafkalite.aio.admin import AIOKafkaAdminClient

    lines = [
        BEGIN,
        f"Generated from aiokafka {aiokafka.__version__} and this version of kafkalite.",
        "",
        "### aiokafka names",
        "",
        *names_table(),
        "",
        "### aiokafka parameters",
        "",
        *parameters_table("AIOKafkaProducer", aiokafka.AIOKafkaProducer, AIOKafkaProducer),
        *parameters_table("AIOKafkaConsumer", aiokafka.AIOKafkaConsumer, AIOKafkaConsumer),
        *parameters_table("AIOKafkaAdminClient", TheirAdmin, AIOKafkaAdminClient),
        "### aiokafka methods",
        "",
        *methods_table("AIOKafkaProducer", aiokafka.AIOKafkaProducer, AIOKafkaProducer),
        *methods_table("AIOKafkaConsumer", aiokafka.AIOKafkaConsumer, AIOKafkaConsumer),
        *methods_table("AIOKafkaAdminClient", TheirAdmin, AIOKafkaAdminClient),
        END,
    ]
    return "\n".join(lines)


def render_page(text: str) -> str:
    """``text`` with its generated aiokafka part replaced by a fresh one (appended if
    absent)."""
    fresh = generate()
    if BEGIN in text and END in text:
        head, rest = text.split(BEGIN, 1)
        return head + fresh + rest.split(END, 1)[1]
    return text.rstrip("\n") + "\n\n" + fresh + "\n"


def main() -> int:
    PAGE.write_text(render_page(PAGE.read_text(encoding="utf-8")), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
