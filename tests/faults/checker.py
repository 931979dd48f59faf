"""The history checker: pure functions over what a fault run recorded.

A run records every send (who sent which unique value to which partition, and whether the
cluster acknowledged it, at which offset), the final read of every partition after the
faults healed, every replica's batches below the high watermark, and the committed group
offsets observed over time. :func:`check` turns that into a :class:`Report` with Jepsen's
vocabulary (``jepsen.tests.kafka``), restated:

- **lost**: acknowledged, at or above the partition's log start offset, never read;
- **duplicated**: an acknowledged value read at more than one offset, written twice by the
  cluster: under the same producer id, epoch and sequence (what idempotence must answer
  as a duplicate), or without an identity the checker can compare;
- **re-sent by the client**: an acknowledged value read at more than one offset whose
  copies the client sent under different producer epochs or sequences, after giving up
  on part of the first copy's batch (a send of that batch failed on the client).
  librdkafka does that after a local message timeout: it bumps its epoch and numbers the
  records still queued from sequence 0 again, including records an earlier request had
  already written, which the broker cannot tell from new ones (Kafka writes them again
  too). Reported, not counted against the cluster;
- **reordered**: a producer's later acknowledged send to a partition read at an earlier
  offset than one of its earlier sends (``nonmonotonic-send``);
- **inconsistent offsets**: one (partition, offset) acknowledged for, or read as, two
  different values;
- **divergent**: partitions whose replicas hold different batches below the high
  watermark (followers copy the leader's batches verbatim, so the bytes must match);
- **offsets backwards**: a group's committed offset observed lower than an earlier
  observation;
- **unavailable seconds**: the sum of gaps longer than :data:`UNAVAILABLE_GAP_S` between
  consecutive acknowledgements (how long writers saw no progress).

Sends that failed or never finished are indeterminate: they may or may not be in the log,
so they count neither as lost nor as an error when read.
"""

from __future__ import annotations

import itertools
from collections import Counter, defaultdict
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from kafkalite.records import decode_batches
from kafkalite.records.batch_header import read_batch_header

UNAVAILABLE_GAP_S = 1.0
ACKED = "ok"
FAILED = "fail"
UNKNOWN = "unknown"


@dataclass
class Send:
    producer: str
    value: bytes
    partition: int
    sent_at: float
    outcome: str = UNKNOWN
    offset: int = -1
    done_at: float = 0.0
    error: str = ""


@dataclass(frozen=True)
class Batch:
    """One replica's batch: first and last offset, and its bytes as stored."""

    base_offset: int
    last_offset: int
    data: bytes


@dataclass
class History:
    sends: list[Send] = field(default_factory=list)
    reads: dict[int, list[tuple[int, bytes]]] = field(default_factory=dict)
    """Final read per partition: (offset, value) in offset order."""
    log_start: dict[int, int] = field(default_factory=dict)
    """Log start offset per partition at the final read (records below were deleted)."""
    replicas: dict[int, tuple[int, dict[int, list[Batch]]]] = field(default_factory=dict)
    """Per partition: the high watermark, and per broker its batches below it."""
    commits: list[tuple[float, str, int, int]] = field(default_factory=list)
    """Observed committed offsets: (time, group, partition, offset)."""


