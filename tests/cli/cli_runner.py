"""Runs the ``kafkalite`` CLI in a subprocess, as a user's shell would."""

from __future__ import annotations

import os
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[2]


@dataclass
class CliResult:
    returncode: int
    stdout: str
    stderr: str


class Cli:
    """Runs ``python -m kafkalite.cli`` against one broker, as a user's shell would."""

    def __init__(self, bootstrap_servers: str) -> None:
        self.bootstrap_servers = bootstrap_servers

    def command(self, *args: str, bootstrap: str | None = None
                ) -> tuple[list[str], dict[str, str]]:
        """The argv and environment that run ``kafkalite ARGS`` against this broker."""
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT),
               "KAFKALITE_BOOTSTRAP_SERVERS": bootstrap or self.bootstrap_servers}
        env.pop("KAFKALITE_DEBUG", None)
        return [sys.executable, "-m", "kafkalite.cli", *args], env

    def __call__(self, *args: str, input: str | None = None, timeout: float = 60,
                 bootstrap: str | None = None) -> CliResult:
        argv, env = self.command(*args, bootstrap=bootstrap)
        done = subprocess.run(argv, input=input, capture_output=True, text=True,
                              timeout=timeout, env=env)
        return CliResult(done.returncode, done.stdout, done.stderr)

    def ok(self, *args: str, input: str | None = None) -> str:
        """stdout of a command that must succeed (its stderr in the assertion message)."""
        result = self(*args, input=input)
        assert result.returncode == 0, result.stderr
        return result.stdout
