"""Kafka's RequestMetrics: how many requests of each API and version, and how long they
took, counted by the network dispatch."""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from kafkalite.protocol import ApiKey
from kafkalite_server.metrics.latency import LatencyHistogram

FETCH_CONSUMER = "FetchConsumer"
FETCH_FOLLOWER = "FetchFollower"
"""Kafka meters Fetch apart by who asks: a consumer or a follower replica."""


def request_name(api_key: int, body: dict[str, Any]) -> str:
    """The ``request`` label Kafka gives a request (``Produce``, ``FetchConsumer`` ...)."""
    if api_key == ApiKey.FETCH:
        replica_id = body.get("replica_id", -1)
        state = body.get("replica_state")
        if state is not None:
            replica_id = max(replica_id, state.get("replica_id", -1))
        return FETCH_FOLLOWER if replica_id >= 0 else FETCH_CONSUMER
    return _NAMES.get(api_key) or str(api_key)


_NAMES = {int(key): "".join(word.capitalize() for word in key.name.split("_"))
          for key in ApiKey}


class RequestCounters:
    __slots__ = ("latency", "requests")

    def __init__(self) -> None:
        self.requests: defaultdict[tuple[str, int], int] = defaultdict(int)
        """(request name, api version): requests answered or failed in their handler."""
        self.latency: defaultdict[str, LatencyHistogram] = defaultdict(LatencyHistogram)
        """Total time from the decoded request to the encoded response, per request name."""

    def record(self, name: str, version: int, elapsed_ms: float) -> None:
        self.requests[name, version] += 1
        self.latency[name].observe(elapsed_ms)
