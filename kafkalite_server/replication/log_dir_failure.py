"""How a broker tells the controller that one of its log directories failed.

It is Kafka's ``/log_dir_event_notification`` node in the coordination store
(``cluster/partition_states.py`` writes it off the event loop); the controller then asks
the broker which replicas it lost and moves their leadership away where another replica
may lead (a standalone broker's partitions have no other replica: they stay offline).
"""

from __future__ import annotations

from typing import Protocol


class LogDirFailureReporter(Protocol):
    async def log_dir_failed(self) -> None:
        """Tells the controller; returns once it is written (or raises)."""

