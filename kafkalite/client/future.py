"""A small thread-safe future: completed by the client's I/O thread, awaited by user threads.

Lighter than :class:`concurrent.futures.Future` (no executor semantics, the wait event is only
created when somebody actually blocks) and shaped like kafka-python's: ``get(timeout)``,
``add_callback``, ``add_errback``. Callbacks run on the thread that completes the future (the
client's I/O thread), so they must be quick and must not block on the client.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

from kafkalite.errors import KafkaTimeoutError

T = TypeVar("T")
log = logging.getLogger(__name__)

_PENDING = object()
_CREATE_EVENT = threading.Lock()


class Future(Generic[T]):
    """The eventual result of one operation: a value or an exception."""

    __slots__ = ("_callbacks", "_event", "_exception", "_value")

    def __init__(self) -> None:
        self._value: Any = _PENDING
        self._exception: BaseException | None = None
        self._callbacks: list[tuple[bool, Callable[..., Any]]] = []
        self._event: threading.Event | None = None

    def is_done(self) -> bool:
        return self._value is not _PENDING or self._exception is not None

    def succeeded(self) -> bool:
        return self._value is not _PENDING

    def failed(self) -> bool:
        return self._exception is not None

    @property
    def exception(self) -> BaseException | None:
        return self._exception

    @property
    def value(self) -> T:
        """The result; only meaningful once :meth:`succeeded` is True."""
        return self._value

    def success(self, value: T) -> None:
        if self.is_done():
            raise RuntimeError("future already completed")
        self._value = value
        self._complete()

    def failure(self, exception: BaseException) -> None:
        if self.is_done():
            raise RuntimeError("future already completed")
        self._exception = exception
        self._complete()

    def _complete(self) -> None:
        with _CREATE_EVENT:
            callbacks, self._callbacks = self._callbacks, []
            event = self._event
        if event is not None:
            event.set()
        for on_success, callback in callbacks:
            self._run(on_success, callback)

    def _run(self, on_success: bool, callback: Callable[..., Any]) -> None:
        if on_success != (self._exception is None):
            return
        try:
            callback(self._value if on_success else self._exception)
        except Exception:
            log.exception("future callback %r raised", callback)

    def add_callback(self, callback: Callable[..., Any], *args: Any) -> Future[T]:
        """Call ``callback(*args, value)`` on success (now if already succeeded)."""
        return self._add(True, _bind(callback, args))

    def add_errback(self, errback: Callable[..., Any], *args: Any) -> Future[T]:
        """Call ``errback(*args, exception)`` on failure (now if already failed)."""
        return self._add(False, _bind(errback, args))

    def add_both(self, callback: Callable[..., Any], *args: Any) -> Future[T]:
        bound = _bind(callback, args)
        self._add(True, bound)
        return self._add(False, bound)

    def _add(self, on_success: bool, callback: Callable[..., Any]) -> Future[T]:
        with _CREATE_EVENT:
            if not self.is_done():
                self._callbacks.append((on_success, callback))
                return self
        self._run(on_success, callback)
        return self

    def wait(self, timeout: float | None = None) -> bool:
        """Block until done or ``timeout`` seconds pass; True when done."""
        if self.is_done():
            return True
        with _CREATE_EVENT:
            if self.is_done():
                return True
            if self._event is None:
                self._event = threading.Event()
            event = self._event
        return event.wait(timeout)

    def get(self, timeout: float | None = None) -> T:
        """The value, or raise the failure; :class:`KafkaTimeoutError` after ``timeout`` s."""
        if not self.wait(timeout):
            raise KafkaTimeoutError(f"no result within {timeout} s")
        if self._exception is not None:
            raise self._exception
        return self._value


def _bind(callback: Callable[..., Any], args: tuple[Any, ...]) -> Callable[..., Any]:
    if not args:
        return callback
    return lambda result: callback(*args, result)
