"""One consumer group as ``groups describe`` shows it: members, and per partition the owner,
committed offset, log end offset and lag (kafka-consumer-groups' view)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from kafkalite.admin import AdminClient
from kafkalite.cli.options import CliError
from kafkalite.protocol.states import GroupState


@dataclass(frozen=True)
class MemberView:
    member_id: str
    client_id: str
    host: str
    partitions: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class PartitionRow:
    topic: str
    partition: int
    committed: int | None
    end_offset: int | None
    member: MemberView | None = None

    @property
    def lag(self) -> int | None:
        if self.committed is None or self.end_offset is None:
            return None
        return max(self.end_offset - self.committed, 0)


@dataclass(frozen=True)
class GroupView:
    group: str
    state: str
    protocol: str
    members: list[MemberView] = field(default_factory=list)
    partitions: list[PartitionRow] = field(default_factory=list)

    @property
    def total_lag(self) -> int:
        return sum(row.lag or 0 for row in self.partitions)

    def as_dict(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "state": self.state,
            "protocol": self.protocol,
            "members": [{**asdict(m), "partitions": [list(tp) for tp in m.partitions]}
                        for m in self.members],
            "partitions": [
                {"topic": row.topic, "partition": row.partition, "committed": row.committed,
                 "end_offset": row.end_offset, "lag": row.lag,
                 "member_id": row.member.member_id if row.member else None}
                for row in self.partitions
            ],
            "total_lag": self.total_lag,
        }


def build_view(group: str, state: str, protocol: str, members: list[MemberView],
               offsets: dict[tuple[str, int], tuple[int | None, int | None]]) -> GroupView:
    """Rows for every partition with a committed offset or an owner, sorted.

    ``offsets`` maps (topic, partition) to (committed offset or None, log end offset).
    """
    owners = {tp: member for member in members for tp in member.partitions}
    rows = []
    for tp in sorted(set(offsets) | set(owners)):
        committed, end = offsets.get(tp, (None, None))
        rows.append(PartitionRow(tp[0], tp[1], committed, end, owners.get(tp)))
    return GroupView(group, state, protocol, members, rows)


def describe_group(admin: AdminClient, group: str) -> GroupView:
    """The group's members and per-partition offsets, as the AdminClient reports them."""
    description = admin.describe_groups([group])[group]
    if description.state == GroupState.DEAD:
        raise CliError(f"consumer group {group!r} does not exist")
    members = [MemberView(m.member_id, m.client_id, m.client_host,
                          tuple((tp.topic, tp.partition) for tp in m.assignment))
               for m in description.members]
    offsets: dict[tuple[str, int], tuple[int | None, int | None]] = {
        (tp.topic, tp.partition): (committed, end)
        for tp, (committed, end, _lag) in admin.consumer_group_lag(group).items()}
    return build_view(group, description.state, description.protocol, members, offsets)
