"""kafka-python's ``RoundRobinPartitionAssignor`` is kafkalite's :class:`RoundRobinAssignor`."""

from kafkalite.consumer.assignors import RoundRobinAssignor as RoundRobinPartitionAssignor

__all__ = ["RoundRobinPartitionAssignor"]
