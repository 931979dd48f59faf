"""Consumer-group members inside Spark executors: one member per Spark task.

The data source reads fixed offset ranges and leaves no trace in Kafka; some jobs instead
want the group protocol: partitions shared out by the broker's coordinator, committed offsets
a later run (or another application) resumes from, and automatic takeover when a member goes
away. :func:`run_group_consumers` runs ``num_consumers`` Spark tasks, each a kafkalite
Consumer in the same group, calling ``process_batch`` and committing after every batch.

If a member's task or executor dies, its session with the coordinator expires after
``session_timeout_ms`` and the group rebalances the member's partitions to the survivors,
which resume from the last committed offsets (so records of a batch that was processed but
not committed are processed again: at-least-once). If Spark retries the failed task, the
retry joins the group as a new member and the partitions are shared out again.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalite.idle import IdleTimer
from kafkalite.structs import ConsumerRecord, TopicPartition

log = logging.getLogger(__name__)

ProcessBatch = Callable[[list[ConsumerRecord]], Any]


@dataclass
class MemberStats:
    """What one group member (one Spark task) did."""

    member: int
    """The task's index, 0 .. num_consumers - 1."""
    records: int = 0
    batches: int = 0
    partitions: list[str] = field(default_factory=list)
    """Every partition the member owned at some point, as ``topic-partition``."""
    generations: list[int] = field(default_factory=list)
    """The group generations the member took part in, in order."""
    failed_commits: int = 0
    """Commits refused because the group had rebalanced (those records get reprocessed)."""
    seconds: float = 0.0
    attempt: int = 0
    """Spark's attempt number of the task: above 0 when it is a retry of a failed task."""


@dataclass(frozen=True)
class _MemberJob:
    """Everything a task needs, as plain picklable values."""

    topics: tuple[str, ...]
    group_id: str
    process_batch: ProcessBatch
    bootstrap_servers: str
    idle_timeout_ms: int
    consumer_config: dict[str, Any]

    def run(self, member: int) -> MemberStats:
        from kafkalite.consumer import Consumer

        stats = MemberStats(member, attempt=_task_attempt())
        owned: set[TopicPartition] = set()
        started = time.monotonic()
        idle = IdleTimer(self.idle_timeout_ms)
        config = {"auto_offset_reset": "earliest", "client_id": f"spark-member-{member}",
                  **self.consumer_config, "group_id": self.group_id,
                  "enable_auto_commit": False}
        with Consumer(bootstrap_servers=self.bootstrap_servers, **config) as consumer:
            consumer.subscribe(list(self.topics), listener=idle)
            while True:
                fetched = consumer.poll(timeout_ms=min(500, self.idle_timeout_ms))
                self._note_membership(consumer, stats, owned)
                records = [r for batch in fetched.values() for r in batch]
                if records:
                    self.process_batch(records)
                    stats.records += len(records)
                    stats.batches += 1
                    if not _commit(consumer):
                        stats.failed_commits += 1
                    idle.record_activity()
                elif idle.expired():
                    break
        stats.partitions = [f"{tp.topic}-{tp.partition}" for tp in sorted(owned)]
        stats.seconds = time.monotonic() - started
        return stats

    @staticmethod
    def _note_membership(consumer: Any, stats: MemberStats, owned: set[TopicPartition]) -> None:
        owned.update(consumer.assignment())
        generation = consumer.generation_id
        if generation is not None and generation >= 0 and (
                not stats.generations or stats.generations[-1] != generation):
            stats.generations.append(generation)


def _commit(consumer: Any) -> bool:
    """Commit consumed positions; False when the group moved on (a rebalance fenced it)."""
    from kafkalite.consumer.group import CommitFailedError

    try:
        consumer.commit()
    except CommitFailedError as exc:
        log.warning("commit refused, the batch's partitions moved to another member: %s", exc)
        return False
    return True


def _task_attempt() -> int:
    from pyspark import TaskContext

    context = TaskContext.get()
    return context.attemptNumber() if context is not None else 0


def run_group_consumers(spark: Any, topics: str | Sequence[str], group_id: str,
                        num_consumers: int, process_batch: ProcessBatch,
                        bootstrap_servers: str, idle_timeout_ms: int = 10_000,
                        **consumer_config: Any) -> list[MemberStats]:
    """Run ``num_consumers`` group members as Spark tasks until each has been idle a while.

    Each member polls, calls ``process_batch(records)`` (a list of ConsumerRecords; it runs
    on the executor, so it must be picklable and its side effects happen there), then commits
    the batch's offsets. A member stops once it has held an assignment for ``idle_timeout_ms``
    without records: joining the group (Kafka brokers delay a new group's first rebalance by
    ``group.initial.rebalance.delay.ms``, 3 s by default) and later rebalances do not count
    as idle time. The members
    run concurrently only when the cluster has ``num_consumers`` free task slots; otherwise
    the later ones start as earlier ones finish and find little left to do.
    ``consumer_config`` is passed to each kafkalite Consumer (``auto_offset_reset`` defaults
    to ``earliest`` here). Returns one :class:`MemberStats` per member, by member index.
    """
    if num_consumers < 1:
        raise ValueError(f"num_consumers must be at least 1, not {num_consumers}")
    if idle_timeout_ms < 1:
        raise ValueError(f"idle_timeout_ms must be positive, not {idle_timeout_ms}")
    topic_list = (topics,) if isinstance(topics, str) else tuple(topics)
    job = _MemberJob(topic_list, group_id, process_batch, bootstrap_servers, idle_timeout_ms,
                     dict(consumer_config))
    slots = spark.sparkContext.defaultParallelism
    if num_consumers > slots:
        log.warning("%d group members but %d task slots: members will not all run at once",
                    num_consumers, slots)

    def run_member(index: int, _rows: Iterable[int]) -> Iterator[MemberStats]:
        yield job.run(index)

    members = spark.sparkContext.parallelize(range(num_consumers), num_consumers)
    stats: list[MemberStats] = members.mapPartitionsWithIndex(run_member).collect()
    return sorted(stats, key=lambda s: s.member)
