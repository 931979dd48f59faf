"""kafka-python's ``StickyPartitionAssignor`` is kafkalite's :class:`StickyAssignor`."""

from kafkalite.consumer.assignors import StickyAssignor as StickyPartitionAssignor

__all__ = ["StickyPartitionAssignor"]
