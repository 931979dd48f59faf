"""Progress bars on long produce and consume runs: drawn on a terminal, never in a pipe."""

from __future__ import annotations

import os
import pty
import subprocess
import threading
from pathlib import Path

import pytest
from cli_runner import Cli

pytest.importorskip("rich")


def run_with_terminal_stderr(cli: Cli, *args: str) -> tuple[int, bytes, str]:
    """Run the CLI with stderr on a pseudo-terminal and stdout on a pipe (``> file``)."""
    argv, env = cli.command(*args)
    controller, terminal = pty.openpty()
    process = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE,
                               stderr=terminal, env={**env, "TERM": "xterm", "COLUMNS": "100"})
    os.close(terminal)
    drawn: list[bytes] = []

    def drain() -> None:
        while True:
            try:
                chunk = os.read(controller, 65536)
            except OSError:  # EIO: the child closed its end
                return
            if not chunk:
                return
            drawn.append(chunk)

    reader = threading.Thread(target=drain, daemon=True)
    reader.start()
    stdout, _ = process.communicate(timeout=120)
    reader.join(10)
    os.close(controller)
    return process.returncode, stdout, b"".join(drawn).decode(errors="replace")


def test_bars_on_a_terminal_and_output_intact_in_the_pipe(cli: Cli, topic: str,
                                                          tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"line-{n}\n" for n in range(20_000)))
    code, _, terminal = run_with_terminal_stderr(cli, "produce", topic, "--file", str(lines))
    assert code == 0, terminal
    assert "producing" in terminal

    code, stdout, terminal = run_with_terminal_stderr(
        cli, "consume", topic, "--from-beginning", "--max-messages", "20000")
    assert code == 0, terminal
    assert "consuming" in terminal
    assert stdout.decode().splitlines() == [f"line-{n}" for n in range(20_000)]
    assert "Processed a total of 20000 messages" in terminal


def test_no_bar_when_stderr_is_a_pipe(cli: Cli, topic: str, tmp_path: Path) -> None:
    lines = tmp_path / "lines.txt"
    lines.write_text("".join(f"v{n}\n" for n in range(2000)))
    produced = cli("produce", topic, "--file", str(lines))
    assert produced.returncode == 0 and produced.stderr == ""
    consumed = cli("consume", topic, "--from-beginning", "--max-messages", "2000")
    assert consumed.stderr.strip() == "Processed a total of 2000 messages"
    assert len(consumed.stdout.splitlines()) == 2000
