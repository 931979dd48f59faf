"""The console's web app: static pages, and the JSON API their script reads.

Every API answer is computed on demand by the :class:`ClusterReader` (Starlette runs these
synchronous endpoints in its thread pool, so a slow cluster never stalls the server). A
cluster error becomes a 502 naming it; the write endpoint answers 403 unless the console was
started with ``--allow-writes``, and takes only a JSON body, which a page of another origin
cannot send without the console's consent (CORS), so a visited web page cannot write.
A console on a loopback address also answers only requests naming a loopback host: a web
page whose DNS name is rebound to 127.0.0.1 would otherwise count as the same origin.
"""

from __future__ import annotations

from collections.abc import Collection
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.middleware import Middleware
from starlette.requests import Request
from starlette.responses import FileResponse, JSONResponse, RedirectResponse, Response
from starlette.routing import Mount, Route
from starlette.staticfiles import StaticFiles
from starlette.types import ASGIApp, Receive, Scope, Send

from kafkalite.cli.options import CliError
from kafkalite.console.broker_metrics import BrokerMetrics
from kafkalite.console.cluster import ClusterReader
from kafkalite.errors import KafkaError
from kafkalite.protocol.errors import (
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    UnknownTopicOrPartitionError,
)

STATIC = Path(__file__).parent / "static"
PAGES = ("overview", "topics", "topic", "groups", "group", "throughput")
DEFAULT_BROWSE_RECORDS = 50
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
AUTHORIZATION_ERRORS = (TopicAuthorizationFailedError, GroupAuthorizationFailedError,
                        ClusterAuthorizationFailedError)


def create_app(reader: ClusterReader, *, allow_writes: bool = False,
               metrics: BrokerMetrics | None = None,
               allowed_hosts: Collection[str] | None = LOOPBACK_HOSTS) -> Starlette:
    """The console over ``reader``'s cluster; read-only unless ``allow_writes``; the
    throughput page also charts the brokers' ``metrics`` endpoints when given. A request
    whose Host header names none of ``allowed_hosts`` is refused (None: any host)."""

    def api(read: Any) -> Any:
        def endpoint(request: Request) -> Response:
            try:
                return JSONResponse(read(request))
            except ValueError as exc:
                return _error(400, str(exc))
            except (CliError, UnknownTopicOrPartitionError) as exc:  # no such group or topic
                return _error(404, str(exc))
            except KafkaError as exc:
                return _cluster_error(exc)
        return endpoint

    def settings(_: Request) -> dict[str, Any]:
        return {"allow_writes": allow_writes,
                "metrics_urls": [] if metrics is None else metrics.urls}

    def broker_metrics(_: Request) -> Response:
        if metrics is None:
            return _error(404, "the console was started without --metrics-url")
        return JSONResponse(metrics.sample())

    def messages(request: Request) -> dict[str, Any]:
        query = request.query_params
        offset = query.get("offset")
        return reader.messages(request.path_params["topic"], _int(query.get("partition", "0")),
                               None if offset in (None, "") else _int(offset),
                               _int(query.get("limit", str(DEFAULT_BROWSE_RECORDS))))

    async def produce(request: Request) -> Response:
        if not allow_writes:
            return _error(403, "the console is read-only: start it with --allow-writes")
        if request.headers.get("content-type", "").split(";")[0] != "application/json":
            return _error(415, "send the record as application/json")
        body = await request.json()
        value = body.get("value") if isinstance(body, dict) else None
        if not isinstance(value, str):
            return _error(400, 'the body must be {"value": "<text>"}')
        topic = request.path_params["topic"]
        try:
            return JSONResponse(await run_in_threadpool(reader.produce_test_record, topic, value))
        except KafkaError as exc:
            return _cluster_error(exc)

    routes = [
        Route("/", lambda _: RedirectResponse("/overview")),
        *[Route(f"/{page}", _page) for page in PAGES],
        Route("/api/settings", api(settings)),
        Route("/api/overview", api(lambda _: reader.overview())),
        Route("/api/topics", api(lambda _: reader.topics())),
        Route("/api/topics/{topic}", api(lambda r: reader.topic(r.path_params["topic"]))),
        Route("/api/topics/{topic}/messages", api(messages)),
        Route("/api/topics/{topic}/records", produce, methods=["POST"]),
        Route("/api/groups", api(lambda _: reader.groups())),
        Route("/api/groups/{group}", api(lambda r: reader.group(r.path_params["group"]))),
        Route("/api/offsets", api(lambda _: reader.offsets())),
        Route("/api/broker-metrics", broker_metrics),
        Mount("/static", StaticFiles(directory=STATIC)),
    ]
    guard = [] if allowed_hosts is None else [Middleware(HostGuard, hosts=allowed_hosts)]
    return Starlette(routes=routes, middleware=guard)


class HostGuard:
    """Answers 421 to a request whose Host header is not one of ``hosts`` (a DNS-rebinding
    page names its own domain there, never the console's loopback address)."""

    def __init__(self, app: ASGIApp, hosts: Collection[str]) -> None:
        self.app = app
        self.hosts = frozenset(hosts)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            header = dict(scope["headers"]).get(b"host", b"").decode("latin-1")
            try:
                host = urlsplit(f"//{header}").hostname
            except ValueError:
                host = None
            if host not in self.hosts:
                await _error(421, f"this console answers only requests to "
                                  f"{', '.join(sorted(self.hosts))}")(scope, receive, send)
                return
        await self.app(scope, receive, send)


def _page(_: Request) -> Response:
    """Every page is the same shell: its script renders the page the path names."""
    return FileResponse(STATIC / "console.html", media_type="text/html")


def _int(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise ValueError(f"{text!r} is not an integer") from None


def _cluster_error(exc: KafkaError) -> JSONResponse:
    """403 when the cluster refused the console's principal, else 502 (a bad gateway: the
    cluster failed, not the console)."""
    return _error(403 if isinstance(exc, AUTHORIZATION_ERRORS) else 502,
                  f"{type(exc).__name__}: {exc}")


def _error(status: int, message: str) -> JSONResponse:
    return JSONResponse({"error": message}, status_code=status)
