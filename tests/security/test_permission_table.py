"""docs/security.md's table of API permissions is the handlers' own declarations: it must
list exactly what a running broker registers, with the checks its handlers declare (and
enforce: the authorization audit sends every one of them)."""

from __future__ import annotations

from pathlib import Path

import pytest

from kafkalite.protocol import ApiKey
from kafkalite_server import EmbeddedCluster
from kafkalite_server.security.acls import AclOperation, ResourceType
from kafkalite_server.security.api_checks import Access, Check, access_of, declares, requires
from kafkalite_server.security.permission_table import (
    BEGIN_MARKER,
    END_MARKER,
    documented_table,
    markdown_table,
    served_access,
)
from tests.security.authorized import AUTHORIZER

PAGE = Path(__file__).resolve().parents[2] / "docs" / "security.md"


@pytest.fixture(scope="module")
def registered() -> dict[ApiKey, Access]:
    """What a broker with a SASL listener (so the SASL APIs too) registers."""
    with EmbeddedCluster(config=AUTHORIZER) as cluster:
        return cluster.brokers[0].handlers.access()


def test_the_docs_table_is_generated_from_the_handlers(registered: dict[ApiKey, Access]) -> None:
    page = PAGE.read_text(encoding="utf-8")
    assert page.count(BEGIN_MARKER) == page.count(END_MARKER) == 1
    expected = markdown_table(registered)
    assert documented_table(page) == expected, (
        "docs/security.md's permission table differs from the handlers: paste the output "
        "of `python -m kafkalite_server.security.permission_table` between its markers")


def test_the_printed_table_covers_what_a_broker_registers(
        registered: dict[ApiKey, Access]) -> None:
    assert served_access() == registered


def test_declarations_read_in_the_order_the_checks_run() -> None:
    group = Check(AclOperation.READ, ResourceType.GROUP)
    topics = Check(AclOperation.READ, ResourceType.TOPIC)

    @requires(group, "group_id")
    @declares(topics)
    async def handler(ctx: object, body: object) -> None:
        return None

    table = markdown_table({ApiKey.OFFSET_COMMIT: Access((group, topics))})
    assert "| OffsetCommit (8) | Read on the group; Read on each topic | " \
           "GROUP_AUTHORIZATION_FAILED, TOPIC_AUTHORIZATION_FAILED |" in table
    assert access_of(handler) == Access((group, topics))


def test_a_handler_without_a_declaration_cannot_be_registered() -> None:
    from kafkalite_server.handlers.registry import HandlerRegistry

    async def unchecked(ctx: object, body: object) -> None:
        return None

    with pytest.raises(ValueError, match="declares no authorization"):
        HandlerRegistry().register(ApiKey.DESCRIBE_PRODUCERS, unchecked)  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="declare the handler's checks"):
        declares()
