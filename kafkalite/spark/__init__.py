"""PySpark integration: the ``kafkalite`` data source and consumer-group members in executors.

>>> import kafkalite.spark
>>> kafkalite.spark.register(spark)
>>> df = (spark.read.format("kafkalite")
...       .option("kafka.bootstrap.servers", "localhost:9092")
...       .option("subscribe", "events").load())

Needs ``pip install 'kafkalite[spark]'`` (pyspark >= 4.0 with pyarrow); see docs/spark.md.
"""

try:
    import pyarrow  # noqa: F401
    import pyspark  # noqa: F401
except ImportError as exc:  # say how to get them rather than which module is missing
    raise ImportError(f"kafkalite.spark needs pyspark and pyarrow ({exc}); install them with "
                      "pip install 'kafkalite[spark]'", name=exc.name) from exc

from typing import TYPE_CHECKING, Any

from kafkalite.spark.datasource import KafkaliteDataSource, register
from kafkalite.spark.kafka_access import DataLossError
from kafkalite.spark.session import local_session

if TYPE_CHECKING:
    from kafkalite.spark.demo import demo_job
    from kafkalite.spark.group_consumers import MemberStats, run_group_consumers

_LAZY = {"demo_job": "kafkalite.spark.demo", "MemberStats": "kafkalite.spark.group_consumers",
         "run_group_consumers": "kafkalite.spark.group_consumers"}
"""Imported on first use: every Python process Spark starts for the data source (schema,
planning, each executor worker) imports this package, and these pull in the consumer-group
machinery the source never uses (about 0.16 s of imports per process)."""


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        value = getattr(importlib.import_module(_LAZY[name]), name)
        globals()[name] = value
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")

__all__ = [
    "DataLossError",
    "KafkaliteDataSource",
    "MemberStats",
    "demo_job",
    "local_session",
    "register",
    "run_group_consumers",
]
