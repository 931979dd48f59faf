"""Cancelling tasks so that they really end.

In Python 3.11 ``asyncio.wait_for`` can swallow a cancellation that arrives as the
operation it waits for completes (the connection loop's read with a timeout, a fetcher's
request): the task carries on and a single ``cancel()`` followed by ``gather`` waits
forever. :func:`cancel_and_wait` cancels again until every task is done.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable

_RECHECK_S = 0.1


async def cancel_and_wait(tasks: Iterable[asyncio.Task[object]]) -> None:
    pending = [task for task in tasks if not task.done()]
    while pending:
        for task in pending:
            task.cancel()
        await asyncio.wait(pending, timeout=_RECHECK_S)
        pending = [task for task in pending if not task.done()]
