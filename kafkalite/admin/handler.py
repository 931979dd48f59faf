"""One admin API as a pure pair, in the spirit of Kafka's ``AdminApiHandler``.

An API's handler knows three things and nothing else: which broker must answer for a key
(its :class:`~kafkalite.admin.lookup.LookupStrategy`), how to ask for a batch of keys
(:meth:`AdminApiHandler.build_request`) and what the answer means for each key
(:meth:`AdminApiHandler.handle_response`). It never touches a socket, a clock or a retry:
the one :class:`~kafkalite.admin.driver.AdminApiDriver` does routing, retries and deadlines
for every API, so a fix to retrying is made once. That split is also what makes each API
testable from a dict in and a result out.

Whether an error code means "ask someone else", "ask again later" or "this is the answer"
is decided in one table, :data:`ERROR_DISPOSITIONS`, for every API.
"""

from __future__ import annotations

import enum
from abc import ABC, abstractmethod
from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import (
    CoordinatorLoadInProgressError,
    CoordinatorNotAvailableError,
    FencedLeaderEpochError,
    LeaderNotAvailableError,
    NotControllerError,
    NotCoordinatorError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    UnstableOffsetCommitError,
    error_for_code,
)

if TYPE_CHECKING:
    from kafkalite.admin.lookup import LookupStrategy

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")


class Disposition(enum.Enum):
    """What the driver does with a key whose answer carried an error code."""

    LOOK_UP_AGAIN = "look up again"
    """The request reached the wrong broker (the controller, coordinator or leader moved):
    find the right one again, then retry."""
    RETRY = "retry"
    """The right broker cannot answer yet (a coordinator still loading): ask it again after
    a backoff."""
    ANSWER = "answer"
    """The error is the answer for this key."""


ERROR_DISPOSITIONS: Mapping[int, Disposition] = {
    NotControllerError.errno: Disposition.LOOK_UP_AGAIN,
    NotCoordinatorError.errno: Disposition.LOOK_UP_AGAIN,
    CoordinatorNotAvailableError.errno: Disposition.LOOK_UP_AGAIN,
    NotLeaderOrFollowerError.errno: Disposition.LOOK_UP_AGAIN,
    LeaderNotAvailableError.errno: Disposition.LOOK_UP_AGAIN,
    FencedLeaderEpochError.errno: Disposition.LOOK_UP_AGAIN,
    CoordinatorLoadInProgressError.errno: Disposition.RETRY,
    UnstableOffsetCommitError.errno: Disposition.RETRY,
    OffsetNotAvailableError.errno: Disposition.RETRY,
}
"""Every admin API's error codes that are not the answer: Kafka's routing errors (the
request went to a broker that no longer owns the key) and the "not ready yet" ones.
Everything else is the answer for its key, retriable flag or not: a handler that retried
UNKNOWN_TOPIC_OR_PARTITION (retriable in Kafka's table) would make ``describe_producers``
of a missing topic wait out its deadline instead of saying so."""


def disposition(code: int) -> Disposition:
    """How the driver treats error ``code`` (0 is always the answer)."""
    return ERROR_DISPOSITIONS.get(code, Disposition.ANSWER)


@dataclass
class ApiResult(Generic[K, V]):
    """What one answer means, key by key.

    A key of the request that none of the four fields mentions is asked again after a
    backoff (the broker left it out of its answer).
    """

    completed: dict[K, V] = field(default_factory=dict)
    failed: dict[K, BaseException] = field(default_factory=dict)
    look_up_again: dict[K, BaseException] = field(default_factory=dict)
    """Keys to route again, with the error that said so (it becomes the failure if the
    deadline passes, or if the key's broker was given by the caller)."""
    retry: dict[K, BaseException] = field(default_factory=dict)
    """Keys to ask the same broker again after a backoff, with the error that said so."""

    def complete(self, key: K, value: V) -> None:
        self.completed[key] = value

    def error(self, key: K, code: int, context: str, message: str | None = None) -> bool:
        """Apply error ``code`` to ``key`` by :data:`ERROR_DISPOSITIONS`; True when ``code``
        is 0 (the caller then completes the key itself). ``context`` names what was asked
        (``"creating topic 'orders'"``): the exception's message starts with it."""
        if not code:
            return False
        exc = error_for_code(code)(f"{context}: {message}" if message else context)
        verdict = disposition(code)
        if verdict is Disposition.LOOK_UP_AGAIN:
            self.look_up_again[key] = exc
        elif verdict is Disposition.RETRY:
            self.retry[key] = exc
        else:
            self.failed[key] = exc
        return True

    def routed(self, key: K, code: int, context: str, message: str | None = None) -> bool:
        """Like :meth:`error`, but an error that is the answer is left to the caller (which
        reports it as a value, as ``delete_groups`` does): True when the driver took the key
        (to route or retry it), False when the caller should complete it."""
        if not code or disposition(code) is Disposition.ANSWER:
            return False
        return self.error(key, code, context, message)


def api_name(api_key: ApiKey) -> str:
    """Kafka's name of an API (``ApiKey.CREATE_TOPICS`` is ``CreateTopics``), for messages."""
    return "".join(part.title() for part in api_key.name.split("_"))


@dataclass(frozen=True)
class Request:
    """A request to send: the API, its body and the lowest version that can carry it."""

    api_key: ApiKey
    body: Mapping[str, Any]
    min_version: int = 0
    needs: str = ""
    """Why ``min_version`` is needed, for the error a broker without it gets."""


class AdminApiHandler(ABC, Generic[K, V]):
    """One admin API: its lookup strategy and its pure request/response pair."""

    api_key: ApiKey
    batched: ClassVar[bool] = True
    """True: the keys routed to one broker share one request; False: one request each."""

    def __init__(self, lookup: LookupStrategy[K]) -> None:
        self.lookup = lookup

    @property
    def name(self) -> str:
        """The API's Kafka name, for messages (``CreateTopics``)."""
        return api_name(self.api_key)

    @abstractmethod
    def build_request(self, node: int, keys: Sequence[K]) -> Request:
        """The request asking broker ``node`` about ``keys``."""

    @abstractmethod
    def handle_response(self, node: int, keys: Sequence[K],
                        body: Mapping[str, Any]) -> ApiResult[K, V]:
        """What broker ``node``'s answer about ``keys`` means for each key."""
