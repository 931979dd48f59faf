"""What ``import kafkalite.spark`` and ``local_session`` do for a new user's environment."""

from __future__ import annotations

import os
import subprocess
import sys

from pyspark.sql import SparkSession

from tests.conftest import REPO_ROOT

BLOCKED = """
import sys
sys.modules[{module!r}] = None  # as if it were not installed
try:
    import kafkalite.spark
except ImportError as exc:
    print(exc)
"""


def test_import_without_pyspark_says_how_to_install_it() -> None:
    for module in ("pyspark", "pyarrow"):
        env = {**os.environ, "PYTHONPATH": str(REPO_ROOT)}
        out = subprocess.run([sys.executable, "-c", BLOCKED.format(module=module)], env=env,
                             capture_output=True, text=True, check=True).stdout
        assert "pip install 'kafkalite[spark]'" in out, out


def test_workers_run_the_drivers_interpreter(spark: SparkSession) -> None:
    # A venv's python that was not activated is not the python3 on PATH: the workers must
    # be told to use this one, or they do not find kafkalite.
    assert spark.conf.get("spark.pyspark.python") == sys.executable
    assert os.environ["PYSPARK_PYTHON"] == sys.executable
    found = spark.sparkContext.parallelize([0], 1).map(
        lambda _: __import__("sys").executable).collect()
    assert found == [sys.executable]
