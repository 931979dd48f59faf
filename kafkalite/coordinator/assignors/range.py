"""kafka-python's ``RangePartitionAssignor`` is kafkalite's :class:`RangeAssignor`."""

from kafkalite.consumer.assignors import RangeAssignor as RangePartitionAssignor

__all__ = ["RangePartitionAssignor"]
