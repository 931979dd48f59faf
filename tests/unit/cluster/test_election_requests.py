"""ElectLeaders' per-partition decision, as Kafka's controller makes it."""

from __future__ import annotations

import pytest

from kafkalite.protocol.errors import (
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    InvalidRequestError,
    PreferredLeaderNotAvailableError,
)
from kafkalite_server.cluster.election import Election
from kafkalite_server.cluster.election_requests import (
    ElectionType,
    election_type,
    requested_election,
)

P, U = ElectionType.PREFERRED, ElectionType.UNCLEAN


@pytest.mark.parametrize(("kind", "leader", "isr", "live", "expected"), [
    (P, 2, [1, 2, 3], {1, 2, 3}, Election(1, (1, 2, 3))),
    (P, 1, [1, 2, 3], {1, 2, 3}, ElectionNotNeededError),
    (P, 2, [2, 3], {1, 2, 3}, PreferredLeaderNotAvailableError),   # 1 lags
    (P, 2, [1, 2, 3], {2, 3}, PreferredLeaderNotAvailableError),   # 1 is down
    (U, 2, [1, 2], {1, 2, 3}, ElectionNotNeededError),             # a live leader
    (U, -1, [1], {2, 3}, Election(2, (2,), unclean=True)),         # outside the ISR
    (U, 1, [1, 3], {2, 3}, Election(3, (3,))),                     # a live ISR member first
    (U, -1, [1], set(), EligibleLeadersNotAvailableError),
])
def test_outcomes(kind, leader, isr, live, expected):
    outcome = requested_election(kind, "t-0", [1, 2, 3], leader, isr, live)
    if isinstance(expected, Election):
        assert outcome == expected
    else:
        assert isinstance(outcome, expected) and "t-0" in outcome.context


def test_unknown_election_types_are_invalid_requests():
    assert election_type(1) is U
    with pytest.raises(InvalidRequestError, match="unknown election type 2"):
        election_type(2)
