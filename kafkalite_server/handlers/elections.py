"""ElectLeaders (43): preferred or unclean leader elections, run by the controller.

The request names partitions (or none: every partition). The controller decides and writes
each election; this broker then answers once its own metadata cache shows the new leaders
(Kafka's DelayedElectLeader), or REQUEST_TIMED_OUT for those still pending at
``timeout_ms``. A partition whose leader is already the one asked for is
ELECTION_NOT_NEEDED. In a ZooKeeper cluster only the elected controller runs elections:
another broker answers NOT_CONTROLLER (v1+ also at the top level) and the client follows
the controller id of its metadata.

Elections need Alter on the Cluster, as in Kafka: anyone else is answered
CLUSTER_AUTHORIZATION_FAILED and nothing is elected. An UNCLEAN election requested here is
the operator's explicit override of ``unclean.leader.election.enable`` (the controller's own
elections keep honouring it); it may lose acknowledged records, which is why only a
principal trusted with the Cluster may ask for one.
"""

from __future__ import annotations

from typing import Any

from kafkalite.protocol.errors import (
    BrokerResponseError,
    RequestTimedOutError,
)
from kafkalite_server.cluster.election_requests import ElectionType, election_type
from kafkalite_server.cluster.metadata_cache import MetadataCache
from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import ALTER_CLUSTER, requires

Outcome = int | BrokerResponseError
"""The partition's leader after the election, or why there was none."""


def _wanted(body: dict[str, Any]) -> list[tuple[str, int]] | None:
    """The partitions named, once each; None for every partition."""
    return None if body["topic_partitions"] is None else list(dict.fromkeys(
        (entry["topic"], index) for entry in body["topic_partitions"]
        for index in entry["partitions"]))


def _refusal(body: dict[str, Any], errno: int) -> dict[str, Any]:
    """The answer without Alter on the Cluster: the error at the top and on each partition."""
    refused = ALTER_CLUSTER.error("electing leaders needs Alter on the Cluster")
    return _response(errno, dict.fromkeys(_wanted(body) or (), refused))


@requires(ALTER_CLUSTER, deny=_refusal)
async def handle_elect_leaders(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    wanted = _wanted(body)
    try:
        kind = (ElectionType.PREFERRED if ctx.api_version == 0
                else election_type(body["election_type"]))
        outcomes: dict[tuple[str, int], Outcome] = await ctx.broker.controller.elect_on_request(
            kind, wanted)
    except BrokerResponseError as exc:
        return _response(exc.errno, {key: exc for key in wanted or ()})
    await _until_known(ctx.broker.metadata_cache, outcomes, body["timeout_ms"])
    return _response(0, outcomes)


async def _until_known(cache: MetadataCache, outcomes: dict[tuple[str, int], Outcome],
                       timeout_ms: int) -> None:
    """Waits, woken by each UpdateMetadata rather than polling, for the cache to show each
    elected leader (Kafka's DelayedElectLeader); those it never shows become
    REQUEST_TIMED_OUT in ``outcomes``."""
    def pending() -> list[tuple[str, int]]:
        return [key for key, outcome in outcomes.items() if not isinstance(
            outcome, BrokerResponseError) and _leader(cache, key) != outcome]

    if await cache.wait_until(lambda: not pending(), max(timeout_ms, 0) / 1000):
        return
    for key in pending():
        outcomes[key] = RequestTimedOutError(
            f"{key[0]}-{key[1]}: broker {outcomes[key]} was elected but this broker "
            "has not heard of it yet")


def _leader(cache: MetadataCache, key: tuple[str, int]) -> int | None:
    state = cache.partition(*key)
    return None if state is None else state.leader


def _response(error_code: int, outcomes: dict[tuple[str, int], Outcome]) -> dict[str, Any]:
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), outcome in outcomes.items():
        if isinstance(outcome, BrokerResponseError):
            code, message = outcome.errno, outcome.context or outcome.message
        else:
            code, message = 0, None
        by_topic.setdefault(topic, []).append(
            {"partition_id": index, "error_code": code, "error_message": message})
    return {"throttle_time_ms": 0, "error_code": error_code, "replica_election_results": [
        {"topic": topic, "partition_result": results} for topic, results in by_topic.items()]}
