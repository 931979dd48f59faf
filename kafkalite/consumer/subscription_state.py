"""What a consumer reads: its subscription (topics, a pattern or a manual assignment) and, for
each assigned partition, the fetch position, pause flag and any pending offset reset.

Only the application's thread touches this object (inside the Consumer's methods), so it has no
locks; the I/O thread never reads it.
"""

from __future__ import annotations

import enum
import re
from collections.abc import Iterable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from kafkalite.errors import IllegalStateError
from kafkalite.structs import OffsetAndMetadata, TopicPartition

if TYPE_CHECKING:
    from kafkalite.consumer.listener import ConsumerRebalanceListener


class SubscriptionType(enum.Enum):
    NONE = "none"
    TOPICS = "topics"
    PATTERN = "pattern"
    USER_ASSIGNED = "user_assigned"


@dataclass
class PartitionState:
    """Fetch state of one assigned partition; ``position`` is the next offset to return."""

    position: int | None = None
    paused: bool = False
    reset_strategy: str | None = None
    high_watermark: int = -1
    last_stable_offset: int = -1
    log_start_offset: int = -1


class SubscriptionState:
    """See the module docstring."""

    def __init__(self, default_reset_strategy: str) -> None:
        self.default_reset_strategy = default_reset_strategy
        self.type = SubscriptionType.NONE
        self.topics: frozenset[str] = frozenset()
        self.pattern: re.Pattern[str] | None = None
        self.listener: ConsumerRebalanceListener | None = None
        self._partitions: dict[TopicPartition, PartitionState] = {}
        self.assignment_version = 0
        """Bumped on every assignment change: lets the fetcher drop data fetched before."""

    # -- subscription ----------------------------------------------------------------------

    def _set_type(self, kind: SubscriptionType) -> None:
        if self.type not in (SubscriptionType.NONE, kind):
            raise IllegalStateError(
                "subscribe(topics), subscribe(pattern=...) and assign() are mutually "
                "exclusive; call unsubscribe() first")
        self.type = kind

    def subscribe(self, topics: Iterable[str],
                  listener: ConsumerRebalanceListener | None = None) -> bool:
        """Subscribe to exactly ``topics``; True when the set changed."""
        names = frozenset(topics)
        for name in names:
            if not isinstance(name, str) or not name:
                raise ValueError(f"topic names must be non-empty strings, got {name!r}")
        self._set_type(SubscriptionType.TOPICS)
        self.listener = listener
        return self.change_topics(names)

    def subscribe_pattern(self, pattern: str | re.Pattern[str],
                          listener: ConsumerRebalanceListener | None = None) -> None:
        self._set_type(SubscriptionType.PATTERN)
        self.pattern = re.compile(pattern) if isinstance(pattern, str) else pattern
        self.listener = listener

    def matching_topics(self, candidates: Iterable[str]) -> frozenset[str]:
        assert self.pattern is not None
        return frozenset(t for t in candidates if self.pattern.fullmatch(t))

    def change_topics(self, topics: frozenset[str]) -> bool:
        """Replace the subscribed topics (a pattern matched new ones); True when changed."""
        if topics == self.topics:
            return False
        self.topics = topics
        return True

    def assign_from_user(self, partitions: Iterable[TopicPartition]) -> None:
        wanted = set(partitions)
        for tp in wanted:
            if not isinstance(tp, TopicPartition):
                raise TypeError(f"assign() takes TopicPartitions, got {tp!r}")
        self._set_type(SubscriptionType.USER_ASSIGNED)
        if not wanted:
            self.unsubscribe()
            return
        self._replace_assignment(wanted)
        self.topics = frozenset(tp.topic for tp in wanted)

    def assign_from_subscribed(self, partitions: Iterable[TopicPartition]) -> set[TopicPartition]:
        """Take the group's assignment, keeping only subscribed topics; returns what was kept."""
        kept = {tp for tp in partitions if tp.topic in self.topics}
        self._replace_assignment(kept)
        return kept

    def _replace_assignment(self, partitions: set[TopicPartition]) -> None:
        self._partitions = {tp: self._partitions.get(tp) or PartitionState()
                            for tp in sorted(partitions)}
        self.assignment_version += 1

    def unsubscribe(self) -> None:
        self.type = SubscriptionType.NONE
        self.topics = frozenset()
        self.pattern = None
        self.listener = None
        self._partitions = {}
        self.assignment_version += 1

    @property
    def is_auto_assigned(self) -> bool:
        """True for topic or pattern subscriptions: the group assigns the partitions."""
        return self.type in (SubscriptionType.TOPICS, SubscriptionType.PATTERN)

    # -- assigned partitions ---------------------------------------------------------------

    def assigned_partitions(self) -> set[TopicPartition]:
        return set(self._partitions)

    def is_assigned(self, tp: TopicPartition) -> bool:
        return tp in self._partitions

    def state(self, tp: TopicPartition) -> PartitionState:
        try:
            return self._partitions[tp]
        except KeyError:
            raise IllegalStateError(f"{tp} is not assigned to this consumer") from None

    def fetchable_partitions(self) -> list[TopicPartition]:
        """Assigned, not paused, with a known position: what the next fetch asks for."""
        return [tp for tp, state in self._partitions.items()
                if state.position is not None and not state.paused]

    def is_fetchable(self, tp: TopicPartition) -> bool:
        state = self._partitions.get(tp)
        return state is not None and state.position is not None and not state.paused

    def missing_positions(self) -> list[TopicPartition]:
        """Partitions with neither a position nor a reset pending: look up the committed
        offset first (in a group), then fall back to the reset strategy."""
        return [tp for tp, state in self._partitions.items()
                if state.position is None and state.reset_strategy is None]

    def awaiting_reset(self) -> dict[TopicPartition, str]:
        return {tp: state.reset_strategy for tp, state in self._partitions.items()
                if state.reset_strategy is not None}

    def request_reset(self, tp: TopicPartition, strategy: str | None = None) -> None:
        state = self.state(tp)
        state.reset_strategy = strategy or self.default_reset_strategy
        state.position = None

    def seek(self, tp: TopicPartition, offset: int) -> None:
        if isinstance(offset, bool) or not isinstance(offset, int) or offset < 0:
            raise ValueError(f"seek offset must be a non-negative integer, not {offset!r}")
        state = self.state(tp)
        state.position = offset
        state.reset_strategy = None

    def position(self, tp: TopicPartition) -> int | None:
        return self.state(tp).position

    def pause(self, tp: TopicPartition) -> None:
        self.state(tp).paused = True

    def resume(self, tp: TopicPartition) -> None:
        self.state(tp).paused = False

    def paused(self) -> set[TopicPartition]:
        return {tp for tp, state in self._partitions.items() if state.paused}

    def all_consumed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        """The positions to commit: every assigned partition that has one."""
        return {tp: OffsetAndMetadata(state.position) for tp, state in self._partitions.items()
                if state.position is not None}
