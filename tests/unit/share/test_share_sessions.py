"""Share sessions on a fake clock: opening, epochs in order, partitions joining and
leaving, closing, and the bound on sessions per broker."""

from __future__ import annotations

import uuid

from fake_clock import FakeClock as Clock

from kafkalite.protocol.errors import (
    InvalidRequestError,
    InvalidShareSessionEpochError,
    ShareSessionLimitReachedError,
    ShareSessionNotFoundError,
)
from kafkalite_server.share.sessions import ShareSessions

T = uuid.uuid4()


def test_a_session_opens_moves_through_its_epochs_and_closes() -> None:
    sessions = ShareSessions(10, 1000, Clock())
    error, session = sessions.fetch(("g", "m"), 0, [(T, 0)], [], acknowledging=False)
    assert error == 0 and session is not None and list(session.partitions) == [(T, 0)]
    error, session = sessions.fetch(("g", "m"), 1, [(T, 1)], [(T, 0)], acknowledging=True)
    assert error == 0 and session is not None and list(session.partitions) == [(T, 1)]
    assert sessions.acknowledge(("g", "m"), 2) == 0
    assert sessions.fetch(("g", "m"), 2, [], [], acknowledging=False)[0] \
        == InvalidShareSessionEpochError.errno
    assert sessions.fetch(("g", "m"), 3, [], [], acknowledging=False)[0] == 0
    assert sessions.acknowledge(("g", "m"), -1) == 0
    assert sessions.fetch(("g", "m"), 4, [], [], acknowledging=False)[0] \
        == ShareSessionNotFoundError.errno
    assert sessions.fetch(("g", "m"), 0, [], [], acknowledging=True)[0] \
        == InvalidRequestError.errno  # opening a session acknowledges nothing
    assert sessions.acknowledge(("g", "x"), 0) == InvalidShareSessionEpochError.errno


def test_sessions_are_bounded_and_an_idle_one_makes_room() -> None:
    clock = Clock()
    sessions = ShareSessions(2, 1000, clock)
    sessions.fetch(("g", "a"), 0, [], [], acknowledging=False)
    clock.now = 500
    sessions.fetch(("g", "b"), 0, [], [], acknowledging=False)
    assert sessions.fetch(("g", "c"), 0, [], [], acknowledging=False)[0] \
        == ShareSessionLimitReachedError.errno
    clock.now = 1000  # a has been idle a whole session timeout: evicted
    assert sessions.fetch(("g", "c"), 0, [], [], acknowledging=False)[0] == 0
    assert sessions.get(("g", "a")) is None and len(sessions) == 2
