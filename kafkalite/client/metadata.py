"""When and how the client refreshes its :class:`ClusterMetadata`.

A refresh happens every ``metadata_max_age_ms``, as soon as someone asks for one (an unknown
topic, an error that invalidates metadata, a lost connection), and never more often than
``retry_backoff_ms`` while refreshes keep failing. Only one Metadata request is in flight at a
time. :meth:`MetadataRefresher.maybe_refresh` runs on the client's I/O thread; user threads
call :meth:`add_topics` and :meth:`await_update`.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any

from kafkalite.client.cluster import ClusterMetadata
from kafkalite.protocol import ApiKey

if TYPE_CHECKING:
    from kafkalite.client.client import KafkaClient

log = logging.getLogger(__name__)


class MetadataRefresher:
    """Keeps ``cluster`` fresh for the topics the application uses (or for all topics)."""

    def __init__(
        self,
        client: KafkaClient,
        cluster: ClusterMetadata,
        *,
        metadata_max_age_ms: int,
        retry_backoff_ms: int,
        allow_auto_topic_creation: bool,
        retry_backoff_max_ms: int | None = None,
        clock: Callable[[], float] = time.monotonic,
    ) -> None:
        self._client = client
        self.cluster = cluster
        self.metadata_max_age_ms = metadata_max_age_ms
        self._base_backoff = retry_backoff_ms / 1000
        self._max_backoff = max(retry_backoff_ms if retry_backoff_max_ms is None
                                else retry_backoff_max_ms, retry_backoff_ms) / 1000
        self._failures = 0
        self.allow_auto_topic_creation = allow_auto_topic_creation
        self.all_topics = False
        self._topics: set[str] = set()
        self._clock = clock
        self._in_flight = False
        self._last_attempt = -float("inf")
        self._updated = threading.Condition()
        self._asked = 0  # tickets handed out by request_update
        self._covers = 0  # the newest ticket the request in flight was built for
        self._answered = 0  # the newest ticket a received answer covers
        self._authentication_error: BaseException | None = None

    @property
    def retry_backoff(self) -> float:
        """Seconds between attempts: ``retry_backoff_ms`` doubling with each failed refresh
        in a row, up to ``retry_backoff_max_ms`` (the Java client's exponential backoff)."""
        return min(self._base_backoff * 2 ** min(self._failures, 16), self._max_backoff)

    @property
    def topics(self) -> frozenset[str]:
        return frozenset(self._topics)

    def add_topics(self, topics: Iterable[str]) -> None:
        """Start tracking ``topics``; a refresh is requested if any of them is new."""
        new = set(topics) - self._topics
        if new:
            self._topics = self._topics | new  # a new set: the I/O thread may be iterating
            self.request_update()

    def set_topics(self, topics: Iterable[str]) -> None:
        """Track exactly ``topics`` (a consumer changing its subscription)."""
        self._topics = set(topics)
        self.request_update()

    def request_update(self) -> int:
        """Ask for a refresh soon (from any thread); returns a ticket for :meth:`await_update`.

        The ticket is answered only by a Metadata request built after this call: one already
        in flight may be for other topics, or predate ``all_topics`` being set.
        """
        with self._updated:
            self._asked += 1
            ticket = self._asked
        self.cluster.request_update()
        self._client.start()
        self._client.wakeup()
        return ticket

    def await_update(self, ticket: int, timeout: float | None) -> None:
        """Block until a refresh answers ``ticket``; KafkaTimeoutError otherwise, or the
        broker's authentication error (wrong password ...) as soon as one is known."""
        with self._updated:
            if not self._updated.wait_for(
                    lambda: self._answered >= ticket or self._authentication_error is not None,
                    timeout):
                raise self._client.timeout_error(f"no metadata update within {timeout} s")
            if self._answered < ticket and self._authentication_error is not None:
                raise self._authentication_error

    def authentication_failed(self, error: BaseException | None) -> None:
        """A connection was refused authentication (None: one authenticated since): waiters
        get the error instead of waiting for a refresh that cannot come."""
        with self._updated:
            self._authentication_error = error
            self._updated.notify_all()

    # -- I/O thread ----------------------------------------------------------------------

    def maybe_refresh(self) -> float | None:
        """Send a Metadata request if one is due; the monotonic time to look again."""
        if self._in_flight:
            return None
        now = self._clock()
        now_ms = int(time.time() * 1000)
        if not self.cluster.needs_update(now_ms, self.metadata_max_age_ms):
            age_ms = now_ms - self.cluster.last_successful_refresh_ms
            return now + (self.metadata_max_age_ms - age_ms) / 1000
        if now < self._last_attempt + self.retry_backoff:
            return self._last_attempt + self.retry_backoff
        node = self._client.least_loaded_node()
        if node is None or not self._client.ready(node):
            return now + self.retry_backoff  # a connection is on its way; its state wakes us
        self._in_flight = True
        self._last_attempt = now
        self._covers = self._asked  # read before the body is built from topics/all_topics
        version = self._client.api_version(node, ApiKey.METADATA)
        future = self._client.send(node, ApiKey.METADATA, self._request_body(version))
        future.add_callback(self._on_response)
        future.add_errback(self._on_failure, node)
        return None

    def _request_body(self, version: int) -> dict[str, Any]:
        topics: list[dict[str, str]] | None
        if self.all_topics:
            topics = [] if version == 0 else None  # v0 spells "all topics" as an empty list
        else:
            topics = [{"name": t} for t in sorted(self._topics)]
        return {"topics": topics, "allow_auto_topic_creation": self.allow_auto_topic_creation}

    def _on_response(self, body: dict[str, Any]) -> None:
        self._in_flight = False
        self._failures = 0
        try:
            self.cluster.update_from_metadata(body, int(time.time() * 1000))
        except Exception:
            log.exception("cannot apply a Metadata response")
            return
        if not self.cluster.brokers():
            self.cluster.request_update()  # a cluster without brokers is not an answer
            return
        with self._updated:
            self._answered = max(self._answered, self._covers)
            asked_meanwhile = self._asked > self._answered
            self._updated.notify_all()
        if asked_meanwhile:
            self.cluster.request_update()  # the update above cleared the request flag

    def _on_failure(self, node: int, error: BaseException) -> None:
        self._in_flight = False
        self._failures += 1
        log.debug("Metadata request to node %s failed: %r", node, error)
