"""The performance page's figures are written by the benchmarks themselves.

``tox -e bench`` runs every benchmark with ``--write-docs``; a benchmark that lacks the flag,
or a page that lacks its markers, would only fail at the end of a long run, so both are
checked here, and the block replacement itself on a scratch page.
"""

from __future__ import annotations

import configparser
import subprocess
import sys
from pathlib import Path

import pytest

from benchmarks import report

REPO = Path(__file__).resolve().parents[2]


def bench_commands() -> list[list[str]]:
    tox = configparser.ConfigParser()
    tox.read(REPO / "tox.ini")
    lines = tox["testenv:bench"]["commands"].strip().splitlines()
    return [line.split() for line in lines]


def test_every_bench_command_writes_its_block() -> None:
    commands = bench_commands()
    assert len(commands) >= 10
    page = report.PERFORMANCE.read_text()
    for command in commands:
        assert command[:2] == ["python", "-m"] and report.WRITE_DOCS in command, command
        module = command[2]
        assert f"<!-- {module}: begin -->" in page and f"<!-- {module}: end -->" in page, module
        help_text = subprocess.run([sys.executable, "-m", module, "--help"], cwd=REPO,
                                   capture_output=True, text=True, timeout=120, check=True)
        assert report.WRITE_DOCS in help_text.stdout, module


def test_a_block_is_replaced_and_the_rest_of_the_page_kept(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("intro\n<!-- b.x: begin -->\nold\n<!-- b.x: end -->\noutro\n")
    report.replace_between_markers(page, "b.x", "new figures\n")
    assert page.read_text() == "intro\n<!-- b.x: begin -->\nnew figures\n<!-- b.x: end -->\noutro\n"
    with pytest.raises(SystemExit, match=r"b\.y"):
        report.replace_between_markers(page, "b.y", "anything")


def test_documented_writes_what_was_printed_and_nothing_on_failure(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    page = tmp_path / "performance.md"
    page.write_text("<!-- benchmarks.demo: begin -->\n<!-- benchmarks.demo: end -->\n")
    monkeypatch.setattr(report, "PERFORMANCE", page)
    with report.documented("benchmarks.demo", True, ["--records", "5", "--write-docs"]):
        print("case one  12 rec/s")
    written = page.read_text()
    assert "`python -m benchmarks.demo --records 5`" in written
    assert "```\ncase one  12 rec/s\n```" in written
    assert "case one  12 rec/s" in capsys.readouterr().out

    with pytest.raises(RuntimeError), report.documented("benchmarks.demo", True, []):
        print("half a run")
        raise RuntimeError("the broker died")
    assert page.read_text() == written


def test_a_part_run_on_its_own_writes_its_own_block(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    page = tmp_path / "performance.md"
    page.write_text("<!-- benchmarks.demo: begin -->\nfull\n<!-- benchmarks.demo: end -->\n"
                    "<!-- benchmarks.demo.part: begin -->\n<!-- benchmarks.demo.part: end -->\n")
    monkeypatch.setattr(report, "PERFORMANCE", page)
    with report.documented("benchmarks.demo", True, ["--part"], block="benchmarks.demo.part"):
        print("part  3 rec/s")
    written = page.read_text()
    assert "<!-- benchmarks.demo: begin -->\nfull\n<!-- benchmarks.demo: end -->" in written
    assert "`python -m benchmarks.demo --part`" in written.split("demo.part: begin")[1]
