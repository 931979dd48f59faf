"""The main job (``python -m kafkalite_demo``, ``tox -e demo``): a replicated cluster, a
clickstream, a consumer group, Spark and a broker killed, end to end (see
:mod:`kafkalite_demo.main`).

The demo uses both the SDK and the broker, so it lives beside them in its own package: the
SDK (``kafkalite``) never imports the broker.
"""

from __future__ import annotations

from kafkalite_demo.crash import ORDER_PARTITIONS
from kafkalite_demo.main import main

__all__ = ["ORDER_PARTITIONS", "main"]
