"""The one place that routes, retries and times out admin requests (Kafka's AdminApiDriver).

Sans-IO: the driver never sends or sleeps. :meth:`AdminApiDriver.poll` says what to do
next (requests to send, whether metadata must be refreshed first, when to look again);
:meth:`~AdminApiDriver.on_response` and :meth:`~AdminApiDriver.on_failure` feed the outcome
back. :class:`kafkalite.admin.runner.AdminRunner` does the I/O; a unit test drives the
same decisions with a fake clock and a fake cluster.

Each key of a call (a topic, a group, a partition, a broker id) moves through the states
of :data:`TRANSITIONS` on its own, so a routing error on one partition re-routes that
partition while the others complete. Retries back off exponentially from
``retry_backoff_ms`` to ``retry_backoff_max_ms`` (the Java client's KIP-580 rule); at the
deadline every unfinished key fails with :class:`KafkaTimeoutError` naming the last error
it saw.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Hashable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Generic, TypeVar

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import ClusterView, LookupResult
from kafkalite.errors import (
    KafkaError,
    KafkaTimeoutError,
    ProtocolDecodeError,
    UnknownBrokerIdError,
)

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class KeyState(enum.Enum):
    UNMAPPED = "unmapped"
    """Its broker is not known: look it up (after ``retry_at``)."""
    LOOKING_UP = "looking up"
    """A lookup request (FindCoordinator) is out for it."""
    MAPPED = "mapped"
    """Its broker is known: send (after ``retry_at``)."""
    IN_FLIGHT = "in flight"
    DONE = "done"
    FAILED = "failed"


class Event(enum.Enum):
    LOOKUP_SENT = "lookup sent"
    MAPPED = "mapped"
    SENT = "sent"
    COMPLETED = "completed"
    FAILED = "failed"
    LOOK_UP_AGAIN = "look up again"
    RETRY = "retry"


TRANSITIONS: Mapping[tuple[KeyState, Event], KeyState] = {
    (KeyState.UNMAPPED, Event.LOOKUP_SENT): KeyState.LOOKING_UP,
    (KeyState.UNMAPPED, Event.MAPPED): KeyState.MAPPED,
    (KeyState.UNMAPPED, Event.LOOK_UP_AGAIN): KeyState.UNMAPPED,
    (KeyState.UNMAPPED, Event.FAILED): KeyState.FAILED,
    (KeyState.LOOKING_UP, Event.MAPPED): KeyState.MAPPED,
    (KeyState.LOOKING_UP, Event.LOOK_UP_AGAIN): KeyState.UNMAPPED,
    (KeyState.LOOKING_UP, Event.FAILED): KeyState.FAILED,
    (KeyState.MAPPED, Event.SENT): KeyState.IN_FLIGHT,
    (KeyState.MAPPED, Event.LOOK_UP_AGAIN): KeyState.UNMAPPED,
    (KeyState.MAPPED, Event.FAILED): KeyState.FAILED,
    (KeyState.IN_FLIGHT, Event.COMPLETED): KeyState.DONE,
    (KeyState.IN_FLIGHT, Event.FAILED): KeyState.FAILED,
    (KeyState.IN_FLIGHT, Event.LOOK_UP_AGAIN): KeyState.UNMAPPED,
    (KeyState.IN_FLIGHT, Event.RETRY): KeyState.MAPPED,
}
"""Every move a key can make; anything else is a bug and raises."""

TERMINAL = frozenset({KeyState.DONE, KeyState.FAILED})


@dataclass(frozen=True)
class OutgoingRequest(Generic[K]):
    """A request the driver wants sent to broker ``node`` about ``keys``."""

    node: int
    keys: tuple[K, ...]
    request: Request
    lookup: bool = False
    """True for a lookup (FindCoordinator), False for the API's own request."""


@dataclass(frozen=True)
class Step(Generic[K]):
    """What to do now: refresh metadata, send ``requests``, or wait until ``wake_at``."""

    requests: list[OutgoingRequest[K]] = field(default_factory=list)
    refresh_metadata: bool = False
    wake_at: float | None = None
    done: bool = False


@dataclass
class _KeyProgress:
    state: KeyState = KeyState.UNMAPPED
    node: int | None = None
    retry_at: float = float("-inf")
    attempts: int = 0
    last_error: BaseException | None = None
    seen_version: int = -1
    """The metadata version on which a lookup last found nothing (look again on a newer one)."""
    missing_since: int | None = None
    """The metadata version on which its broker was first missing from the metadata."""


