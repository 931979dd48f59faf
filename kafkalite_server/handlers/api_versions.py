"""ApiVersions (18). Versions above our maximum never reach here: the network layer
answers them with the v0-format UNSUPPORTED_VERSION body before decoding."""

from __future__ import annotations

from typing import Any

from kafkalite_server.handlers.registry import RequestContext
from kafkalite_server.security.api_checks import declares


@declares(open_because="clients ask it before they log in; it tells only which versions "
          "the broker serves")
async def handle_api_versions(ctx: RequestContext, body: dict[str, Any]) -> dict[str, Any]:
    return {"error_code": 0, "api_keys": ctx.broker.handlers.advertised(),
            "throttle_time_ms": 0}
