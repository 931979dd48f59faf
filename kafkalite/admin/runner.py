"""The I/O under the admin driver: sends what it asks for, refreshes metadata, sleeps.

:class:`AdminRunner` is deliberately thin: every decision (where to send, whether to retry,
when to give up) is :class:`~kafkalite.admin.driver.AdminApiDriver`'s. The runner only
turns its steps into :meth:`KafkaClient.send` calls and metadata refreshes on the client's
I/O thread, and checks that a broker serves the version a request needs before sending it.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Collection, Hashable, Iterable, Sequence
from typing import Any, TypeVar

from kafkalite.admin.driver import AdminApiDriver, OutgoingRequest
from kafkalite.admin.handler import AdminApiHandler, Request, api_name
from kafkalite.client.client import KafkaClient
from kafkalite.client.cluster import ClusterMetadata
from kafkalite.client.future import Future
from kafkalite.errors import KafkaError, KafkaTimeoutError
from kafkalite.protocol import ApiKey
from kafkalite.protocol.api import SUPPORTED_VERSIONS
from kafkalite.protocol.errors import UnsupportedVersionError
from kafkalite.structs import TopicPartition

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class MetadataView:
    """A client's cluster metadata as the lookup strategies read it, with the number of
    refreshes this call has made (``version``); the threaded and the asyncio admin runner
    both read their client's :class:`ClusterMetadata` through it."""

    def __init__(self, cluster: ClusterMetadata) -> None:
        self._cluster = cluster
        self.version = 0

    def broker_ids(self) -> Sequence[int]:
        return sorted(b.node_id for b in self._cluster.brokers())

    def controller(self) -> int | None:
        controller = self._cluster.controller_id
        return controller if controller >= 0 else None

    def partitions_for_topic(self, topic: str) -> Collection[int] | None:
        return self._cluster.partitions_for_topic(topic)

    def leader_for(self, tp: TopicPartition) -> int | None:
        return self._cluster.leader_for(tp)


class AdminRunner:
    """Runs admin calls over one :class:`KafkaClient`; ``api_timeout`` (seconds) bounds a
    whole call unless the call gives its own."""

    def __init__(self, client: KafkaClient, api_timeout: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.api_timeout = api_timeout
        self._clock = clock

    def run(self, handler: AdminApiHandler[K, V], keys: Iterable[K],
            timeout: float | None = None) -> dict[K, V]:
        """Each key's value (see :meth:`AdminApiDriver.result`)."""
        deadline = self._clock() + (self.api_timeout if timeout is None else timeout)
        driver: AdminApiDriver[K, V] = AdminApiDriver(
            handler, keys, deadline=deadline, clock=self._clock,
            retry_backoff_ms=self.client.config["retry_backoff_ms"],
            retry_backoff_max_ms=self.client.config["retry_backoff_max_ms"])
        view = MetadataView(self.client.cluster)
        while True:
            step = driver.poll(view)
            if step.done:
                return driver.result()
            if step.refresh_metadata:
                self.refresh_metadata(deadline)
                view.version += 1
            sent = [(request, self._send(request)) for request in step.requests]
            for request, future in sent:
                try:
                    body = future.get(max(deadline - self._clock(), 0.0))
                except KafkaError as exc:
                    driver.on_failure(request, exc)
                else:
                    driver.on_response(request, body)
            if not sent and not step.refresh_metadata and step.wake_at is not None:
                time.sleep(max(step.wake_at - self._clock(), 0.0))

    def refresh_metadata(self, deadline: float | None = None) -> None:
        """Wait for a Metadata answer newer than now (until ``deadline``, else the call
        timeout); a timeout is left to the caller's deadline."""
        metadata = self.client.metadata
        left = self.api_timeout if deadline is None else deadline - self._clock()
        try:
            metadata.await_update(metadata.request_update(), max(left, 0.0))
        except KafkaTimeoutError:
            if deadline is None:
                raise

    def wait_for_leaders(self, topics: list[str], timeout_ms: int) -> None:
        """Block until every partition of each topic has a leader in the client's metadata
        (KafkaTimeoutError naming the topics after ``timeout_ms``)."""
        deadline = self._clock() + timeout_ms / 1000
        self.client.metadata.add_topics(topics)
        cluster = self.client.cluster
        while True:
            partitions = {name: cluster.partitions_for_topic(name) for name in topics}
            if all(parts and all(cluster.leader_for(TopicPartition(name, p)) is not None
                                 for p in parts) for name, parts in partitions.items()):
                return
            left = deadline - self._clock()
            if left <= 0:
                raise KafkaTimeoutError(f"topics {sorted(topics)} not ready within "
                                        f"{timeout_ms} ms")
            self.refresh_metadata(self._clock() + min(left, 1.0))

    def broker_versions(self, node: int) -> dict[int, tuple[int, int]]:
        """What broker ``node`` serves (its ApiVersions ranges), connecting to it first."""
        conn = self.client.connection(node)
        if conn is None or not conn.is_ready():
            if node >= 0 and self.client.cluster.broker(node) is None:
                self.refresh_metadata()
            self.client.send(node, ApiKey.METADATA, {"topics": []}).get(self.api_timeout)
            conn = self.client.connection(node)
        return dict(conn.broker_versions) if conn is not None else {}

    def _send(self, outgoing: OutgoingRequest[Any]) -> Future[Any]:
        request = outgoing.request
        if request.min_version:
            try:
                served = self.broker_versions(outgoing.node).get(int(request.api_key),
                                                                 (-1, -1))[1]
            except KafkaError as exc:
                return _failed(exc)
            refusal = version_refusal(request, outgoing.node, served)
            if refusal is not None:
                return _failed(refusal)
        return self.client.send(outgoing.node, request.api_key, request.body)


def version_refusal(request: Request, node: int, served: int) -> UnsupportedVersionError | None:
    """The error for ``request`` when broker ``node`` (serving up to v``served`` of its API,
    -1 for none) or kafkalite cannot carry it at its ``min_version``; None when both can."""
    ours = SUPPORTED_VERSIONS.get(request.api_key, (-1, -1))[1]
    if min(served, ours) >= request.min_version:
        return None
    limit = f"broker {node} serves " + (f"up to v{served}" if served >= 0 else "none") \
        if served < ours else f"kafkalite sends up to v{ours}"
    return UnsupportedVersionError(f"{request.needs} needs {api_name(request.api_key)} "
                                   f"({int(request.api_key)}) v{request.min_version}; {limit}")


def _failed(error: BaseException) -> Future[Any]:
    future: Future[Any] = Future()
    future.failure(error)
    return future
