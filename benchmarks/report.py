"""Benchmark output written into the docs by the benchmark itself.

A figure in ``docs/performance.md`` must be what a benchmark printed, not a number copied
by hand. Each benchmark takes ``--write-docs``: it then tees what it prints while measuring
and, when it ends, replaces the block between its markers in the page
(``<!-- benchmarks.NAME: begin -->`` ... ``<!-- benchmarks.NAME: end -->``) with that output,
headed by the command that produced it, the date and the machine (cores, Python, peer
library versions, load average when it started). ``tox -e bench`` passes the flag, so one
run of it regenerates every block.
"""

from __future__ import annotations

import argparse
import contextlib
import datetime
import io
import os
import platform
import sys
from collections.abc import Iterator
from importlib import metadata
from pathlib import Path

DOCS = Path(__file__).resolve().parent.parent / "docs"
PERFORMANCE = DOCS / "performance.md"
PEERS = ("confluent-kafka", "kafka-python", "pyarrow", "pyspark")
WRITE_DOCS = "--write-docs"


def add_write_docs(parser: argparse.ArgumentParser) -> None:
    """The ``--write-docs`` flag, the same in every benchmark."""
    parser.add_argument(WRITE_DOCS, action="store_true",
                        help="also write the output into docs/performance.md between this "
                             "benchmark's markers")


def replace_between_markers(page: Path, name: str, block: str) -> None:
    """Put ``block`` between the ``name`` markers of ``page``; the markers must exist, so a
    renamed section fails loudly instead of silently appending."""
    begin, end = f"<!-- {name}: begin -->", f"<!-- {name}: end -->"
    text = page.read_text()
    if begin not in text or end not in text:
        raise SystemExit(f"{page.name} has no {begin} ... {end} markers")
    head, rest = text.split(begin, 1)
    tail = rest.split(end, 1)[1]
    page.write_text(f"{head}{begin}\n{block.strip()}\n{end}{tail}")


def machine_line() -> str:
    """Cores, Python and the peer libraries' versions: what a reader needs to weigh a figure."""
    versions = []
    for package in PEERS:
        with contextlib.suppress(metadata.PackageNotFoundError):
            versions.append(f"{package} {metadata.version(package)}")
    load = os.getloadavg()[0]
    return (f"{os.cpu_count()} cores, Python {platform.python_version()}, "
            f"{', '.join(versions)}; load average {load:.2f} at the start")


class _Tee(io.TextIOBase):
    """Writes through to the real stdout and keeps a copy."""

    def __init__(self, target: io.TextIOBase) -> None:
        self.target = target
        self.copy = io.StringIO()

    def write(self, text: str) -> int:
        self.copy.write(text)
        return self.target.write(text)

    def flush(self) -> None:
        self.target.flush()


@contextlib.contextmanager
def documented(module: str, enabled: bool, argv: list[str] | None = None,
               block: str | None = None) -> Iterator[None]:
    """Run the body; with ``enabled``, write what it printed into the performance page.

    ``module`` is the benchmark's module name (``benchmarks.bulk``), which names both the
    command in the block's heading and its markers; ``block`` names other markers, for a
    part of a benchmark that is run on its own. Nothing is written if the body raises, so
    a failed run never replaces good figures.
    """
    if not enabled:
        yield
        return
    args = [arg for arg in (sys.argv[1:] if argv is None else argv) if arg != WRITE_DOCS]
    heading = (f"`python -m {module}{''.join(' ' + arg for arg in args)}`, "
               f"{datetime.date.today().isoformat()}, {machine_line()}:")
    tee = _Tee(sys.stdout)  # type: ignore[arg-type]
    with contextlib.redirect_stdout(tee):  # type: ignore[type-var]
        yield
    output = tee.copy.getvalue().rstrip()
    replace_between_markers(PERFORMANCE, block or module,
                            f"{heading}\n\n```\n{output}\n```")
