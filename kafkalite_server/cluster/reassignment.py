"""A partition reassignment (KIP-455) as the controller sees it: the replicas it started
from and the ones it is moving to. Pure: the controller stores it in the assignment node
(``adding_replicas``/``removing_replicas``) and drives it; see
:meth:`~kafkalite_server.cluster.active_controller.Controller.alter_reassignments`.

While it runs, the partition's replica set is the target followed by the original replicas
that are leaving (Kafka's ``RS = TRS + (ORS - TRS)``): new replicas fetch from the leader,
join the ISR once caught up, and only when every target replica is in the ISR does the
controller switch the assignment to the target, moving leadership off a leaving leader and
deleting the leaving replicas.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass

from kafkalite.protocol.errors import InvalidReplicaAssignmentError


@dataclass(frozen=True, slots=True)
class Reassignment:
    original: tuple[int, ...]
    target: tuple[int, ...]

    @property
    def replicas(self) -> list[int]:
        """The replica set while moving: the target first, then the leaving replicas."""
        return [*self.target, *(b for b in self.original if b not in self.target)]

    @property
    def adding(self) -> list[int]:
        return [b for b in self.target if b not in self.original]

    @property
    def removing(self) -> list[int]:
        return [b for b in self.original if b not in self.target]

    @classmethod
    def stored(cls, replicas: list[int], adding: list[int], removing: list[int]
               ) -> Reassignment:
        """Read back from the assignment node's version 2 fields. As in Kafka, the
        original replicas come back in the stored set's order (the target's first)."""
        return cls(tuple(b for b in replicas if b not in adding),
                   tuple(b for b in replicas if b not in removing))

    def complete(self, isr: Collection[int]) -> bool:
        """Every target replica is in sync: the controller may switch to the target."""
        return all(b in isr for b in self.target)


def checked_target(partition: str, replicas: list[int], registered: Collection[int]
                   ) -> tuple[int, ...]:
    """The target replicas, or INVALID_REPLICA_ASSIGNMENT with Kafka's reasons: an empty
    list, a broker named twice, a broker that is not registered."""
    if not replicas:
        raise InvalidReplicaAssignmentError(
            f"{partition}: empty replica list specified in partition reassignment")
    if len(set(replicas)) != len(replicas):
        raise InvalidReplicaAssignmentError(
            f"{partition}: duplicate replica ids in partition reassignment replica list: "
            f"{replicas}")
    unknown = [b for b in replicas if b not in registered]
    if unknown:
        raise InvalidReplicaAssignmentError(
            f"{partition}: replica assignment has brokers that are not alive: {unknown}; "
            f"replica list {replicas}, live brokers {sorted(registered)}")
    return tuple(replicas)
