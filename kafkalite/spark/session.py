"""A local SparkSession whose Python workers can import kafkalite.

Spark starts its Python workers as separate processes with the environment the JVM got, and
with the interpreter named by ``spark.pyspark.python`` / ``PYSPARK_PYTHON`` (else ``python3``
on ``PATH``). Run from a virtualenv's python that was not activated, ``python3`` is another
interpreter without kafkalite; run from a source checkout, no interpreter has it installed.
So this makes the workers use the driver's own interpreter and puts kafkalite's directory on
``PYTHONPATH``, both before the JVM starts.
"""

from __future__ import annotations

import os
import sys
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

import kafkalite
from kafkalite.spark.datasource import register


def local_session(app_name: str = "kafkalite", master: str = "local[2]",
                  config: Mapping[str, str] | None = None) -> SparkSession:
    """``getOrCreate()`` a session with the ``kafkalite`` source registered.

    ``config`` holds extra Spark settings, e.g. ``{"spark.sql.shuffle.partitions": "2"}``;
    a ``spark.pyspark.python`` there (or a ``PYSPARK_PYTHON`` already set) names the
    workers' interpreter instead of this one.
    """
    package_root = str(Path(kafkalite.__file__).resolve().parent.parent)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    worker_python = (config or {}).get("spark.pyspark.python") or \
        os.environ.get("PYSPARK_PYTHON") or sys.executable
    os.environ.setdefault("PYSPARK_PYTHON", worker_python)
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false")
               .config("spark.pyspark.python", worker_python))
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    register(session)
    return session
