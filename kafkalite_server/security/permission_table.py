"""The table of ``docs/security.md`` that lists every API the broker serves with the
permission it needs, written from the handlers' own declarations
(:mod:`kafkalite_server.security.api_checks`), so the page cannot tell a different story
from the code: a docs test compares the page with :func:`markdown_table`.

``python -m kafkalite_server.security.permission_table`` prints the table (to paste
between the page's markers after changing a handler's checks).
"""

from __future__ import annotations

from collections.abc import Mapping

from kafkalite.protocol import ApiKey
from kafkalite.protocol.api import APIS
from kafkalite_server.security.api_checks import Access, error_name

BEGIN_MARKER = "<!-- api-permissions: begin -->"
END_MARKER = "<!-- api-permissions: end -->"
_HEADER = ("| API (key) | Needs | Refused with |", "|---|---|---|")


def api_name(api_key: ApiKey) -> str:
    """Kafka's name of the API: ``ElectLeaders``."""
    return APIS[api_key].request.name.removesuffix("Request")


def _row(api_key: ApiKey, access: Access) -> str:
    if access.open_because:
        needs, refused = f"nothing ({access.open_because})", "nothing"
    else:
        needs = "; ".join(check.text() for check in access.checks)
        refused = ", ".join(error_name(error) for error in access.refusals) or \
            "nothing: it lists only what the principal may see"
    return f"| {api_name(api_key)} ({int(api_key)}) | {needs} | {refused} |"


def markdown_table(access: Mapping[ApiKey, Access]) -> str:
    """The table, one row per API in api key order."""
    rows = [_row(api_key, access[api_key]) for api_key in sorted(access)]
    return "\n".join((*_HEADER, *rows)) + "\n"


def documented_table(page: str) -> str:
    """The text between the page's markers."""
    start = page.index(BEGIN_MARKER) + len(BEGIN_MARKER)
    return page[start:page.index(END_MARKER)].strip("\n") + "\n"


def served_access() -> dict[ApiKey, Access]:
    """The declarations of every API a broker may serve (the SASL ones included), as
    registered by a broker with a SASL listener."""
    from kafkalite_server.broker import CORE_HANDLERS, SASL_HANDLERS
    from kafkalite_server.group.broker_handlers import GROUP_HANDLERS
    from kafkalite_server.handlers.registry import HandlerRegistry
    from kafkalite_server.share.broker_handlers import SHARE_HANDLERS

    registry = HandlerRegistry()
    for handlers in (CORE_HANDLERS, SASL_HANDLERS, GROUP_HANDLERS, SHARE_HANDLERS):
        for api_key, handler in handlers.items():
            registry.register(api_key, handler)  # type: ignore[arg-type]
    return registry.access()


if __name__ == "__main__":
    print(markdown_table(served_access()), end="")
