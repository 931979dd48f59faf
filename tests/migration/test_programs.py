"""kafka-python programs run twice against a kafkalite-server: as written (with kafka-python)
and after the import rewrite (with kafkalite). Both runs must succeed and report the same
observable results (records read, offsets, partitions, committed positions, typed errors).

Each program is a script under ``programs/`` taking ``bootstrap prefix`` and printing one
``RESULT <json>`` line; the prefix keeps the two runs' topics and groups apart.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from kafkalite_server import EmbeddedCluster
from tests.conftest import TEST_BROKER_CONFIG
from tests.migration.rewrite import rewrite_imports

PROGRAMS = Path(__file__).resolve().parent / "programs"
ROOT = Path(__file__).resolve().parents[2]
RUN_TIMEOUT = 120


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(1, config=TEST_BROKER_CONFIG).start()
    yield cluster
    cluster.stop()


def run_program(path: Path, bootstrap: str, prefix: str) -> dict[str, Any]:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        [str(ROOT), os.environ.get("PYTHONPATH", "")])}
    done = subprocess.run([sys.executable, str(path), bootstrap, prefix], capture_output=True,
                          text=True, timeout=RUN_TIMEOUT, env=env, cwd=path.parent)
    lines = [line for line in done.stdout.splitlines() if line.startswith("RESULT ")]
    assert done.returncode == 0 and lines, (
        f"{path.name} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    result: dict[str, Any] = json.loads(lines[-1].removeprefix("RESULT "))
    return result


def test_rewrite_touches_only_imports() -> None:
    source = ("import kafka\nfrom kafka import KafkaProducer\nfrom kafka.errors import X\n"
              "    from kafka.admin import NewTopic\nkafka_topic = 'kafka'\n"
              "import kafkaesque\n")
    assert rewrite_imports(source) == (
        "import kafkalite as kafka\nfrom kafkalite import KafkaProducer\n"
        "from kafkalite.errors import X\n    from kafkalite.admin import NewTopic\n"
        "kafka_topic = 'kafka'\nimport kafkaesque\n")


@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("*.py")))
def test_program_runs_the_same_after_the_rewrite(program: str, broker: EmbeddedCluster,
                                                 tmp_path: Path) -> None:
    original = PROGRAMS / program
    source = original.read_text(encoding="utf-8")
    rewritten = tmp_path / program
    rewritten.write_text(rewrite_imports(source), encoding="utf-8")
    assert "from kafka " in source or "from kafka." in source
    assert "from kafka " not in rewritten.read_text() and \
        "from kafka." not in rewritten.read_text()

    stem = program.removesuffix(".py").replace("_", "-")
    expected = run_program(original, broker.bootstrap_servers, f"kp-{stem}")
    migrated = run_program(rewritten, broker.bootstrap_servers, f"kl-{stem}")
    assert migrated == expected
