"""Which replica a consumer should read from (KIP-392), as Kafka's ``replica.selector.class``.

Kafka's default (``LeaderSelector``) always answers the leader. With
``RackAwareReplicaSelector`` the leader names an in-sync replica in the consumer's rack
(``rack_id`` of Fetch v11+) as the partition's ``preferred_read_replica``, sends no records,
and the consumer fetches from that replica until its metadata expires: reads stay inside a
rack (availability zone) instead of crossing to the leader's.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

RACK_AWARE_SELECTOR = "org.apache.kafka.common.replica.RackAwareReplicaSelector"
LEADER_SELECTOR = "org.apache.kafka.common.replica.LeaderSelector"
SELECTORS = frozenset({RACK_AWARE_SELECTOR, LEADER_SELECTOR})
NO_PREFERENCE = -1
"""``preferred_read_replica`` when the consumer should keep reading from the leader."""


def preferred_read_replica(selector: str | None, client_rack: str, leader: int,
                           in_sync: Iterable[int], racks: Mapping[int, str | None]) -> int:
    """The replica a consumer in ``client_rack`` should read from, or :data:`NO_PREFERENCE`:
    the leader when it is in that rack or no in-sync replica is, else the in-sync replica
    of that rack with the lowest id (a stable choice, so consumers do not hop)."""
    if selector != RACK_AWARE_SELECTOR or not client_rack or racks.get(leader) == client_rack:
        return NO_PREFERENCE
    same_rack = sorted(r for r in in_sync if r != leader and racks.get(r) == client_rack)
    return same_rack[0] if same_rack else NO_PREFERENCE
