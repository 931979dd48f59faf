"""Topics and partitions: CreateTopics, DeleteTopics and CreatePartitions, all answered by
the controller, and the topic descriptions read from metadata.

``create_topics`` takes kafka-python 3's forms besides :class:`NewTopic`: a dict
``{name: {"num_partitions": 3, "replication_factor": 1, "assignments": {...},
"configs": {...}}}`` or a list of names (the broker's defaults). ``create_partitions`` takes
``{name: NewPartitions(...)}``, ``{name: total_count}`` or ``{name: {"count": n,
"assignments": [[broker ids], ...]}}``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import Controller
from kafkalite.protocol import ApiKey
from kafkalite.protocol.primitives import ZERO_UUID
from kafkalite.structs import PartitionMetadata

TOPIC_OPTIONS = frozenset({"num_partitions", "replication_factor", "assignments", "configs"})
"""The keys of kafka-python 3's dict form of a topic to create."""


@dataclass(frozen=True, init=False)
class NewTopic:
    """A topic to create; -1 partitions / replication factor mean the broker's defaults.

    Takes kafka-python's arguments in its order (``name, num_partitions, replication_factor,
    replica_assignments, topic_configs``); ``config=`` is the same as ``topic_configs=``.
    """

    name: str
    num_partitions: int
    replication_factor: int
    replica_assignments: Mapping[int, Sequence[int]]
    config: Mapping[str, str]

    def __init__(self, name: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignments: Mapping[int, Sequence[int]] | None = None,
                 topic_configs: Mapping[str, str] | None = None, *,
                 config: Mapping[str, str] | None = None) -> None:
        if topic_configs is not None and config is not None:
            raise ValueError("give topic_configs or config, not both")
        for attr, value in (("name", name), ("num_partitions", num_partitions),
                            ("replication_factor", replication_factor),
                            ("replica_assignments", dict(replica_assignments or {})),
                            ("config", dict(topic_configs or config or {}))):
            object.__setattr__(self, attr, value)

    @property
    def topic_configs(self) -> Mapping[str, str]:
        """kafka-python's name for :attr:`config`."""
        return self.config


@dataclass(frozen=True)
class NewPartitions:
    """Grow a topic to ``total_count`` partitions (optionally placing the new ones)."""

    total_count: int
    new_assignments: Sequence[Sequence[int]] | None = None


@dataclass(frozen=True)
class TopicDescription:
    name: str
    internal: bool
    partitions: list[PartitionMetadata]


NewTopics = Iterable[NewTopic | str] | Mapping[str, Mapping[str, Any]]
"""What ``create_topics`` takes: NewTopics, names, or kafka-python 3's dict form."""

PartitionCounts = Mapping[str, NewPartitions | int | Mapping[str, Any]]
"""What ``create_partitions`` takes, by topic name."""


def as_new_topics(topics: NewTopics) -> list[NewTopic]:
    """``topics`` in any accepted form as NewTopics; a wrong form raises naming it."""
    if isinstance(topics, Mapping):
        found = []
        for name, options in topics.items():
            if not isinstance(options, Mapping):
                raise TypeError(f"create_topics: the options of topic {name!r} must be a dict "
                                f"like {{'num_partitions': 3}}, not {options!r}")
            unknown = sorted(set(options) - TOPIC_OPTIONS)
            if unknown:
                raise ValueError(f"create_topics: topic {name!r} has unknown options "
                                 f"{', '.join(unknown)} (known: {', '.join(sorted(TOPIC_OPTIONS))})")
            found.append(NewTopic(name, options.get("num_partitions", -1),
                                  options.get("replication_factor", -1),
                                  options.get("assignments"), options.get("configs")))
        return found
    if isinstance(topics, str):
        raise TypeError(f"create_topics takes a list of topics, not the string {topics!r}")
    found = []
    for item in topics:
        if isinstance(item, str):
            found.append(NewTopic(item))
        elif isinstance(item, NewTopic):
            found.append(item)
        else:
            raise TypeError(f"create_topics: {item!r} is neither a NewTopic nor a topic name")
    return found


