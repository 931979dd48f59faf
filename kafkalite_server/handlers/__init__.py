"""Request handlers, one module per API family, registered by api key."""

from kafkalite_server.handlers.registry import (
    CloseConnection,
    Handler,
    HandlerRegistry,
    RequestContext,
)

__all__ = ["CloseConnection", "Handler", "HandlerRegistry", "RequestContext"]
