"""Runs the SDK's admin API handlers on the event loop.

The threaded :class:`~kafkalite.admin.runner.AdminRunner`'s asyncio twin: the same
:class:`~kafkalite.admin.driver.AdminApiDriver` decides routing, retries and deadlines and
the same handlers build each request and read each answer; this module only awaits the
requests a step asks for (all of a step's requests at once), the metadata refreshes and
the backoff sleeps, over :class:`~kafkalite.aio.client.AIOClient`.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable, Iterable
from typing import Any, TypeVar

from kafkalite.admin.driver import AdminApiDriver, OutgoingRequest
from kafkalite.admin.handler import AdminApiHandler, api_name
from kafkalite.admin.runner import MetadataView, version_refusal
from kafkalite.aio.client import AIOClient
from kafkalite.aio.connection import Response
from kafkalite.errors import KafkaError, KafkaTimeoutError

K = TypeVar("K", bound=Hashable)
V = TypeVar("V")

RETRY_BACKOFF_MAX_MS = 1000
"""The longest backoff between retries of one key (the Java admin client's default)."""


class AIOAdminRunner:
    """Runs admin calls over one :class:`AIOClient`; ``api_timeout`` (seconds) bounds a
    whole call with its retries unless the call gives its own."""

    def __init__(self, client: AIOClient, api_timeout: float, retry_backoff_ms: int,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.client = client
        self.api_timeout = api_timeout
        self.retry_backoff_ms = retry_backoff_ms
        self._clock = clock

    async def run(self, handler: AdminApiHandler[K, V], keys: Iterable[K],
                  timeout: float | None = None) -> dict[K, V]:
        """Each key's value; the first failed key raises its (typed) error."""
        deadline = self._clock() + (self.api_timeout if timeout is None else timeout)
        driver: AdminApiDriver[K, V] = AdminApiDriver(
            handler, keys, deadline=deadline, clock=self._clock,
            retry_backoff_ms=self.retry_backoff_ms, retry_backoff_max_ms=RETRY_BACKOFF_MAX_MS)
        view = MetadataView(self.client.cluster)
        while True:
            step = driver.poll(view)
            if step.done:
                return driver.result()
            if step.refresh_metadata:
                await self.refresh_metadata(deadline)
                view.version += 1
            answers = await asyncio.gather(*(self._send(r, deadline) for r in step.requests),
                                           return_exceptions=True)
            for request, answer in zip(step.requests, answers, strict=True):
                if isinstance(answer, KafkaError):
                    driver.on_failure(request, answer)
                elif isinstance(answer, BaseException):
                    raise answer
                else:
                    driver.on_response(request, answer)
            if not step.requests and not step.refresh_metadata and step.wake_at is not None:
                await asyncio.sleep(max(step.wake_at - self._clock(), 0.0))

    async def refresh_metadata(self, deadline: float) -> None:
        """One metadata refresh, given up at ``deadline`` (the driver then times the call
        out naming the last error); a failed refresh is the driver's to retry, as a missing
        answer is."""
        try:
            await asyncio.wait_for(self.client.refresh_metadata(),
                                   max(deadline - self._clock(), 0.0))
        except (KafkaError, TimeoutError):
            await asyncio.sleep(min(self.retry_backoff_ms / 1000,
                                    max(deadline - self._clock(), 0.0)))

    async def _send(self, outgoing: OutgoingRequest[Any], deadline: float) -> Response:
        request = outgoing.request
        conn = await self.client.connection(outgoing.node)
        if request.min_version:
            served = conn.broker_versions.get(int(request.api_key), (-1, -1))[1]
            refusal = version_refusal(request, outgoing.node, served)
            if refusal is not None:
                raise refusal
        future = conn.send(request.api_key, request.body)
        await conn.drain()
        try:
            return await asyncio.wait_for(future, max(deadline - self._clock(), 0.0))
        except TimeoutError:
            raise KafkaTimeoutError(f"{conn.address}: no answer to {api_name(request.api_key)} "
                                    "within the call's timeout") from None
