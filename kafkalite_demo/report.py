"""The demo's report: each step, its time, and what it found, in lines a terminal or a
log viewer shows whole (at most :data:`WIDTH` characters)."""

from __future__ import annotations

import textwrap
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field

WIDTH = 100
NOTE_INDENT = " " * 4
CONTINUATION_INDENT = " " * 6
"""A wrapped note goes on two spaces deeper, so a reader (or a test) can join it again."""


def note_lines(note: str) -> list[str]:
    """One note wrapped to :data:`WIDTH`, breaking between the items of its lists
    (``p0 leader 0 isr [0, 1, 2], p1 ...``) rather than inside one; an item too long for a
    line of its own breaks between words."""
    packed: list[str] = []
    line = NOTE_INDENT
    for item in _items(note):
        if line.strip() and len(line) + len(item.rstrip()) > WIDTH:
            packed.append(line.rstrip())
            line = CONTINUATION_INDENT
        line += item
    packed.append(line.rstrip())
    return [short for line in packed for short in (
        textwrap.wrap(line, WIDTH, subsequent_indent=CONTINUATION_INDENT,
                      break_on_hyphens=False) if len(line) > WIDTH else [line])]


def _items(text: str) -> list[str]:
    """``text`` cut after each ``", "`` or ``"; "`` outside brackets (each piece keeps its
    separator), so ``[0, 1, 2]`` stays whole."""
    items, depth, start = [], 0, 0
    for i, char in enumerate(text):
        depth += (char in "([{") - (char in ")]}")
        if depth == 0 and char in ",;" and text[i + 1:i + 2] == " ":
            items.append(text[start:i + 2])
            start = i + 2
    items.append(text[start:])
    return items


@dataclass
class Step:
    name: str
    seconds: float
    notes: list[str]


@dataclass
class Report:
    """What each step did and how long it took; each step prints its notes as it ends,
    and :meth:`print` shows them all again as a table with the notes under each row."""

    steps: list[Step] = field(default_factory=list)

    @contextmanager
    def step(self, name: str) -> Iterator[list[str]]:
        notes: list[str] = []
        print(f"==> {name}", flush=True)
        started = time.perf_counter()
        try:
            yield notes
        finally:
            elapsed = time.perf_counter() - started
            for note in notes:
                print("\n".join(note_lines(note)), flush=True)
            self.steps.append(Step(name, elapsed, notes))

    def lines(self) -> list[str]:
        out = ["", "kafkalite demo report", "-" * WIDTH]
        for step in self.steps:
            out.append(f"{step.name:<{WIDTH - 12}}{step.seconds:10.2f} s")
            for note in step.notes:
                out.extend(note_lines(note))
        return out

    def print(self) -> None:
        print("\n".join(self.lines()), flush=True)
