"""The time a request's handler spends running, for ``request_percentage`` quotas.

Kafka's request quota counts the time request handler threads spend on a client's requests,
not the time its requests wait (a Fetch long-polling in purgatory, a Produce waiting for the
ISR). Here handlers are coroutines on one event loop: :class:`TimedCall` drives a handler
coroutine step by step and adds up the time of each step, the stretches between two awaits
when the loop runs this request's code and nothing else, so waiting is left out as in Kafka.
"""

from __future__ import annotations

from collections.abc import Awaitable, Generator
from time import perf_counter
from typing import Any, Generic, TypeVar

T = TypeVar("T")


class TimedCall(Generic[T]):
    """``await TimedCall(call)`` is ``await call`` (a handler's coroutine); then
    :attr:`seconds` is the time its steps ran."""

    def __init__(self, call: Awaitable[T]) -> None:
        self._call = call
        self.seconds = 0.0

    def __await__(self) -> Generator[Any, Any, T]:
        coro: Generator[Any, Any, T] = self._call.__await__()
        sent: Any = None
        thrown: BaseException | None = None
        while True:
            started = perf_counter()
            try:
                yielded = coro.send(sent) if thrown is None else coro.throw(thrown)
            except StopIteration as done:
                return done.value
            finally:
                self.seconds += perf_counter() - started
            try:
                sent, thrown = (yield yielded), None
            except GeneratorExit:
                coro.close()
                raise
            except BaseException as exc:  # a cancellation, passed on to the handler
                sent, thrown = None, exc
