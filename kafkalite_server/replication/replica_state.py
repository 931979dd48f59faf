"""The leader's bookkeeping of one partition's replicas, without I/O: remote log end
offsets, caught-up times, the high watermark and which followers should leave or join the
in-sync replica set (ISR). Time comes in as ``now_ms``; tests drive it with a fake clock.

The rules are Kafka's (``Partition.scala``, ``Replica.scala``):

- A follower's LEO (its "remote LEO" on the leader) is the fetch offset of its latest
  Fetch: a follower asks for the offset it will write next.
- The high watermark is the smallest LEO over the ISR, the leader's own included, and
  never moves back. A follower whose LEO is not known yet (no fetch since this leader took
  over) holds it where it is.
- A follower is caught up at the time of a fetch that reached the leader's LEO; a fetch
  that reached the LEO the leader had at the follower's *previous* fetch counts as caught
  up at that previous time (a follower under a steady trickle of produces stays in sync).
- Shrink: an ISR follower that is behind the leader's LEO and was last caught up more than
  ``replica.lag.time.max.ms`` ago is out of sync.
- Expand: a follower outside the ISR rejoins once its LEO reached the high watermark and
  the start of the leader's current epoch.

A follower's own high watermark is min(leader's high watermark, own LEO):
:func:`follower_high_watermark`.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

UNKNOWN_OFFSET = -1


@dataclass(slots=True)
class RemoteReplica:
    broker_id: int
    log_end_offset: int = UNKNOWN_OFFSET
    last_caught_up_ms: int = 0
    last_fetch_leader_leo: int = UNKNOWN_OFFSET
    last_fetch_ms: int = 0


def follower_high_watermark(leader_high_watermark: int, local_log_end_offset: int) -> int:
    """What a follower may expose: never past what it has, never past the leader's HW."""
    return min(leader_high_watermark, local_log_end_offset)


class ReplicaSet:
    """What the leader knows about its followers; owned by a leading :class:`Partition`."""

    def __init__(self, local_id: int, *, lag_time_max_ms: int, high_watermark: int) -> None:
        self.local_id = local_id
        self.lag_time_max_ms = lag_time_max_ms
        self.high_watermark = high_watermark
        self.isr: tuple[int, ...] = ()
        self.remotes: dict[int, RemoteReplica] = {}

    def become_leader(self, replicas: Iterable[int], isr: Iterable[int], now_ms: int) -> None:
        """A new leadership: every follower's LEO is unknown; ISR members count as caught
        up now (they get ``replica.lag.time.max.ms`` to show up), the others never were."""
        self.isr = tuple(isr)
        self.remotes = {
            b: RemoteReplica(b, last_caught_up_ms=now_ms if b in self.isr else 0)
            for b in replicas if b != self.local_id}

    def update_assignment(self, replicas: Iterable[int], isr: Iterable[int]) -> None:
        """A new ISR or assignment under the same leadership keeps what is known."""
        self.isr = tuple(isr)
        wanted = [b for b in replicas if b != self.local_id]
        self.remotes = {b: self.remotes.get(b) or RemoteReplica(b) for b in wanted}

    def update_follower(self, broker_id: int, fetch_offset: int, leader_leo: int,
                        now_ms: int) -> bool:
        """Records a follower's fetch; False for a broker that is not a replica here."""
        remote = self.remotes.get(broker_id)
        if remote is None:
            return False
        if fetch_offset >= leader_leo:
            remote.last_caught_up_ms = max(remote.last_caught_up_ms, now_ms)
        elif fetch_offset >= remote.last_fetch_leader_leo >= 0:
            remote.last_caught_up_ms = max(remote.last_caught_up_ms, remote.last_fetch_ms)
        remote.log_end_offset = fetch_offset
        remote.last_fetch_leader_leo = leader_leo
        remote.last_fetch_ms = now_ms
        return True

    def maybe_increment_high_watermark(self, leader_leo: int) -> bool:
        """HW = min LEO over the ISR (leader included); True if it moved forward."""
        candidate = leader_leo
        for broker_id in self.isr:
            if broker_id == self.local_id:
                continue
            remote = self.remotes.get(broker_id)
            candidate = min(candidate, remote.log_end_offset if remote else UNKNOWN_OFFSET)
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    def out_of_sync(self, leader_leo: int, now_ms: int) -> tuple[int, ...]:
        """ISR followers to drop: behind the leader and not caught up for too long."""
        lagging = []
        for broker_id in self.isr:
            remote = self.remotes.get(broker_id)
            if remote is None:
                continue
            if (remote.log_end_offset != leader_leo
                    and now_ms - remote.last_caught_up_ms > self.lag_time_max_ms):
                lagging.append(broker_id)
        return tuple(lagging)

    def ready_to_join(self, broker_id: int, epoch_start_offset: int) -> bool:
        """A follower outside the ISR that reached the HW and the current epoch's start."""
        remote = self.remotes.get(broker_id)
        return (remote is not None and broker_id not in self.isr
                and remote.log_end_offset >= self.high_watermark
                and remote.log_end_offset >= epoch_start_offset)
