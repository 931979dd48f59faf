"""What an ElectLeaders (43) request does to one partition, as Kafka's controller decides it.

A preferred election (type 0) is not needed when the first replica of the assignment already
leads (ELECTION_NOT_NEEDED); otherwise that replica takes over if it is alive and in the
ISR, else PREFERRED_LEADER_NOT_AVAILABLE. An unclean election (type 1) is not needed while
the partition has a live leader; otherwise it elects the first live ISR replica, or failing
that the first live replica (committed data may be lost), else
ELIGIBLE_LEADERS_NOT_AVAILABLE. Pure: the controllers apply the outcome.
"""

from __future__ import annotations

from collections.abc import Collection, Sequence

from kafkalite.protocol.errors import (
    BrokerResponseError,
    ElectionNotNeededError,
    EligibleLeadersNotAvailableError,
    InvalidRequestError,
    PreferredLeaderNotAvailableError,
)
from kafkalite.protocol.schemas.elections import ElectionType
from kafkalite_server.cluster.election import (
    Election,
    offline_partition_leader,
    preferred_replica_leader,
)


def election_type(code: int) -> ElectionType:
    try:
        return ElectionType(code)
    except ValueError:
        raise InvalidRequestError(f"unknown election type {code}: 0 is preferred, "
                                  "1 is unclean") from None


def requested_election(kind: ElectionType, partition: str, replicas: Sequence[int],
                       leader: int, isr: Sequence[int],
                       live: Collection[int]) -> Election | BrokerResponseError:
    """The new leader and ISR for ``partition`` (``topic-index``, for messages), or the
    error ElectLeaders answers for it."""
    if kind is ElectionType.PREFERRED:
        if replicas and leader == replicas[0]:
            return ElectionNotNeededError(f"{partition}: the preferred replica {leader} "
                                          "already leads")
        election = preferred_replica_leader(replicas, isr, live)
        if election is None:
            return PreferredLeaderNotAvailableError(
                f"{partition}: the preferred replica {replicas[0] if replicas else None} is "
                f"not alive or not in the ISR {list(isr)}")
        return election
    if leader in live:
        return ElectionNotNeededError(f"{partition}: broker {leader} leads it")
    election = offline_partition_leader(replicas, isr, live, unclean=True)
    if election is None:
        return EligibleLeadersNotAvailableError(
            f"{partition}: none of the replicas {list(replicas)} is alive")
    return election
