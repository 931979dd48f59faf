"""A progress bar for long-running commands: ``rich`` when installed, else a plain line.

Drawn on stderr only when it is a terminal, so piped output and ``--json`` stay clean.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

_PLAIN_INTERVAL_S = 1.0


class Progress:
    """``with Progress(total, "producing") as bar: bar.advance(n)``."""

    def __init__(self, total: int, label: str, *, enabled: bool | None = None) -> None:
        self.total = total
        self.label = label
        self.enabled = sys.stderr.isatty() if enabled is None else enabled
        self.done = 0
        self._rich: Any = None
        self._task: Any = None
        self._last_print = 0.0

    def __enter__(self) -> Progress:
        if not self.enabled:
            return self
        try:
            from rich.progress import Progress as RichProgress
        except ImportError:
            return self
        self._rich = RichProgress(transient=True)
        self._rich.start()
        self._task = self._rich.add_task(self.label, total=self.total)
        return self

    def advance(self, count: int = 1) -> None:
        self.done += count
        if not self.enabled:
            return
        if self._rich is not None:
            self._rich.update(self._task, completed=self.done)
            return
        now = time.monotonic()
        if now - self._last_print >= _PLAIN_INTERVAL_S:
            self._last_print = now
            print(f"\r{self.label}: {self.done}/{self.total}", end="", file=sys.stderr,
                  flush=True)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._rich is not None:
            self._rich.stop()
        elif self.enabled and self._last_print:
            print(file=sys.stderr)
