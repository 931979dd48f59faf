"""``pip install kafkalite`` works on a machine without a C compiler.

The wheel is built as pip builds it (an isolated build with hatchling), with ``CC`` naming a
compiler that does not exist: the build must still succeed, as a pure-Python wheel without
the accelerator, and the installed package must encode and decode records with the Python
codec.
"""

from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]

pytestmark = pytest.mark.slow

ROUND_TRIP = """
from kafkalite.records import accelerator
from kafkalite.records.builder import BatchBuilder
from kafkalite.records.reader import decode_batches
assert not accelerator.ENABLED, "the accelerator is in a wheel built without a compiler"
builder = BatchBuilder(2, "lz4")
for i in range(100):
    assert builder.append(1, None, b"value-%d" % i)
records = [r.value for r in decode_batches(builder.build())]
assert records == [b"value-%d" % i for i in range(100)], records
print("pure-python codec ok")
"""


def test_a_wheel_builds_and_runs_without_a_compiler(tmp_path: Path) -> None:
    env = {**os.environ, "CC": str(tmp_path / "no-such-compiler")}
    env.pop("KAFKALITE_NO_SPEEDUPS", None)
    build = subprocess.run(
        [sys.executable, "-m", "pip", "wheel", "--no-deps", "-v", "-w", str(tmp_path / "dist"),
         str(REPO)], env=env, capture_output=True, text=True, timeout=300)
    assert build.returncode == 0, build.stderr[-3000:]
    assert "the record-codec accelerator is not built" in build.stdout + build.stderr
    (wheel,) = (tmp_path / "dist").glob("kafkalite-*.whl")
    assert wheel.name.endswith("-py3-none-any.whl"), wheel.name
    with zipfile.ZipFile(wheel) as archive:
        assert not [n for n in archive.namelist() if "_speedups" in n and not n.endswith(".c")]

    site = tmp_path / "site"
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "-q", "--target",
                    str(site), str(wheel)], check=True, timeout=300)
    run = subprocess.run([sys.executable, "-c", ROUND_TRIP], cwd=tmp_path, capture_output=True,
                         text=True, timeout=120,
                         env={**os.environ, "PYTHONPATH": str(site)})
    assert run.returncode == 0, run.stderr[-3000:]
    assert "pure-python codec ok" in run.stdout
