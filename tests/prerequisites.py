"""The programs the test suite drives besides Python packages: installed through apt when
this machine allows it, otherwise named in one message before any test runs.

``tox`` runs this first (``python -m tests.prerequisites``), so that the README's
``pip install tox && tox`` works on a fresh Debian or Ubuntu machine by itself: kcat, a
Java runtime (17 or later, for Spark and ZooKeeper), Debian's ZooKeeper and Chromium are
installed with ``apt-get`` when it runs as root or may use ``sudo`` without a password.
Where it cannot, it stops with one message saying what to install and how, instead of
letting dozens of tests fail one by one. ``KAFKALITE_SKIP_PREREQUISITES=1`` skips the check
(for running a part of the suite that needs none of them, on a machine without apt).
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from tests.cluster.zookeeper_server import ZOOKEEPER_JAR

SKIP_ENV = "KAFKALITE_SKIP_PREREQUISITES"
MIN_JAVA = 17


@dataclass(frozen=True)
class Prerequisite:
    name: str
    needed_for: str
    apt_package: str
    found: Callable[[], bool]


def _program(*names: str) -> Callable[[], bool]:
    return lambda: any(shutil.which(name) for name in names)


def java_major_version() -> int | None:
    """The major version of the ``java`` on PATH (``1.8`` is 8), or None without one."""
    if shutil.which("java") is None:
        return None
    done = subprocess.run(["java", "-version"], capture_output=True, text=True, timeout=60)
    match = re.search(r'version "(\d+)(?:\.(\d+))?', done.stderr + done.stdout)
    if match is None:
        return None
    major, minor = int(match.group(1)), int(match.group(2) or 0)
    return minor if major == 1 else major


PREREQUISITES = (
    Prerequisite("kcat", "the compatibility and command-line tests drive it", "kcat",
                 _program("kcat")),
    Prerequisite(f"Java {MIN_JAVA} or later", "Spark and ZooKeeper run on it",
                 "default-jre-headless", lambda: (java_major_version() or 0) >= MIN_JAVA),
    Prerequisite("ZooKeeper", f"the cluster tests start Debian's ({ZOOKEEPER_JAR})",
                 "zookeeper", ZOOKEEPER_JAR.exists),
    Prerequisite("Chromium", "the web console tests drive it headless", "chromium",
                 _program("chromium", "chromium-browser")),
)


def missing(prerequisites: Sequence[Prerequisite] = PREREQUISITES) -> list[Prerequisite]:
    return [p for p in prerequisites if not p.found()]


def apt_prefix() -> list[str] | None:
    """How this process may run apt-get: directly as root, through ``sudo -n`` when sudo
    needs no password, or not at all (None)."""
    if shutil.which("apt-get") is None:
        return None
    if os.geteuid() == 0:
        return []
    if shutil.which("sudo") and subprocess.run(["sudo", "-n", "true"], capture_output=True,
                                               timeout=60).returncode == 0:
        return ["sudo", "-n", "env", "DEBIAN_FRONTEND=noninteractive"]
    return None


def apt_install(prefix: list[str], packages: list[str]) -> str | None:
    """Runs apt-get update and install; None when both worked, else apt-get's last words."""
    env = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    for command in (["apt-get", "update", "-qq"],
                    ["apt-get", "install", "-y", "-qq", "--no-install-recommends", *packages]):
        done = subprocess.run([*prefix, *command], capture_output=True, text=True, env=env,
                              timeout=1800)
        if done.returncode != 0:
            last = (done.stderr.strip() or done.stdout.strip()).splitlines()[-3:]
            return f"`{' '.join(command)}` failed: " + " / ".join(last)
    return None


def instructions(absent: list[Prerequisite], reason: str) -> str:
    """The one message for a machine that lacks ``absent``: what, why, and how to install."""
    packages = " ".join(p.apt_package for p in absent)
    lines = [f"The tests need programs this machine lacks, and {reason}:"]
    lines += [f"  - {p.name}: {p.needed_for}" for p in absent]
    lines += ["Install them, then run tox again. On Debian or Ubuntu:",
              f"  sudo apt-get install {packages}",
              f"Elsewhere: kcat and Chromium from the package manager, a Java {MIN_JAVA}+ "
              f"runtime, and Apache ZooKeeper's server jar at {ZOOKEEPER_JAR}.",
              f"({SKIP_ENV}=1 skips this check, for a part of the suite that needs none of "
              "them.)"]
    return "\n".join(lines)


def main() -> int:
    if os.environ.get(SKIP_ENV) == "1":
        return 0
    absent = missing()
    if not absent:
        return 0
    prefix = apt_prefix()
    if prefix is None:
        print(instructions(absent, "cannot install them itself (apt-get needs root or sudo "
                                   "without a password)"), file=sys.stderr)
        return 1
    packages = [p.apt_package for p in absent]
    print(f"installing {', '.join(packages)} with apt-get, for the tests ...", file=sys.stderr,
          flush=True)
    failure = apt_install(prefix, packages)
    still_absent = missing(absent)
    if still_absent:
        print(instructions(still_absent, failure or "apt-get did not provide them"),
              file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