class AdminApiDriver(Generic[K, V]):
    """Drives one call of ``handler`` over ``keys`` to completion; see the module docstring."""

    def __init__(self, handler: AdminApiHandler[K, V], keys: Iterable[K], *, deadline: float,
                 clock: Callable[[], float], retry_backoff_ms: int = 100,
                 retry_backoff_max_ms: int = 1000) -> None:
        self.handler = handler
        self.deadline = deadline
        self._clock = clock
        self._started = clock()
        self._backoff = retry_backoff_ms / 1000
        self._max_backoff = max(retry_backoff_max_ms, retry_backoff_ms) / 1000
        self._keys: dict[K, _KeyProgress] = {key: _KeyProgress() for key in keys}
        self._values: dict[K, V] = {}
        self._refresh_wanted = False
        self._view_version = 0

    # -- state ---------------------------------------------------------------------------

    def state(self, key: K) -> KeyState:
        return self._keys[key].state

    @property
    def done(self) -> bool:
        return all(p.state in TERMINAL for p in self._keys.values())

    def result(self) -> dict[K, V]:
        """Each key's value, in the order the keys were given; the first failed key (in that
        order) raises its error."""
        for progress in self._keys.values():
            if progress.state is KeyState.FAILED and progress.last_error is not None:
                raise progress.last_error
        return {key: self._values[key] for key in self._keys if key in self._values}

    def _move(self, key: K, event: Event, error: BaseException | None = None,
              delay: bool = False) -> _KeyProgress:
        progress = self._keys[key]
        target = TRANSITIONS.get((progress.state, event))
        if target is None:
            raise AssertionError(f"{self.handler.name}: key {key!r} cannot go from "
                                 f"{progress.state.value} on {event.value}")
        progress.state = target
        if error is not None:
            progress.last_error = error
        if delay:
            progress.attempts += 1
            wait = min(self._backoff * 2 ** (progress.attempts - 1), self._max_backoff)
            progress.retry_at = self._clock() + wait
        return progress

    # -- deciding ------------------------------------------------------------------------

    def poll(self, view: ClusterView) -> Step[K]:
        """What to do next, given what the cluster looks like now."""
        now = self._clock()
        self._view_version = view.version
        if now >= self.deadline:
            self._time_out()
        if self.done:
            return Step(done=True)
        refresh = self._refresh_wanted
        self._refresh_wanted = False
        requests: list[OutgoingRequest[K]] = []
        refresh |= self._look_up(view, now, requests)
        refresh |= self._send_mapped(view, now, requests)
        if self.done:  # a lookup or a missing broker failed the last keys
            return Step(done=True)
        if refresh:
            return Step(requests, refresh_metadata=True)
        waiting = [p.retry_at for p in self._keys.values()
                   if p.state in (KeyState.UNMAPPED, KeyState.MAPPED) and p.retry_at > now]
        wake_at = min([*waiting, self.deadline]) if not requests else None
        return Step(requests, wake_at=wake_at)

    def _due(self, state: KeyState, now: float) -> list[K]:
        return [key for key, p in self._keys.items() if p.state is state and p.retry_at <= now]

    def _look_up(self, view: ClusterView, now: float,
                 requests: list[OutgoingRequest[K]]) -> bool:
        """Map the due unmapped keys (or queue their lookup requests); True when fresher
        metadata is needed first."""
        strategy = self.handler.lookup
        due = self._due(KeyState.UNMAPPED, now)
        if not due:
            return False
        if strategy.by_request:
            brokers = view.broker_ids()
            if not brokers:
                return True
            for key in due:
                requests.append(OutgoingRequest(brokers[0], (key,),
                                                strategy.build_request(key), lookup=True))
                self._move(key, Event.LOOKUP_SENT)
            return False
        fresh_enough = view.version > 0 or not strategy.needs_fresh_metadata
        ready = [k for k in due if fresh_enough and view.version > self._keys[k].seen_version]
        if ready:
            self._apply_lookup(strategy.lookup(ready, view), view.version)
        return len(ready) < len(due)

    def _apply_lookup(self, found: LookupResult[K], version: int) -> None:
        for key, node in found.mapped.items():
            progress = self._move(key, Event.MAPPED)
            progress.node, progress.missing_since = node, None
        for key, error in found.failed.items():
            self._move(key, Event.FAILED, error)
        for key, reason in found.unmapped.items():
            self._move(key, Event.LOOK_UP_AGAIN, reason, delay=True).seen_version = version

    def _send_mapped(self, view: ClusterView, now: float,
                     requests: list[OutgoingRequest[K]]) -> bool:
        """Queue the API requests for the due mapped keys, by broker; True when a key's
        broker is missing from the metadata (a coordinator just named), which a refresh may
        fix. A broker the caller named that fresh metadata does not have fails its keys."""
        by_node: dict[int, list[K]] = {}
        known = set(view.broker_ids())
        refresh = False
        for key in self._due(KeyState.MAPPED, now):
            progress = self._keys[key]
            assert progress.node is not None
            if progress.node not in known:
                if progress.missing_since is None:
                    progress.missing_since = view.version
                if view.version == progress.missing_since:  # refresh once, then decide
                    refresh = True
                    continue
                if self.handler.lookup.fixed:  # the caller named a broker that is not there
                    self._move(key, Event.FAILED, UnknownBrokerIdError(
                        f"broker {progress.node} is not in the cluster metadata"))
                    continue
            by_node.setdefault(progress.node, []).append(key)
        for node, keys in by_node.items():
            batches = [keys] if self.handler.batched else [[key] for key in keys]
            for batch in batches:
                request = self.handler.build_request(node, batch)
                requests.append(OutgoingRequest(node, tuple(batch), request))
                for key in batch:
                    self._move(key, Event.SENT)
        return refresh

    def _time_out(self) -> None:
        waited_ms = int((self.deadline - self._started) * 1000)
        for key, progress in self._keys.items():
            if progress.state in TERMINAL:
                continue
            last = progress.last_error
            error = KafkaTimeoutError(
                f"{self.handler.name} for {key!r} did not finish within {waited_ms} ms"
                + (f" (last error: {last})" if last is not None else ""))
            error.__cause__ = last
            self._move(key, Event.FAILED, error)

    # -- outcomes ------------------------------------------------------------------------

    def on_response(self, sent: OutgoingRequest[K], body: Mapping[str, Any]) -> None:
        """Apply broker ``sent.node``'s answer to ``sent``."""
        if sent.lookup:
            (key,) = sent.keys
            if self._keys[key].state is KeyState.LOOKING_UP:
                self._apply_lookup(self.handler.lookup.handle_response(key, body),
                                   self._view_version)
            return
        outcome: ApiResult[K, V] = self.handler.handle_response(sent.node, sent.keys, body)
        for key in sent.keys:
            if self._keys[key].state is not KeyState.IN_FLIGHT:
                continue  # timed out meanwhile
            if key in outcome.completed:
                self._values[key] = outcome.completed[key]
                self._move(key, Event.COMPLETED)
            elif key in outcome.failed:
                self._move(key, Event.FAILED, outcome.failed[key])
            elif key in outcome.look_up_again:
                self._route_again(key, outcome.look_up_again[key])
            else:
                reason = outcome.retry.get(key) or KafkaError(
                    f"{self.handler.name}: broker {sent.node} left {key!r} out of its answer")
                self._move(key, Event.RETRY, reason, delay=True)

    def on_failure(self, sent: OutgoingRequest[K], error: BaseException) -> None:
        """``sent`` got no answer (connection lost, timed out, refused). An answer that did
        not decode is not retried: the broker would send the same bytes again."""
        retriable = isinstance(error, KafkaError) and error.retriable and \
            not isinstance(error.__cause__, ProtocolDecodeError)
        if retriable:
            self._refresh_wanted = True
        for key in sent.keys:
            state = self._keys[key].state
            if state not in (KeyState.IN_FLIGHT, KeyState.LOOKING_UP):
                continue
            if not retriable:
                self._move(key, Event.FAILED, error)
            elif state is KeyState.LOOKING_UP or not self.handler.lookup.fixed:
                self._move(key, Event.LOOK_UP_AGAIN, error, delay=True)
            else:
                self._move(key, Event.RETRY, error, delay=True)

    def _route_again(self, key: K, error: BaseException) -> None:
        if self.handler.lookup.fixed:  # the caller named the broker: its answer stands
            self._move(key, Event.FAILED, error)
            return
        self._refresh_wanted = True
        self._move(key, Event.LOOK_UP_AGAIN, error, delay=True).seen_version = \
            self._view_version
