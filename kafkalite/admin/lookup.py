"""Which broker answers for a key: the lookup strategies of the admin APIs.

Kafka's admin client routes every request one of a few ways, and so does this module:

- :class:`AnyBroker`: any broker will do (ACLs, SCRAM users, DescribeCluster);
- :class:`Controller`: the active controller (topic creation and deletion, elections);
- :class:`Coordinator`: the coordinator of a group or a transactional id, found with
  FindCoordinator, a request of its own;
- :class:`PartitionLeader`: each partition's leader (DeleteRecords, ListOffsets,
  DescribeProducers);
- :class:`EachBroker`: the keys are broker ids (ListGroups, DescribeLogDirs and
  ListTransactions go to every broker);
- :class:`GivenBroker`: the broker the caller named (``group_coordinator_id``,
  ``partition_leader_id``, ``broker_id``); nothing to look up, and a routing error is
  the caller's answer, not a reason to go elsewhere.

The metadata-based strategies read a :class:`ClusterView`; none does I/O, so the driver
(and a unit test) decides when the view is stale.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from kafkalite.admin.handler import Request
from kafkalite.client.coordinator import GROUP_KEY
from kafkalite.errors import MetadataEmptyBrokerList
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    LeaderNotAvailableError,
    UnknownTopicOrPartitionError,
    error_for_code,
)
from kafkalite.structs import TopicPartition

K = TypeVar("K", bound=Hashable)

CLUSTER = "cluster"
"""The one key of a call about the whole cluster (DescribeCluster)."""


class ClusterView(Protocol):
    """What the metadata-based strategies read about the cluster."""

    @property
    def version(self) -> int:
        """How many metadata refreshes this call has seen: 0 before the first one."""

    def broker_ids(self) -> Sequence[int]:
        """The known brokers' ids, ascending."""

    def controller(self) -> int | None:
        """The active controller's id, None when the metadata names none."""

    def partitions_for_topic(self, topic: str) -> Collection[int] | None:
        """The topic's partition ids, None for a topic the metadata does not have."""

    def leader_for(self, tp: TopicPartition) -> int | None:
        """The partition's leader, None while it has none."""


@dataclass
class LookupResult(Generic[K]):
    """Where each key goes: ``mapped`` to a broker, ``failed`` for good, or still unknown
    (``unmapped``, with the reason, to try again on fresher metadata)."""

    mapped: dict[K, int] = field(default_factory=dict)
    failed: dict[K, BaseException] = field(default_factory=dict)
    unmapped: dict[K, BaseException] = field(default_factory=dict)


class LookupStrategy(Generic[K]):
    """How a key's broker is found; see the module docstring."""

    needs_fresh_metadata: ClassVar[bool] = False
    """True when a lookup must read metadata fetched during the call (where a topic's
    leader or the controller is now), not whatever the client had cached."""
    fixed: ClassVar[bool] = False
    """True when the caller chose the broker: a routing error then fails the key."""
    by_request: ClassVar[bool] = False
    """True for strategies that ask a broker (FindCoordinator) instead of metadata."""

    def lookup(self, keys: Collection[K], view: ClusterView) -> LookupResult[K]:
        """Map ``keys`` from metadata (the metadata-based strategies)."""
        raise NotImplementedError(type(self).__name__)

    def build_request(self, key: K) -> Request:
        """The lookup request for ``key`` (the request-based strategies)."""
        raise NotImplementedError(type(self).__name__)

    def handle_response(self, key: K, body: Mapping[str, Any]) -> LookupResult[K]:
        """What the lookup answer says about ``key`` (the request-based strategies)."""
        raise NotImplementedError(type(self).__name__)


class AnyBroker(LookupStrategy[K]):
    """Any broker answers; the lowest id, so that repeated calls reuse one connection."""

    def lookup(self, keys: Collection[K], view: ClusterView) -> LookupResult[K]:
        brokers = view.broker_ids()
        result: LookupResult[K] = LookupResult()
        for key in keys:
            if brokers:
                result.mapped[key] = brokers[0]
            else:
                result.unmapped[key] = MetadataEmptyBrokerList("no broker is known yet")
        return result


class Controller(AnyBroker[K]):
    """The active controller, from metadata fetched during the call; a broker that names no
    controller yet gets the request anyway and answers NOT_CONTROLLER if it must."""

    needs_fresh_metadata = True

    def lookup(self, keys: Collection[K], view: ClusterView) -> LookupResult[K]:
        controller = view.controller()
        if controller is None:
            return super().lookup(keys, view)
        return LookupResult(mapped=dict.fromkeys(keys, controller))


class EachBroker(LookupStrategy[int]):
    """The keys are broker ids: each goes to its own broker."""

    fixed = True

    def lookup(self, keys: Collection[int], view: ClusterView) -> LookupResult[int]:
        return LookupResult(mapped={node: node for node in keys})


class GivenBroker(LookupStrategy[K]):
    """Every key goes to the broker the caller named."""

    fixed = True

    def __init__(self, node: int) -> None:
        self.node = node

    def lookup(self, keys: Collection[K], view: ClusterView) -> LookupResult[K]:
        return LookupResult(mapped=dict.fromkeys(keys, self.node))


class PartitionLeader(LookupStrategy[TopicPartition]):
    """Each partition's leader, from metadata fetched during the call. A topic or partition
    that fresh metadata does not have fails naming it; a partition without a leader (an
    election under way) waits for one."""

    needs_fresh_metadata = True

    def lookup(self, keys: Collection[TopicPartition],
               view: ClusterView) -> LookupResult[TopicPartition]:
        result: LookupResult[TopicPartition] = LookupResult()
        for tp in keys:
            partitions = view.partitions_for_topic(tp.topic)
            leader = view.leader_for(tp)
            if partitions is None or tp.partition not in partitions:
                what = f"topic {tp.topic!r}" if partitions is None else \
                    f"{tp.topic}-{tp.partition}: topic {tp.topic!r} has {len(partitions)} " \
                    f"partitions"
                result.failed[tp] = UnknownTopicOrPartitionError(what)
            elif leader is None or leader < 0:
                result.unmapped[tp] = LeaderNotAvailableError(f"{tp.topic}-{tp.partition} has "
                                                              "no leader")
            else:
                result.mapped[tp] = leader
        return result


class Coordinator(LookupStrategy[str]):
    """The coordinator of a group (``key_type`` GROUP_KEY) or a transactional id
    (TRANSACTION_KEY), asked of any broker with FindCoordinator."""

    by_request = True

    def __init__(self, key_type: int = GROUP_KEY) -> None:
        self.key_type = key_type

    def build_request(self, key: str) -> Request:
        return Request(ApiKey.FIND_COORDINATOR, {"key": key, "key_type": self.key_type,
                                                 "coordinator_keys": [key]})

    def handle_response(self, key: str, body: Mapping[str, Any]) -> LookupResult[str]:
        if body.get("coordinators"):  # v4+: one entry per key asked
            body = body["coordinators"][0]
        code = body["error_code"]
        if not code:
            return LookupResult(mapped={key: int(body["node_id"])})
        what = "group" if self.key_type == GROUP_KEY else "transactional id"
        message = body.get("error_message")
        error = error_for_code(code)(f"finding the coordinator of {what} {key!r}"
                                     + (f": {message}" if message else ""))
        if error.retriable:  # not elected or still loading: ask again after a backoff
            return LookupResult(unmapped={key: error})
        return LookupResult(failed={key: error})
