"""A local SparkSession whose Python workers can import kafkalite.

Spark starts its Python workers as separate processes with the environment the JVM got; when
kafkalite runs from a source checkout rather than an installed wheel, those workers would not
find it. This puts kafkalite's directory on ``PYTHONPATH`` before the JVM starts.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path

from pyspark.sql import SparkSession

import kafkalite
from kafkalite.spark.datasource import register


def local_session(app_name: str = "kafkalite", master: str = "local[2]",
                  config: Mapping[str, str] | None = None) -> SparkSession:
    """``getOrCreate()`` a session with the ``kafkalite`` source registered.

    ``config`` holds extra Spark settings, e.g. ``{"spark.sql.shuffle.partitions": "2"}``.
    """
    package_root = str(Path(kafkalite.__file__).resolve().parent.parent)
    paths = [p for p in os.environ.get("PYTHONPATH", "").split(os.pathsep) if p]
    if package_root not in paths:
        os.environ["PYTHONPATH"] = os.pathsep.join([package_root, *paths])
    builder = (SparkSession.builder.master(master).appName(app_name)
               .config("spark.ui.enabled", "false"))
    for key, value in (config or {}).items():
        builder = builder.config(key, value)
    session = builder.getOrCreate()
    register(session)
    return session
