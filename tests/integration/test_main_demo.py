"""The main job (``python -m kafkalite_demo``) end to end on a small clickstream, and its
place: beside the SDK, which never imports the broker."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest

import kafkalite_demo
from kafkalite_demo.report import WIDTH, note_lines

REPO_ROOT = Path(__file__).resolve().parents[2]
PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"


def unwrapped(out: str) -> str:
    """The report with each wrapped note joined again (continuations are indented deeper)."""
    return re.sub(r"\n {6}(?=\S)", " ", out)


def test_demo_survives_a_broker_crash(capsys: pytest.CaptureFixture[str],
                                      tmp_path: Path) -> None:
    picture = tmp_path / "demo.png"
    assert kafkalite_demo.main(["--events", "3000", "--users", "200", "--orders", "3000",
                                "--no-spark", "--plot", str(picture)]) == 0

    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert all(len(line) <= WIDTH for line in lines), max(lines, key=len)
    out = unwrapped(captured.out)
    assert "3 group members read 3,000 of 3,000 records" in out
    killed = int(re.search(r"killed broker (\d) \(leader of orders-0\)", out).group(1))
    before = re.search(r"before: (.*)", out).group(1)
    after = re.search(r"after: (.*)", out).group(1)
    assert before.count("isr [0, 1, 2]") == kafkalite_demo.ORDER_PARTITIONS
    survivors = [b for b in range(3) if b != killed]
    assert after.count(f"isr {survivors}") == kafkalite_demo.ORDER_PARTITIONS
    assert f"p0 {killed}->" in re.search(r"leader moves: (.*)", out).group(1)
    acked = int(re.search(r"([\d,]+) of 3,000 acks=all sends acknowledged", out)
                .group(1).replace(",", ""))
    assert acked > 0
    assert f"{acked:,} of {acked:,} acknowledged at their acknowledged offsets, 0 lost, " \
           "0 duplicates" in out

    report = out[out.index("kafkalite demo report"):]
    assert f"picture: {picture.resolve()} (records per partition;" in report
    assert picture.read_bytes().startswith(PNG_SIGNATURE)
    # stderr is not a terminal here: progress comes as whole lines, never bar debris
    assert "\r" not in captured.err and "\n\n" not in captured.err
    assert re.search(r"^producing: 3,000/3,000 \(100%\)$", captured.err, re.MULTILINE)


def test_the_old_entry_point_still_runs_the_demo_with_a_deprecation_warning() -> None:
    done = subprocess.run([sys.executable, "-m", "kafkalite.demo", "--help"], cwd=REPO_ROOT,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr
    assert "usage: python -m kafkalite_demo" in done.stdout
    assert "DeprecationWarning: python -m kafkalite.demo is deprecated; run python -m " \
           "kafkalite_demo" in done.stderr


def test_report_notes_break_between_list_items_within_the_width() -> None:
    note = "before: " + ", ".join(f"p{p} leader {p % 3} isr [0, 1, 2]" for p in range(6))
    lines = note_lines(note)
    assert lines == [
        "    before: p0 leader 0 isr [0, 1, 2], p1 leader 1 isr [0, 1, 2], p2 leader 2 isr "
        "[0, 1, 2],",
        "      p3 leader 0 isr [0, 1, 2], p4 leader 1 isr [0, 1, 2], p5 leader 2 isr [0, 1, 2]"]
    assert unwrapped("\n".join(lines)) == "    " + note
    unbroken = note_lines("x" * 250)
    assert all(len(line) <= WIDTH for line in unbroken)
    assert "".join(line.strip() for line in unbroken) == "x" * 250
