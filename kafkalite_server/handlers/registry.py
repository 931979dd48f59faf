"""The handler registry: api key -> ``async handler(context, body) -> response | None``.

ApiVersions advertises exactly the registered keys, each with its SUPPORTED_VERSIONS
range, so an API appears the moment its handler is registered and never before.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalite.protocol import SUPPORTED_VERSIONS, ApiKey, RequestHeader

if TYPE_CHECKING:
    from kafkalite_server.broker import Broker


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    broker: Broker
    peer: str

    @property
    def api_version(self) -> int:
        return self.header.api_version


Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Returns the response body, or None for no response (Produce with acks=0)."""


class CloseConnection(Exception):
    """Raised by a handler to close the client's connection without a response (what
    Kafka does after a failed acks=0 produce, so the client refreshes its metadata)."""


class HandlerRegistry:
    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}
        self._versions: dict[int, tuple[int, int]] = {}

    def register(self, api_key: ApiKey, handler: Handler) -> None:
        if api_key not in SUPPORTED_VERSIONS:
            raise ValueError(f"{api_key!r} has no protocol schema to serve")
        self._handlers[int(api_key)] = handler
        self._versions[int(api_key)] = SUPPORTED_VERSIONS[api_key]

    def get(self, api_key: int) -> Handler | None:
        return self._handlers.get(api_key)

    def serves(self, api_key: int, api_version: int) -> bool:
        versions = self._versions.get(api_key)
        return versions is not None and versions[0] <= api_version <= versions[1]

    def advertised(self) -> list[dict[str, int]]:
        """The ApiVersions ``api_keys`` entries, sorted by key."""
        return [{"api_key": key, "min_version": lo, "max_version": hi}
                for key, (lo, hi) in sorted(self._versions.items())]
