"""Kafka's ``queued.max.request.bytes``: one bound on request bytes held over all connections.

Each connection is charged for what it holds: complete requests not yet answered, plus the
request it is receiving. Once that request's size prefix is in, the connection asks to be
*admitted* for the whole frame: it is when the total stays within the bound, when nothing
else is held (so a single request larger than the bound still gets through, as with
Kafka's non-strict memory pool), or when the frame is small (at most
:data:`SMALL_REQUEST_BYTES`: Metadata, heartbeats, commits always get through). A connection
that is not admitted stops reading; its client's bytes wait in the kernel. So it is the
connections with the largest requests in progress that stall while the bound is reached,
an admitted request always completes (no deadlock), and the bytes held stay within the
bound plus, per connection, one small request and one socket read.

Pure bookkeeping; the connection driver waits and wakes (see ``connection.py``).
"""

from __future__ import annotations

from collections.abc import Hashable

SMALL_REQUEST_BYTES = 64 * 1024
"""Frames up to this size are admitted whatever the total."""

NO_BOUND = -1


class RequestBytesBudget:
    """Charges per connection and their total, against ``limit`` bytes (-1: no bound)."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.total = 0
        self._charges: dict[Hashable, int] = {}

    def charge(self, holder: Hashable, nbytes: int) -> None:
        """Set what ``holder`` holds now (0 forgets it)."""
        self.total += nbytes - self._charges.get(holder, 0)
        if nbytes:
            self._charges[holder] = nbytes
        else:
            self._charges.pop(holder, None)

    def admits(self, holder: Hashable, charge_if_admitted: int, frame_size: int) -> bool:
        """May ``holder`` receive a ``frame_size`` frame, holding ``charge_if_admitted``?"""
        if self.limit == NO_BOUND or frame_size <= SMALL_REQUEST_BYTES:
            return True
        others = self.total - self._charges.get(holder, 0)
        return others == 0 or others + charge_if_admitted <= self.limit

    @property
    def holders(self) -> int:
        return len(self._charges)
