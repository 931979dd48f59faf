"""The handler registry: api key -> ``async handler(context, body) -> response | None``.

ApiVersions advertises exactly the registered keys, each with its SUPPORTED_VERSIONS
range, so an API appears the moment its handler is registered and never before. A handler
must declare its authorization (:mod:`kafkalite_server.security.api_checks`): one without a
declaration is refused at registration, so no API is served unchecked by oversight.
Versions only brokers send each other (``BROKER_ONLY_SINCE``) are served but not
advertised.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from kafkalite.protocol import SUPPORTED_VERSIONS, ApiKey, RequestHeader
from kafkalite.protocol.api import SERVED_VERSIONS
from kafkalite_server.security.acls import CLUSTER_NAME, AclOperation, Resource, ResourceType
from kafkalite_server.security.api_checks import CREATE_TOPIC, Access, access_of

if TYPE_CHECKING:
    from kafkalite_server.network.session import Session
    from kafkalite_server.services import BrokerServices


@dataclass(frozen=True, slots=True)
class RequestContext:
    header: RequestHeader
    broker: BrokerServices
    peer: str
    session: Session | None = None
    """The client connection's listener, principal and SASL state (None: in-process)."""
    on_appended: Callable[[], None] | None = None
    """Called by a Produce once its records are in the leader's log, before it waits for
    the ISR: the connection then reads its next request while this one waits (the
    appends of one connection stay in order; see kafkalite_server.network.connection)."""

    @property
    def api_version(self) -> int:
        return self.header.api_version

    @property
    def listener(self) -> str | None:
        """The name of the listener the request came in on."""
        return None if self.session is None else self.session.listener.name

    def authorize(self, operation: AclOperation, resource_type: ResourceType,
                  name: str = CLUSTER_NAME) -> bool:
        """May this request's principal do ``operation`` on the resource? Always yes without
        an authorizer (``authorizer.class.name`` empty)."""
        security = self.broker.security
        if self.session is None or not security.authorizer_enabled:
            return True
        return security.authorize(self.session.principal, self.session.client_host,
                                  operation, Resource(resource_type, name))

    def authorize_any(self, operation: AclOperation, resource_type: ResourceType) -> bool:
        """May this principal do ``operation`` on at least one resource of the type?"""
        security = self.broker.security
        if self.session is None or not security.authorizer_enabled:
            return True
        return security.authorize_any(self.session.principal, self.session.client_host,
                                      operation, resource_type)

    def may_create_topic(self, name: str) -> bool:
        """Kafka's rule: Create on the Cluster, or on the topic."""
        return CREATE_TOPIC.allows(self, name)


Handler = Callable[[RequestContext, dict[str, Any]], Awaitable[dict[str, Any] | None]]
"""Returns the response body, or None for no response (Produce with acks=0)."""


class CloseConnection(Exception):
    """Raised by a handler to close the client's connection without a response (what
    Kafka does after a failed acks=0 produce, so the client refreshes its metadata)."""


class HandlerRegistry:
    def __init__(self) -> None:
        self._handlers: dict[int, Handler] = {}
        self._versions: dict[int, tuple[int, int]] = {}
        self._access: dict[ApiKey, Access] = {}
        """Advertised ranges; the served ones may go higher (broker-only versions)."""
        self._served: dict[int, tuple[int, int]] = {}

    def register(self, api_key: ApiKey, handler: Handler) -> None:
        if api_key not in SUPPORTED_VERSIONS:
            raise ValueError(f"{api_key!r} has no protocol schema to serve")
        access = access_of(handler)
        if access is None:
            raise ValueError(f"the handler of {api_key!r} declares no authorization: "
                             "decorate it with @requires or @declares "
                             "(kafkalite_server.security.api_checks)")
        self._access[api_key] = access
        self._handlers[int(api_key)] = handler
        self._versions[int(api_key)] = SUPPORTED_VERSIONS[api_key]
        self._served[int(api_key)] = SERVED_VERSIONS[api_key]

    def access(self) -> dict[ApiKey, Access]:
        """Every registered API's declared authorization, by api key."""
        return dict(sorted(self._access.items()))

    def get(self, api_key: int) -> Handler | None:
        return self._handlers.get(api_key)

    def serves(self, api_key: int, api_version: int) -> bool:
        versions = self._served.get(api_key)
        return versions is not None and versions[0] <= api_version <= versions[1]

    def advertised(self) -> list[dict[str, int]]:
        """The ApiVersions ``api_keys`` entries, sorted by key."""
        return [{"api_key": key, "min_version": lo, "max_version": hi}
                for key, (lo, hi) in sorted(self._versions.items())]
