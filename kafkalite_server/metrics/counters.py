"""Counts the replica manager keeps for Kafka's BrokerTopicMetrics and ReplicaManager
meters: plain integers bumped where the work happens and read at scrape time."""

from __future__ import annotations

from collections import defaultdict


class ReplicaCounters:
    """Per-topic traffic and ISR changes since the broker started.

    Bytes in and messages in count appends to partitions led here (clients' and the
    coordinators'), bytes out what consumer fetches return; a follower's fetches and
    appends are replication traffic, which Kafka counts apart and these do not.
    """

    __slots__ = ("bytes_in", "bytes_out", "failed_produce", "isr_expands", "isr_shrinks",
                 "messages_in")

    def __init__(self) -> None:
        self.messages_in: defaultdict[str, int] = defaultdict(int)
        self.bytes_in: defaultdict[str, int] = defaultdict(int)
        self.bytes_out: defaultdict[str, int] = defaultdict(int)
        self.failed_produce: defaultdict[str, int] = defaultdict(int)
        self.isr_shrinks = 0
        self.isr_expands = 0
