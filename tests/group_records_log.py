"""The harness of the sans-IO tests of the modern group coordinators (consumer groups and
share groups): the records a coordinator appends, kept per ``__consumer_offsets``
partition and readable back for its loader, and an ownership of every partition."""

from __future__ import annotations

from kafkalite.records import Record, decode_batches, encode_batch
from kafkalite_server.coordinator.ownership import Ownership

KeyValue = tuple[bytes, bytes | None]


class Log:
    """What a state machine appended, per partition, readable back as records."""

    def __init__(self) -> None:
        self.appended: dict[int, list[KeyValue]] = {}

    def append(self, partition: int, records: list[KeyValue]) -> None:
        self.appended.setdefault(partition, []).extend(records)

    def records(self, partition: int) -> list[Record]:
        batch = encode_batch([(k, v, 0, ()) for k, v in self.appended.get(partition, [])])
        return list(decode_batches(batch))


def owning_everything(partitions: int = 1) -> Ownership:
    """An ownership of ``partitions`` partitions, all loaded."""
    ownership = Ownership(partitions)
    for partition in range(partitions):
        ownership.begin_loading(partition, 0)
        ownership.complete_loading(partition)
    return ownership
