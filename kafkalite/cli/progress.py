"""A progress bar for long-running commands: ``rich`` when installed, else a plain line.

Drawn on stderr. A command draws only when stderr is a terminal, so piped output and
``--json`` stay clean. A command whose records go to stdout asks for a bar only when stdout
is *not* the terminal (``kafkalite consume big > dump.txt``): on the terminal the records
themselves show the progress and a bar would be torn up by them. ``total=None`` is a run of
unknown length (lines from stdin, a consumer without ``--max-messages``): the bar then shows
the count.

A caller that wants progress in a log file too (the demo, whose output is often redirected)
passes ``enabled=True``: where stderr is not a terminal, a bar would come out as blank or
garbled lines, so it gets one plain line every few seconds and a last one at the end.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from types import TracebackType
from typing import Any, TextIO

_PLAIN_INTERVAL_S = 1.0
LOG_INTERVAL_S = 5.0
"""How often a progress line is written where stderr is a file or a pipe."""


def stderr_is_terminal() -> bool:
    return sys.stderr.isatty()


def stderr_only_is_terminal() -> bool:
    """A bar for a command that writes records to stdout: stdout redirected, stderr a TTY."""
    return sys.stderr.isatty() and not sys.stdout.isatty()


class Progress:
    """``with Progress(total, "producing") as bar: bar.advance(n)``."""

    def __init__(self, total: int | None, label: str, *, enabled: bool | None = None,
                 stream: TextIO | None = None,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.total = total
        self.label = label
        self.stream = stream or sys.stderr
        self.terminal = self.stream.isatty()
        self.enabled = self.terminal if enabled is None else enabled
        self.done = 0
        self._clock = clock
        self._rich: Any = None
        self._task: Any = None
        self._last_print: float | None = None

    def __enter__(self) -> Progress:
        if not self.enabled:
            return self
        if not self.terminal:
            self._last_print = self._clock()  # the first line comes one interval in
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
        self._rich = RichProgress(*columns, console=Console(file=self.stream), transient=True,
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
        now = self._clock()
        interval = _PLAIN_INTERVAL_S if self.terminal else LOG_INTERVAL_S
        if self._last_print is None or now - self._last_print >= interval:
            self._last_print = now
            if self.terminal:
                print(f"\r{self._line()}", end="", file=self.stream, flush=True)
            else:
                print(self._line(), file=self.stream, flush=True)

    def _line(self) -> str:
        if self.total is None:
            return f"{self.label}: {self.done:,}"
        percent = f" ({100 * self.done // self.total}%)" if self.total else ""
        return f"{self.label}: {self.done:,}/{self.total:,}{percent}"

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        if self._rich is not None:
            self._rich.stop()
        elif self.enabled and not self.terminal:
            print(self._line(), file=self.stream, flush=True)  # where it ended
        elif self.enabled and self._last_print is not None:
            print(file=self.stream)
