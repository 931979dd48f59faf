"""How a broker tells the controller that one of its log directories failed.

In a ZooKeeper cluster this is Kafka's ``/log_dir_event_notification`` node
(``cluster/partition_states.py`` writes it off the event loop); the controller then asks
the broker which replicas it lost and moves their leadership away. A standalone broker
has no other broker to move anything to.
"""

from __future__ import annotations

from typing import Protocol


class LogDirFailureReporter(Protocol):
    async def log_dir_failed(self) -> None:
        """Tells the controller; returns once it is written (or raises)."""


class NoLogDirFailureReporter:
    async def log_dir_failed(self) -> None:
        """A standalone broker's partitions have nowhere else to go."""
