"""Which committed offsets have expired (``offsets.retention.minutes``, Kafka 2.1+ rules).

Since KIP-211 an offset is not forgotten while its group is in use: the retention period
of an Empty group's offsets is counted from the moment the group's last member left, not
from each commit, so a consumer that commits rarely keeps its position. The coordinator
asks this module every ``offsets.retention.check.interval.ms`` and writes tombstones for
what it names; keeping the rule apart keeps it readable against Kafka's
``GroupMetadata.removeExpiredOffsets``.
"""

from __future__ import annotations

from collections.abc import Callable
from collections.abc import Set as AbstractSet

from kafkalite_server.group.group import CONSUMER_PROTOCOL_TYPE, ClassicGroup
from kafkalite_server.group.offsets import OffsetAndMetadata, TopicPartition
from kafkalite_server.group.state import GroupState


def expired_offsets(group: ClassicGroup, now_ms: int, retention_ms: int,
                    pending: AbstractSet[TopicPartition] = frozenset()) -> list[TopicPartition]:
    """The group's offsets to forget now, never one of the ``pending`` partitions (a
    transaction that committed offsets there has not ended: its commit would replace the
    offset, its abort leave it as the group's position, so it must still be there):

    - an Empty group: every offset, once ``retention_ms`` has passed since it became Empty;
    - a group only used for commits (no protocol type: standalone consumers, admin tools):
      each offset ``retention_ms`` after its own commit;
    - a Stable consumer group: offsets of topics no member subscribes to any more, each
      ``retention_ms`` after its commit;
    - any other group (rebalancing, or members of an unknown protocol): none.

    An offset committed with an explicit retention (OffsetCommit v1-v4 ``retention_time_ms``)
    expires at its own expire timestamp instead.
    """
    if group.is_state(GroupState.EMPTY):
        if group.protocol_type is None:  # never had members
            return _expired(group, now_ms, retention_ms, _committed_at, pending)
        return _expired(group, now_ms, retention_ms, lambda _: group.state_timestamp_ms,
                        pending)
    if group.protocol_type == CONSUMER_PROTOCOL_TYPE and group.is_state(GroupState.STABLE):
        subscribed = group.subscribed_topics()
        if subscribed is None:
            return []
        return _expired(group, now_ms, retention_ms, _committed_at, pending, subscribed)
    return []


def _committed_at(offset: OffsetAndMetadata) -> int:
    return offset.commit_timestamp_ms


def _expired(
    group: ClassicGroup,
    now_ms: int,
    retention_ms: int,
    base_ms: Callable[[OffsetAndMetadata], int],
    pending: AbstractSet[TopicPartition],
    spared_topics: set[str] | frozenset[str] = frozenset(),
) -> list[TopicPartition]:
    expired = []
    for tp, offset in group.offsets.items():
        if tp.topic in spared_topics or tp in pending:
            continue
        if offset.expire_timestamp_ms is not None:
            gone = now_ms >= offset.expire_timestamp_ms
        else:
            gone = now_ms - base_ms(offset) >= retention_ms
        if gone:
            expired.append(tp)
    return expired
