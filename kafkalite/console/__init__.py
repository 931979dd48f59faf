"""``kafkalite console``: a small web console over any Kafka cluster.

It reads the cluster only through the SDK's AdminClient and Consumer (and, when started
with ``--allow-writes``, its Producer), so it works against Kafka itself as well as
kafkalite-server. The pages are plain HTML filled in by one small script from a JSON API;
the charts are drawn as inline SVG, so there is no JavaScript dependency and no build step.
"""

from kafkalite.console.app import create_app
from kafkalite.console.broker_metrics import BrokerMetrics
from kafkalite.console.cluster import ClusterReader

__all__ = ["BrokerMetrics", "ClusterReader", "create_app"]
