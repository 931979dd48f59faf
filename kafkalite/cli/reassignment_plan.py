"""kafka-reassign-partitions' JSON documents and the plan ``--generate`` proposes. Pure:
text in, documents out; the command (:mod:`kafkalite.cli.commands.partitions`) does the I/O.

The two documents are Kafka's:

- topics to move: ``{"version": 1, "topics": [{"topic": "orders"}]}``;
- a reassignment: ``{"version": 1, "partitions": [{"topic": "orders", "partition": 0,
  "replicas": [1, 2], "log_dirs": ["any", "any"]}]}`` (``log_dirs`` optional).

The proposal differs from Kafka's on purpose: Kafka's tool places every partition afresh
(a random start), so most replicas move; this one keeps every replica it can and moves
only what balance needs. Each partition keeps its replication factor; a broker keeps at
most its share (replicas over brokers, rounded up) of replicas, first replicas of every
partition counted before second ones, and new replicas go to the least loaded brokers;
a partition's replicas go
to distinct racks while racks remain unused; then each partition's preferred leader is the
replica with the fewest preferred leaderships so far (the current one on a tie).
"""

from __future__ import annotations

import json
import math
from collections import Counter
from collections.abc import Mapping
from typing import Any

from kafkalite.cli.options import CliError

Plan = dict[tuple[str, int], list[int]]


def parse_topics_to_move(text: str, source: str) -> list[str]:
    document = _load(text, source)
    try:
        topics = [str(entry["topic"]) for entry in document["topics"]]
    except (KeyError, TypeError) as exc:
        raise CliError(f"{source}: expected {{\"topics\": [{{\"topic\": NAME}}, ...]}}, "
                       f"missing or wrong {exc}") from None
    if not topics:
        raise CliError(f"{source}: no topics to move")
    return topics


def parse_reassignment(text: str, source: str) -> Plan:
    """A reassignment document; CliError naming the partition for a repeated partition, an
    empty replica list or a broker named twice."""
    document = _load(text, source)
    plan: Plan = {}
    try:
        for entry in document["partitions"]:
            key = (str(entry["topic"]), int(entry["partition"]))
            replicas = [int(b) for b in entry["replicas"]]
            name = f"{key[0]}-{key[1]}"
            if key in plan:
                raise CliError(f"{source}: partition {name} appears more than once")
            if not replicas:
                raise CliError(f"{source}: partition {name} has an empty replica list")
            if len(set(replicas)) != len(replicas):
                raise CliError(f"{source}: partition {name} names a broker twice: {replicas}")
            plan[key] = replicas
    except (KeyError, TypeError, ValueError) as exc:
        raise CliError(f"{source}: expected {{\"partitions\": [{{\"topic\", \"partition\", "
                       f"\"replicas\"}}, ...]}}, missing or wrong {exc}") from None
    if not plan:
        raise CliError(f"{source}: no partitions to reassign")
    return plan


def _load(text: str, source: str) -> Any:
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise CliError(f"{source}: not JSON ({exc})") from None
    if not isinstance(document, dict):
        raise CliError(f"{source}: expected a JSON object")
    return document


def render(plan: Plan) -> str:
    """The reassignment document, as Kafka's tool prints it (one line)."""
    return json.dumps({"version": 1, "partitions": [
        {"topic": topic, "partition": index, "replicas": replicas,
         "log_dirs": ["any"] * len(replicas)}
        for (topic, index), replicas in sorted(plan.items())]}, separators=(",", ":"))


def propose(current: Plan, brokers: Mapping[int, str | None]) -> Plan:
    """A balanced, rack-aware plan for ``current`` over ``brokers`` (id -> rack) that
    moves as few replicas as it can."""
    factor = max((len(replicas) for replicas in current.values()), default=0)
    if factor > len(brokers):
        raise CliError(f"replication factor {factor} is larger than the {len(brokers)} "
                       f"brokers of --broker-list")
    total = sum(len(replicas) for replicas in current.values())
    share = math.ceil(total / len(brokers)) if brokers else 0
    racks = set(brokers.values())
    load: Counter[int] = Counter()
    plan: Plan = {key: [] for key in sorted(current)}
    for position in range(factor):  # every partition's first replica before any second
        for key, replicas in sorted(current.items()):
            kept = plan[key]
            broker = replicas[position] if position < len(replicas) else None
            if (broker is not None and broker in brokers and load[broker] < share
                    and _rack_free(brokers, kept, broker, racks)):
                kept.append(broker)
                load[broker] += 1
    for key, replicas in sorted(current.items()):
        chosen = plan[key]
        while len(chosen) < len(replicas):
            candidates = [b for b in brokers if b not in chosen]
            best = min(candidates, key=lambda b: (not _rack_free(brokers, chosen, b, racks),
                                                  load[b], b))
            chosen.append(best)
            load[best] += 1
    return _balance_leaders(plan, len(brokers))


def _rack_free(brokers: Mapping[int, str | None], chosen: list[int], broker: int,
               racks: set[str | None]) -> bool:
    """The broker's rack holds none of the partition's replicas yet, or every rack does."""
    used = {brokers[b] for b in chosen}
    return brokers[broker] not in used or used >= racks


def _balance_leaders(plan: Plan, broker_count: int) -> Plan:
    """Each broker leads at most its share of partitions where the replicas allow it: a
    greedy pick (fewest leaderships so far, the current leader on a tie), then moves from
    brokers over their share to a replica under it."""
    share = math.ceil(len(plan) / broker_count) if broker_count else 0
    leaders: Counter[int] = Counter()
    chosen: dict[tuple[str, int], int] = {}
    for key, replicas in sorted(plan.items()):
        first = replicas[0]
        if leaders[first] >= share:
            first = min(replicas, key=lambda b: (leaders[b], replicas.index(b)))
        leaders[first] += 1
        chosen[key] = first
    for key, replicas in sorted(plan.items()):
        under = [b for b in replicas if leaders[b] < share]
        if leaders[chosen[key]] > share and under:
            leaders[chosen[key]] -= 1
            chosen[key] = under[0]
            leaders[under[0]] += 1
    return {key: [chosen[key], *(b for b in replicas if b != chosen[key])]
            for key, replicas in sorted(plan.items())}
