"""A progress bar for long-running commands: ``rich`` when installed, else a plain line.

Drawn on stderr, and only when stderr is a terminal, so piped output and ``--json`` stay
clean. A command whose records go to stdout asks for a bar only when stdout is *not* the
terminal (``kafkalite consume big > dump.txt``): on the terminal the records themselves show
the progress and a bar would be torn up by them. ``total=None`` is a run of unknown length
(lines from stdin, a consumer without ``--max-messages``): the bar then shows the count.
"""

from __future__ import annotations

import sys
import time
from types import TracebackType
from typing import Any

_PLAIN_INTERVAL_S = 1.0


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def stderr_only_is_terminal() -> bool:
    """A bar for a command that writes records to stdout: stdout redirected, stderr a TTY."""
    return sys.stderr.isatty() and not sys.stdout.isatty()


class Progress:
    """``with Progress(total, "producing") as bar: bar.advance(n)``."""

    def __init__(self, total: int | None, label: str, *, enabled: bool | None = None) -> None:
        self.total = total
        self.label = label
        self.enabled = stderr_is_terminal() if enabled is None else enabled
        self.done = 0
        self._rich: Any = None
        self._task: Any = None
        self._last_print = 0.0

    def __enter__(self) -> Progress:
        if not self.enabled:
            return self
        try:
            from rich.console import Console
            from rich.progress import MofNCompleteColumn, TimeElapsedColumn
            from rich.progress import Progress as RichProgress
        except ImportError:
            return self
        columns = [*RichProgress.get_default_columns(), MofNCompleteColumn(),
                   TimeElapsedColumn()]
        # stdout belongs to the command's output: the bar neither draws on it nor wraps it.
        self._rich = RichProgress(*columns, console=Console(stderr=True), transient=True,
                                  redirect_stdout=False, redirect_stderr=False)
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
            of_total = "" if self.total is None else f"/{self.total}"
            print(f"\r{self.label}: {self.done}{of_total}", end="", file=sys.stderr,
                  flush=True)

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._rich is not None:
            self._rich.stop()
        elif self.enabled and self._last_print:
            print(file=sys.stderr)
