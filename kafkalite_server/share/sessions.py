"""Share sessions (KIP-932): which partitions a member fetches from this broker, so that a
ShareFetch only names what changed. Sans-IO on a given clock.

A session is keyed by (group, member) on each broker. Its epoch orders the requests:

- epoch 0 opens a session with the request's partitions (replacing an older one);
- epoch N > 0 must be the session's next epoch; the request's partitions join the
  session, its forgotten ones leave it;
- epoch -1 closes the session after this request (its acknowledgements are applied; the
  member's records on this broker are released).

A session unknown here is SHARE_SESSION_NOT_FOUND, an epoch out of order
INVALID_SHARE_SESSION_EPOCH (the member opens a new session). At most
``group.share.max.share.sessions`` sessions live on a broker: a new one evicts the least
recently used session idle for a member session timeout, else it is
SHARE_SESSION_LIMIT_REACHED.
"""

from __future__ import annotations

import uuid
from collections import OrderedDict
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from kafkalite.protocol.errors import (
    InvalidRequestError,
    InvalidShareSessionEpochError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)

OPEN_EPOCH = 0
FINAL_EPOCH = -1

SharePartitionId = tuple[uuid.UUID, int]
"""(topic id, partition)"""
SessionKey = tuple[str, str]
"""(group id, member id)"""


@dataclass
class ShareSession:
    key: SessionKey
    epoch: int = 1
    """The epoch the member's next request must carry."""
    partitions: dict[SharePartitionId, None] = field(default_factory=dict)
    """In the order they joined (an ordered set)."""
    last_used_ms: int = 0


class ShareSessions:
    def __init__(self, max_sessions: int, idle_ms: int, clock: Callable[[], int]) -> None:
        self._max = max_sessions
        self._idle_ms = idle_ms
        self._clock = clock
        self._sessions: OrderedDict[SessionKey, ShareSession] = OrderedDict()

    def __len__(self) -> int:
        return len(self._sessions)

    def get(self, key: SessionKey) -> ShareSession | None:
        return self._sessions.get(key)

    def fetch(self, key: SessionKey, epoch: int, added: Iterable[SharePartitionId],
              forgotten: Iterable[SharePartitionId], acknowledging: bool
              ) -> tuple[int, ShareSession | None]:
        """A ShareFetch's session (error 0), after its partitions joined and left."""
        added = list(added)
        if epoch == OPEN_EPOCH:
            if acknowledging:
                return InvalidRequestError.errno, None
            error = self._make_room(key)
            if error:
                return error, None
            session = ShareSession(key, partitions=dict.fromkeys(added))
            self._sessions[key] = session
            self._touch(session)
            return 0, session
        error, continued = self._continue(key, epoch)
        if continued is None:
            return error, None
        if epoch == FINAL_EPOCH:
            self._sessions.pop(key, None)
            return 0, continued
        session = continued
        session.partitions.update(dict.fromkeys(added))
        for partition in forgotten:
            session.partitions.pop(partition, None)
        return 0, session

    def acknowledge(self, key: SessionKey, epoch: int) -> int:
        """A ShareAcknowledge's session check (it cannot open a session)."""
        if epoch == OPEN_EPOCH:
            return InvalidShareSessionEpochError.errno
        error, _session = self._continue(key, epoch)
        if not error and epoch == FINAL_EPOCH:
            self._sessions.pop(key, None)
        return error

    def has_group(self, group_id: str) -> bool:
        """Does a member of ``group_id`` have a session here?"""
        return any(group == group_id for group, _member in self._sessions)

    def _continue(self, key: SessionKey, epoch: int) -> tuple[int, ShareSession | None]:
        session = self._sessions.get(key)
        if session is None:
            return ShareSessionNotFoundError.errno, None
        if epoch != FINAL_EPOCH:
            if epoch != session.epoch:
                return InvalidShareSessionEpochError.errno, None
            session.epoch += 1
        self._touch(session)
        return 0, session

    def _touch(self, session: ShareSession) -> None:
        session.last_used_ms = self._clock()
        self._sessions.move_to_end(session.key)

    def _make_room(self, key: SessionKey) -> int:
        if key in self._sessions or len(self._sessions) < self._max:
            return 0
        oldest_key, oldest = next(iter(self._sessions.items()))
        if self._clock() - oldest.last_used_ms < self._idle_ms:
            return ShareSessionLimitReachedError.errno
        del self._sessions[oldest_key]
        return 0
