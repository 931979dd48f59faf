"""kafka-python's ``AbstractPartitionAssignor`` is kafkalite's :class:`Assignor`."""

from kafkalite.consumer.assignors import Assignor as AbstractPartitionAssignor

__all__ = ["AbstractPartitionAssignor"]
