"""``kafkalite configs --describe|--alter --entity-type clients|users``: client quotas, with
kafka-configs' options and output, on the AdminClient's DescribeClientQuotas and
AlterClientQuotas.

An entity is named as kafka-configs names it: ``--entity-type users --entity-name alice``,
``--entity-type clients --entity-default``, or both types in a row for a user's client id.
Each ``--entity-name`` / ``--entity-default`` names the ``--entity-type`` before it. Without
a name, ``--describe`` lists every named entity of the type(s).
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from kafkalite.admin import (
    ClientQuotaAlteration,
    ClientQuotaEntity,
    ClientQuotaFilterComponent,
)
from kafkalite.cli.options import CliError, UsageError, add_command
from kafkalite.cli.output import print_json
from kafkalite.cli.session import admin_client

ENTITY_TYPES = {"users": "user", "clients": "client-id"}
"""kafka-configs' entity types, as quota entities name them."""
_DESCRIBED = {"user": "user-principal", "client-id": "client-id"}
_UNNAMED = object()
_DEFAULT = object()

EPILOG = """examples:
  kafkalite configs --alter --entity-type clients --entity-name app \\
      --add-config producer_byte_rate=1048576,consumer_byte_rate=2097152
  kafkalite configs --alter --entity-type users --entity-name alice \\
      --entity-type clients --entity-default --add-config request_percentage=50
  kafkalite configs --alter --entity-type clients --entity-name app \\
      --delete-config producer_byte_rate
  kafkalite configs --describe --entity-type users          # every user with quotas
  kafkalite configs --describe --entity-type clients --entity-default

Quotas are bytes per second (producer_byte_rate, consumer_byte_rate) or a percentage of
a request thread (request_percentage), per broker."""


class _EntityType(argparse.Action):
    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        namespace.entities = [*namespace.entities, [values, _UNNAMED]]


class _EntityName(argparse.Action):
    """``--entity-name NAME`` or ``--entity-default``: the name of the type before it."""

    def __call__(self, parser: argparse.ArgumentParser, namespace: argparse.Namespace,
                 values: Any, option_string: str | None = None) -> None:
        if not namespace.entities or namespace.entities[-1][1] is not _UNNAMED:
            parser.error(f"{option_string} must follow the --entity-type it names")
        namespace.entities[-1][1] = _DEFAULT if option_string == "--entity-default" else values


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    parser = add_command(commands, "configs", run, epilog=EPILOG, parents=parents,
                         help="describe and alter client quotas, like kafka-configs")
    action = parser.add_mutually_exclusive_group(required=True)
    action.add_argument("--describe", action="store_true", help="print the quotas")
    action.add_argument("--alter", action="store_true",
                        help="change the quotas (--add-config, --delete-config)")
    parser.set_defaults(entities=[])
    parser.add_argument("--entity-type", action=_EntityType, choices=sorted(ENTITY_TYPES),
                        required=True, help="users or clients (twice: a user's client id)")
    parser.add_argument("--entity-name", action=_EntityName, metavar="NAME",
                        help="the user or client id")
    parser.add_argument("--entity-default", action=_EntityName, nargs=0,
                        help="the default user or client id (<default>)")
    parser.add_argument("--add-config", metavar="K=V,...", default="",
                        help="quotas to set, e.g. producer_byte_rate=1048576")
    parser.add_argument("--delete-config", metavar="K,...", default="",
                        help="quotas to remove, e.g. producer_byte_rate")
    parser.add_argument("--json", action="store_true", help="--describe as one JSON document")


def run(args: argparse.Namespace) -> int:
    entities = [(ENTITY_TYPES[kind], name) for kind, name in args.entities]
    if len({kind for kind, _ in entities}) != len(entities):
        raise UsageError("each --entity-type may be given once")
    if args.describe:
        return _describe(args, entities)
    if any(name is _UNNAMED for _, name in entities):
        raise UsageError("--alter needs --entity-name or --entity-default for each "
                         "--entity-type")
    ops: dict[str, float | None] = {**_added(args.add_config), **dict.fromkeys(
        key.strip() for key in args.delete_config.split(",") if key.strip())}
    if not ops:
        raise UsageError("--alter needs --add-config or --delete-config")
    entity = ClientQuotaEntity({kind: None if name is _DEFAULT else str(name)
                                for kind, name in entities})
    with admin_client(args) as admin:
        error = admin.alter_client_quotas([ClientQuotaAlteration(entity, ops)])[entity]
    if error is not None:
        raise CliError(f"cannot alter the quotas of {_entity_text(entity)}: {error}")
    print(f"Completed updating config for {_entity_text(entity)}.")
    return 0


def _added(text: str) -> dict[str, float | None]:
    added: dict[str, float | None] = {}
    for item in (part.strip() for part in text.split(",")):
        if not item:
            continue
        key, equals, value = item.partition("=")
        try:
            if not equals:
                raise ValueError
            added[key.strip()] = float(value)
        except ValueError:
            raise UsageError(f"--add-config: {item!r} is not KEY=NUMBER") from None
    return added


def _describe(args: argparse.Namespace, entities: Sequence[tuple[str, object]]) -> int:
    components = []
    for kind, name in entities:
        if name is _UNNAMED:
            components.append(ClientQuotaFilterComponent.of_entity_type(kind))
        elif name is _DEFAULT:
            components.append(ClientQuotaFilterComponent.of_default_entity(kind))
        else:
            components.append(ClientQuotaFilterComponent.of_entity(kind, str(name)))
    with admin_client(args) as admin:
        found = admin.describe_client_quotas(components, strict=True)
    ordered = sorted(found.items(), key=lambda item: _entity_text(item[0]))
    if args.json:
        print_json([{"entity": dict(entity), "quotas": quotas} for entity, quotas in ordered])
        return 0
    for entity, quotas in ordered:
        values = ", ".join(f"{key}={value}" for key, value in sorted(quotas.items()))
        print(f"Quota configs for {_entity_text(entity)} are {values}")
    return 0


def _entity_text(entity: ClientQuotaEntity) -> str:
    """kafka-configs' words: ``user-principal 'alice', the default client-id``."""
    parts = []
    for kind in ("user", "client-id"):
        if kind in entity:
            name = entity[kind]
            parts.append(f"the default {_DESCRIBED[kind]}" if name is None
                         else f"{_DESCRIBED[kind]} '{name}'")
    return ", ".join(parts)
