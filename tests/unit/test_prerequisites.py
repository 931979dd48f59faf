"""The check tox runs before the suite (tests/prerequisites.py), on a PATH built per test:
nothing on it, or a fake apt-get that "installs" stand-in programs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from tests.cluster.zookeeper_server import ZOOKEEPER_JAR

REPO_ROOT = Path(__file__).resolve().parents[2]

FAKE_APT_GET = """#!/bin/sh
# Records each call; "install" writes a stand-in for each package's program.
echo "$@" >> "{log}"
[ "$1" = install ] || exit 0
for package in "$@"; do
  case "$package" in
    kcat) program=kcat; body='exit 0' ;;
    default-jre-headless) program=java; body='echo "openjdk version \\"17.0.9\\" 2023-10-17" >&2' ;;
    chromium) program=chromium; body='exit 0' ;;
    *) continue ;;
  esac
  printf '#!/bin/sh\\n%s\\n' "$body" > "{bin}/$program"
  /bin/chmod +x "{bin}/$program"
done
"""

FAKE_SUDO = """#!/bin/sh
# Passwordless sudo: drop -n and run the rest.
[ "$1" = -n ] && shift
exec "$@"
"""


def run_check(path: Path, **env: str) -> subprocess.CompletedProcess[str]:
    environment = {key: value for key, value in os.environ.items()
                   if not key.startswith("KAFKALITE_")}
    return subprocess.run([sys.executable, "-m", "tests.prerequisites"], cwd=REPO_ROOT,
                          env={**environment, "PATH": str(path), **env},
                          capture_output=True, text=True, timeout=120)


def write_program(path: Path, text: str) -> None:
    path.write_text(text)
    path.chmod(0o755)


def fake_sudo(bin_dir: Path) -> None:
    """sudo without a password (as a non-root run asks for it), and what it runs."""
    write_program(bin_dir / "sudo", FAKE_SUDO)
    write_program(bin_dir / "true", "#!/bin/sh\nexit 0\n")
    write_program(bin_dir / "env", '#!/bin/sh\nshift\nexec "$@"\n')  # env VAR=x command


def test_without_the_programs_or_apt_it_stops_with_one_message(tmp_path: Path) -> None:
    empty = tmp_path / "bin"
    empty.mkdir()
    done = run_check(empty)
    assert done.returncode == 1
    assert done.stdout == ""
    message = done.stderr
    assert message.startswith("The tests need programs this machine lacks, and cannot "
                              "install them itself (apt-get needs root or sudo without a "
                              "password):\n")
    for named in ("  - kcat: ", "  - Java 17 or later: ", "  - Chromium: "):
        assert named in message
    assert ("  - ZooKeeper: " in message) is not ZOOKEEPER_JAR.exists()
    install = next(line for line in message.splitlines() if "apt-get install" in line)
    assert {"kcat", "default-jre-headless", "chromium"} <= set(install.split())
    assert "Traceback" not in message


def test_an_old_java_counts_as_missing(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_program(bin_dir / "java", '#!/bin/sh\necho \'java version "1.8.0_392"\' >&2\n')
    done = run_check(bin_dir)
    assert done.returncode == 1
    assert "  - Java 17 or later: " in done.stderr


def test_with_apt_it_installs_what_is_missing_and_passes(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    log = tmp_path / "apt.log"
    write_program(bin_dir / "apt-get", FAKE_APT_GET.format(log=log, bin=bin_dir))
    fake_sudo(bin_dir)
    done = run_check(bin_dir)
    assert done.returncode == 0, done.stderr
    calls = log.read_text().splitlines()
    assert calls[0] == "update -qq"
    assert calls[1].startswith("install -y -qq --no-install-recommends ")
    assert {"kcat", "default-jre-headless", "chromium"} <= set(calls[1].split())
    assert (bin_dir / "kcat").exists() and (bin_dir / "chromium").exists()
    assert run_check(bin_dir).returncode == 0  # now present: nothing to install
    assert len(log.read_text().splitlines()) == 2


def test_a_failed_install_names_apt_gets_error(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    write_program(bin_dir / "apt-get", '#!/bin/sh\n[ "$1" = update ] && exit 0\n'
                                       'echo "E: Unable to locate package kcat" >&2\nexit 100\n')
    fake_sudo(bin_dir)
    done = run_check(bin_dir)
    assert done.returncode == 1
    assert "E: Unable to locate package kcat" in done.stderr
    assert "  - kcat: " in done.stderr


def test_the_check_can_be_skipped(tmp_path: Path) -> None:
    assert run_check(tmp_path, KAFKALITE_SKIP_PREREQUISITES="1").returncode == 0
