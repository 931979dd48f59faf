"""An idle timeout for group members that does not count the time spent joining the group.

Applications that read "until nothing arrives for N ms" (``kafkalite consume --timeout-ms``,
the Spark group members) would otherwise stop before they read anything: a broker with
Kafka's default ``group.initial.rebalance.delay.ms=3000`` holds the first JoinGroup for at
least three seconds, and every later rebalance pauses fetching too. So the clock runs only
while the member holds an assignment; it restarts when an assignment arrives and pauses when
one is revoked. Waiting for an assignment is bounded by ``join_allowance_ms``, after which
the member counts as idle anyway (a coordinator that never answers must not hang a run).

The timer is the member's ConsumerRebalanceListener (pass it to ``subscribe()``), or is
started by hand with :meth:`IdleTimer.start` for a consumer that uses ``assign()``. It takes
a clock, so its rules are unit-tested without a broker.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from kafkalite.consumer.listener import ConsumerRebalanceListener
from kafkalite.structs import TopicPartition

JOIN_ALLOWANCE_MS = 60_000
"""How long a member may wait for an assignment (initial delay, rebalances) before its idle
time counts anyway: the rebalance timeouts of a healthy group are far shorter."""


class IdleTimer(ConsumerRebalanceListener):
    """``expired()`` once the member has held an assignment for ``timeout_ms`` without records."""

    def __init__(self, timeout_ms: float, *, join_allowance_ms: float = JOIN_ALLOWANCE_MS,
                 clock: Callable[[], float] = time.monotonic) -> None:
        if timeout_ms <= 0:
            raise ValueError(f"timeout_ms must be positive, not {timeout_ms}")
        self.timeout_s = timeout_ms / 1000
        self.join_allowance_s = join_allowance_ms / 1000
        self._clock = clock
        self._assigned = False
        self._since = clock()
        """Last activity while assigned, or when the wait for an assignment began."""

    @property
    def assigned(self) -> bool:
        return self._assigned

    def start(self) -> None:
        """The partitions are known (``assign()``, or an assignment arrived): count from now."""
        self._assigned = True
        self._since = self._clock()

    def record_activity(self) -> None:
        """Records arrived: the idle time starts over."""
        self._since = self._clock()

    def expired(self) -> bool:
        limit = self.timeout_s if self._assigned else self.join_allowance_s
        return self._clock() - self._since >= limit

    def on_partitions_assigned(self, assigned: set[TopicPartition]) -> None:
        self.start()

    def on_partitions_revoked(self, revoked: set[TopicPartition]) -> None:
        self._assigned = False
        self._since = self._clock()
