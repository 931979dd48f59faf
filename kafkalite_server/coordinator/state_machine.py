"""What a coordinator implements to sit on :class:`~.runtime.CoordinatorRuntime`.

A coordinator is a sans-IO state machine over the keys of its internal topic's partitions.
It decides; the runtime does the I/O around it. The contract, in full:

- It reads :class:`~.ownership.Ownership` (given to it at construction) to answer
  NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS, and never changes it.
- It writes through :meth:`~.runtime.CoordinatorRuntime.append` while it decides (an
  append is in the leader's log when the call returns, so the change it stands for may be
  applied in memory at once), and the request that caused the write awaits
  :meth:`~.runtime.CoordinatorRuntime.committed` before it is answered.
- Several coordinators may share one topic (``__consumer_offsets`` holds classic, consumer
  and share groups): :class:`StateMachines` gives each of them every record, and each keeps
  the record types it knows.
- It implements :class:`CoordinatorStateMachine` below: the runtime calls
  :meth:`~CoordinatorStateMachine.loader` when this broker becomes a partition's leader,
  feeds the loader the partition's records oldest first, a chunk at a time, between
  which other requests run, and calls :meth:`~PartitionLoader.complete` at the end (the
  partition is owned by then); :meth:`~CoordinatorStateMachine.unload` when leadership
  moves away or a load fails; :meth:`~CoordinatorStateMachine.topics_deleted` when
  topics are gone.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from kafkalite.records import Record


class PartitionLoader(Protocol):
    """Replays one partition's log into the state machine."""

    def load(self, records: Sequence[Record]) -> None:
        """The next records of the log (whole batches, control batches included)."""

    def complete(self) -> None:
        """The log is replayed: install what it holds. The partition is owned already."""


class CoordinatorStateMachine(Protocol):
    def loader(self, partition: int) -> PartitionLoader:
        """This broker leads ``partition`` now; its keys answer LOAD_IN_PROGRESS until the
        loader completes."""

    def unload(self, partition: int) -> None:
        """Forget ``partition``'s keys (answer anything parked on them NOT_COORDINATOR)."""

    def topics_deleted(self, deleted: Callable[[str], bool], partition: int | None) -> None:
        """Topics for which ``deleted`` is true are gone: drop what refers to them, in the
        owned partitions (only ``partition`` when given: one just loaded)."""


class StateMachines:
    """Coordinators sharing one topic, served as one: each loads, unloads and forgets
    deleted topics on its own."""

    def __init__(self, *machines: CoordinatorStateMachine) -> None:
        self.machines = machines

    def loader(self, partition: int) -> PartitionLoader:
        return _Loaders([machine.loader(partition) for machine in self.machines])

    def unload(self, partition: int) -> None:
        for machine in self.machines:
            machine.unload(partition)

    def topics_deleted(self, deleted: Callable[[str], bool], partition: int | None) -> None:
        for machine in self.machines:
            machine.topics_deleted(deleted, partition)


class _Loaders:
    def __init__(self, loaders: list[PartitionLoader]) -> None:
        self._loaders = loaders

    def load(self, records: Sequence[Record]) -> None:
        for loader in self._loaders:
            loader.load(records)

    def complete(self) -> None:
        for loader in self._loaders:
            loader.complete()
