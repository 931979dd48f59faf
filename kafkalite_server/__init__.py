"""kafkalite_server: a pure-Python, Kafka-compatible reference broker."""

from kafkalite_server.embedded import EmbeddedCluster

__all__ = ["EmbeddedCluster"]