@dataclass
class Report:
    acked: int = 0
    lost: list[bytes] = field(default_factory=list)
    duplicated: list[bytes] = field(default_factory=list)
    resent: list[bytes] = field(default_factory=list)
    """Duplicates the client sent twice under different sequences (see the module
    docstring): reported, not a safety violation of the cluster."""
    reordered: list[tuple[str, int, bytes]] = field(default_factory=list)
    inconsistent_offsets: list[tuple[int, int]] = field(default_factory=list)
    divergent: list[int] = field(default_factory=list)
    offsets_backwards: list[tuple[str, int, int, int]] = field(default_factory=list)
    unavailable_s: float = 0.0
    failed: int = 0
    unknown: int = 0
    errors: dict[str, int] = field(default_factory=dict)
    """The most common errors of failed sends, with counts."""

    @property
    def ok(self) -> bool:
        """No safety violation (unavailability and failed sends are allowed)."""
        return not (self.lost or self.duplicated or self.reordered
                    or self.inconsistent_offsets or self.divergent or self.offsets_backwards)

    def summary(self) -> str:
        return (f"acked={self.acked} lost={len(self.lost)} duplicated={len(self.duplicated)} "
                f"resent={len(self.resent)} reordered={len(self.reordered)} "
                f"inconsistent_offsets={len(self.inconsistent_offsets)} "
                f"divergent={len(self.divergent)} "
                f"offsets_backwards={len(self.offsets_backwards)} failed={self.failed} "
                f"unknown={self.unknown} unavailable_s={self.unavailable_s:.1f}"
                + (f" first_lost={self.lost[:3]}" if self.lost else "")
                + (f" errors={self.errors}" if self.errors else ""))


def check(history: History) -> Report:
    acked = [s for s in history.sends if s.outcome == ACKED]
    report = Report(acked=len(acked),
                    failed=sum(s.outcome == FAILED for s in history.sends),
                    unknown=sum(s.outcome == UNKNOWN for s in history.sends),
                    errors=dict(Counter(s.error[:80] for s in history.sends
                                        if s.outcome == FAILED).most_common(3)))
    read_at = _read_offsets(history.reads)
    report.lost = _lost(acked, read_at, history.log_start)
    twice = sorted(v for v in {s.value for s in acked} if len(read_at[v]) > 1)
    resent = _resent_by_client(twice, read_at, history)
    report.duplicated = [v for v in twice if v not in resent]
    report.resent = [v for v in twice if v in resent]
    report.reordered = _reordered(acked, read_at)
    report.inconsistent_offsets = _inconsistent(acked, history.reads)
    report.divergent = sorted(p for p, (hw, replicas) in history.replicas.items()
                              if diverges(replicas, hw))
    report.offsets_backwards = _backwards(history.commits)
    report.unavailable_s = unavailable_seconds(s.done_at for s in acked)
    return report


def _read_offsets(reads: Mapping[int, Sequence[tuple[int, bytes]]]
                  ) -> defaultdict[bytes, list[tuple[int, int]]]:
    found: defaultdict[bytes, list[tuple[int, int]]] = defaultdict(list)
    for partition, records in reads.items():
        for offset, value in records:
            found[value].append((partition, offset))
    return found


@dataclass(frozen=True)
class _Copy:
    """Where one record lies in the log: its batch, and the identity it was sent under."""

    batch: tuple[int, int]
    """(partition, base offset) of its batch."""
    identity: tuple[int, int, int]
    """(producer id, producer epoch, sequence)."""


def _copies(replicas: Mapping[int, tuple[int, Mapping[int, Sequence[Batch]]]]
            ) -> tuple[dict[tuple[int, int], _Copy], defaultdict[tuple[int, int], list[bytes]]]:
    """Per (partition, offset) of an idempotent producer's record its :class:`_Copy`, and
    the values of each batch, read from the replica holding the most batches (below the
    high watermark replicas hold the same batches, or the run reports divergence)."""
    copies: dict[tuple[int, int], _Copy] = {}
    values: defaultdict[tuple[int, int], list[bytes]] = defaultdict(list)
    for partition, (_hw, logs) in replicas.items():
        batches = max(logs.values(), key=len, default=[])
        for batch in batches:
            header = read_batch_header(batch.data)
            if header is None or header.producer_id < 0 or header.base_sequence < 0:
                continue
            key = (partition, batch.base_offset)
            for record in decode_batches(batch.data, check_crcs=False):
                sequence = header.base_sequence + record.offset - header.base_offset
                copies[(partition, record.offset)] = _Copy(
                    key, (header.producer_id, header.producer_epoch, sequence))
                values[key].append(bytes(record.value or b""))
    return copies, values


