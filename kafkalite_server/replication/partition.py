"""One partition this broker leads: its log, leader epoch and high watermark.

Replication factor one: the ISR is the leader alone, so the high watermark moves to the
log end offset as soon as an append is written. Keeping HW separate from LEO anyway keeps
the reads honest (consumers never see past HW) and gives followers a place to plug in.
"""

from __future__ import annotations

from kafkalite.protocol.errors import FencedLeaderEpochError, UnknownLeaderEpochError
from kafkalite_server.log.log import AppendInfo, Log

NO_EPOCH = -1


class Partition:
    def __init__(self, topic: str, index: int, log: Log, leader_epoch: int) -> None:
        self.topic = topic
        self.index = index
        self.log = log
        self.leader_epoch = leader_epoch
        log.leader_epoch_cache.assign(leader_epoch, log.log_end_offset)
        self.high_watermark = log.log_end_offset

    @property
    def key(self) -> tuple[str, int]:
        return self.topic, self.index

    def append(self, records: memoryview, api_version: int) -> AppendInfo:
        info = self.log.append_as_leader(records, leader_epoch=self.leader_epoch,
                                         api_version=api_version)
        self._maybe_increment_high_watermark()
        return info

    def _maybe_increment_high_watermark(self) -> None:
        """The ISR is {leader}: every appended offset is fully replicated at once."""
        self.high_watermark = self.log.log_end_offset

    def check_leader_epoch(self, requested: int) -> None:
        """KIP-320 fencing: an older epoch is fenced, a newer one is not known yet."""
        if requested == NO_EPOCH or requested == self.leader_epoch:
            return
        if requested < self.leader_epoch:
            raise FencedLeaderEpochError(f"{self.topic}-{self.index} epoch {requested} "
                                         f"< current {self.leader_epoch}")
        raise UnknownLeaderEpochError(f"{self.topic}-{self.index} epoch {requested} "
                                      f"> current {self.leader_epoch}")