def as_new_partitions(counts: PartitionCounts) -> dict[str, NewPartitions]:
    """``create_partitions``' argument in any accepted form, as NewPartitions by topic."""
    found = {}
    for name, spec in counts.items():
        if isinstance(spec, NewPartitions):
            found[name] = spec
        elif isinstance(spec, int) and not isinstance(spec, bool):
            found[name] = NewPartitions(spec)
        elif isinstance(spec, Mapping) and "count" in spec:
            found[name] = NewPartitions(spec["count"], spec.get("assignments"))
        else:
            raise TypeError(f"create_partitions: topic {name!r} needs NewPartitions, a total "
                            f"count or {{'count': n, 'assignments': [...]}}, not {spec!r}")
    return found


class TopicResults(AdminApiHandler[str, dict[str, Any]]):
    """What the controller's per-topic answers share: a topic's result is the answer's
    entry (kafka-python 3's dict); an error raises naming the topic unless
    ``raise_errors`` is False, when the entry is the answer."""

    results_field = "topics"
    doing = "creating"
    result_keys: tuple[str, ...] = ("name", "error_code", "error_message")
    """What a topic's result holds (the documented shape, whatever version answered)."""

    def __init__(self, raise_errors: bool = True) -> None:
        super().__init__(Controller())
        self.raise_errors = raise_errors

    def handle_response(self, node: int, keys: Sequence[str],
                        body: Mapping[str, Any]) -> ApiResult[str, dict[str, Any]]:
        outcome: ApiResult[str, dict[str, Any]] = ApiResult()
        for entry in body[self.results_field]:
            name = entry["name"]
            context = f"{self.doing} topic {name!r}"
            code, message = entry["error_code"], entry.get("error_message")
            result = {key: entry.get(key) for key in self.result_keys}
            if self.raise_errors:
                if not outcome.error(name, code, context, message):
                    outcome.complete(name, result)
            elif not outcome.routed(name, code, context, message):
                outcome.complete(name, result)
        return outcome


class CreateTopics(TopicResults):
    api_key = ApiKey.CREATE_TOPICS

    def __init__(self, topics: Sequence[NewTopic], timeout_ms: int, validate_only: bool,
                 raise_errors: bool = True) -> None:
        super().__init__(raise_errors)
        self.topics = {t.name: t for t in topics}
        self.timeout_ms = timeout_ms
        self.validate_only = validate_only

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {
            "topics": [{
                "name": t.name, "num_partitions": t.num_partitions,
                "replication_factor": t.replication_factor,
                "assignments": [{"partition_index": p, "broker_ids": list(ids)}
                                for p, ids in t.replica_assignments.items()],
                "configs": [{"name": k, "value": v} for k, v in t.config.items()],
            } for t in (self.topics[name] for name in keys)],
            "timeout_ms": self.timeout_ms, "validate_only": self.validate_only})


class DeleteTopics(TopicResults):
    api_key = ApiKey.DELETE_TOPICS
    results_field = "responses"
    doing = "deleting"
    result_keys = ("name", "error_code")

    def __init__(self, timeout_ms: int, raise_errors: bool = True) -> None:
        super().__init__(raise_errors)
        self.timeout_ms = timeout_ms

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        # v6+ names topics in ``topics`` (by name here; a topic id is the other choice)
        return Request(self.api_key, {"topic_names": list(keys), "timeout_ms": self.timeout_ms,
                                      "topics": [{"name": name, "topic_id": ZERO_UUID}
                                                 for name in keys]})


class CreatePartitions(TopicResults):
    api_key = ApiKey.CREATE_PARTITIONS
    results_field = "results"
    doing = "adding partitions to"

    def __init__(self, counts: Mapping[str, NewPartitions], timeout_ms: int,
                 validate_only: bool, raise_errors: bool = True) -> None:
        super().__init__(raise_errors)
        self.counts = counts
        self.timeout_ms = timeout_ms
        self.validate_only = validate_only

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {
            "topics": [{"name": name, "count": self.counts[name].total_count,
                        "assignments": None if self.counts[name].new_assignments is None else
                        [{"broker_ids": list(ids)} for ids in self.counts[name].new_assignments
                         or ()]}
                       for name in keys],
            "timeout_ms": self.timeout_ms, "validate_only": self.validate_only})
