"""One member of a classic group, with the responses it is waiting for."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field

from kafkalite_server.group.results import JoinResult, SyncResult
from kafkalite_server.group.timers import TimerHandle

JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass
class GroupMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    #: (protocol name, protocol metadata) in the member's order of preference.
    protocols: list[tuple[str, bytes]]
    assignment: bytes = b""
    #: Joined in the current rebalance and never completed one: cannot heartbeat yet.
    is_new: bool = False
    join_callback: JoinCallback | None = None
    sync_callback: SyncCallback | None = None
    expiry_timer: TimerHandle | None = field(default=None, repr=False)

    @property
    def awaiting_join(self) -> bool:
        return self.join_callback is not None

    @property
    def awaiting_sync(self) -> bool:
        return self.sync_callback is not None

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]

    def metadata_for(self, protocol: str) -> bytes:
        for name, metadata in self.protocols:
            if name == protocol:
                return metadata
        raise KeyError(f"member {self.member_id} does not support protocol {protocol!r}")

    def matches(self, protocols: list[tuple[str, bytes]]) -> bool:
        """Same protocols and metadata in the same order: a rejoin that changes nothing."""
        return self.protocols == protocols

    def vote(self, candidates: set[str]) -> str:
        """The member's most preferred protocol among those every member supports."""
        for name in self.protocol_names():
            if name in candidates:
                return name
        raise ValueError(f"member {self.member_id} supports none of {sorted(candidates)}")

    def answer_join(self, result: JoinResult) -> bool:
        """Send the parked JoinGroup response, if there is one."""
        callback, self.join_callback = self.join_callback, None
        if callback is None:
            return False
        callback(result)
        return True

    def answer_sync(self, result: SyncResult) -> bool:
        """Send the parked SyncGroup response, if there is one."""
        callback, self.sync_callback = self.sync_callback, None
        if callback is None:
            return False
        callback(result)
        return True

    def cancel_expiry(self) -> None:
        if self.expiry_timer is not None:
            self.expiry_timer.cancel()
            self.expiry_timer = None