def _resent_by_client(twice: Sequence[bytes], read_at: Mapping[bytes, list[tuple[int, int]]],
                      history: History) -> set[bytes]:
    """The values of ``twice`` whose copies carry different identities, where a send of
    the first copy's batch failed on the client: the client gave that batch up and sent
    its remaining records again as new ones."""
    if not twice or not history.replicas:
        return set()
    copies, batch_values = _copies(history.replicas)
    failed = {s.value for s in history.sends if s.outcome == FAILED}
    resent = set()
    for value in twice:
        found = [copies.get(place) for place in sorted(read_at[value])]
        if any(c is None for c in found) or len({c.identity for c in found if c}) < 2:
            continue
        first = found[0]
        if first is not None and failed.intersection(batch_values[first.batch]):
            resent.add(value)
    return resent


def _lost(acked: Sequence[Send], read_at: Mapping[bytes, list[tuple[int, int]]],
          log_start: Mapping[int, int]) -> list[bytes]:
    return [s.value for s in acked
            if not read_at.get(s.value) and s.offset >= log_start.get(s.partition, 0)]


def _reordered(acked: Sequence[Send], read_at: Mapping[bytes, list[tuple[int, int]]]
               ) -> list[tuple[str, int, bytes]]:
    """Per producer and partition, in send order, the read offsets must increase."""
    found = []
    last: dict[tuple[str, int], int] = {}
    for send in sorted(acked, key=lambda s: s.sent_at):
        places = [o for p, o in read_at.get(send.value, ()) if p == send.partition]
        if not places:
            continue
        key = (send.producer, send.partition)
        if key in last and places[0] <= last[key]:
            found.append((send.producer, send.partition, send.value))
        last[key] = max(last.get(key, -1), places[0])
    return found


def _inconsistent(acked: Sequence[Send], reads: Mapping[int, Sequence[tuple[int, bytes]]]
                  ) -> list[tuple[int, int]]:
    """(partition, offset) pairs that two acknowledgements, or an acknowledgement and the
    read, give different values."""
    values: defaultdict[tuple[int, int], set[bytes]] = defaultdict(set)
    for send in acked:
        values[(send.partition, send.offset)].add(send.value)
    for partition, records in reads.items():
        for offset, value in records:
            if (partition, offset) in values:
                values[(partition, offset)].add(value)
    return sorted(key for key, seen in values.items() if len(seen) > 1)


def diverges(replicas: Mapping[int, Sequence[Batch]], high_watermark: int) -> bool:
    """Whether the replicas differ below ``high_watermark``: each must hold every offset
    below it, and all must hold the same batches over the offsets each still has (retention
    may have deleted more on one of them)."""
    logs = [list(batches) for batches in replicas.values()]
    if high_watermark <= 0:
        return False
    if any(not log or log[-1].last_offset != high_watermark - 1 for log in logs):
        return True
    start = max(log[0].base_offset for log in logs)
    trimmed = [[b for b in log if b.base_offset >= start] for log in logs]
    return any(t != trimmed[0] for t in trimmed[1:])


def _backwards(commits: Iterable[tuple[float, str, int, int]]
               ) -> list[tuple[str, int, int, int]]:
    """(group, partition, earlier offset, later offset) for every drop."""
    highest: dict[tuple[str, int], int] = {}
    found = []
    for _t, group, partition, offset in sorted(commits):
        key = (group, partition)
        if key in highest and offset < highest[key]:
            found.append((group, partition, highest[key], offset))
        highest[key] = max(highest.get(key, offset), offset)
    return found


def unavailable_seconds(ack_times: Iterable[float]) -> float:
    times = sorted(ack_times)
    return sum(gap for a, b in itertools.pairwise(times)
               if (gap := b - a) > UNAVAILABLE_GAP_S)
