"""``kafkalite acls add|list|remove``, with kafka-acls' options, on the AdminClient's ACL APIs.

An ACL command names principals (``--allow-principal`` / ``--deny-principal``, each with
its ``--allow-host`` / ``--deny-host`` list), ``--operation``s and resources (``--topic``,
``--group``, ``--cluster``, ``--transactional-id``); ``add`` creates every combination of
them, as kafka-acls.sh does. Operations a resource type cannot have (Write on a group) are
refused before anything is sent, naming the pair.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Iterator
from itertools import product
from typing import Any

from kafkalite.admin import (
    ACL,
    ACLFilter,
    ACLOperation,
    ACLPermissionType,
    ACLResourcePatternType,
    ResourcePattern,
    ResourcePatternFilter,
    ResourceType,
)
from kafkalite.cli.options import CliError, UsageError, add_command
from kafkalite.cli.output import print_json
from kafkalite.cli.session import admin_client
from kafkalite.errors import KafkaError
from kafkalite.protocol.errors import SecurityDisabledError

CLUSTER_NAME = "kafka-cluster"
ANY_HOST = "*"

#: What each resource type can be granted (Kafka's AclCommand table), besides All.
_OPERATIONS_BY_TYPE = {
    ResourceType.TOPIC: {ACLOperation.READ, ACLOperation.WRITE, ACLOperation.CREATE,
                         ACLOperation.DESCRIBE, ACLOperation.DELETE, ACLOperation.ALTER,
                         ACLOperation.DESCRIBE_CONFIGS, ACLOperation.ALTER_CONFIGS},
    ResourceType.GROUP: {ACLOperation.READ, ACLOperation.DESCRIBE, ACLOperation.DELETE},
    ResourceType.CLUSTER: {ACLOperation.CREATE, ACLOperation.CLUSTER_ACTION,
                           ACLOperation.DESCRIBE_CONFIGS, ACLOperation.ALTER_CONFIGS,
                           ACLOperation.IDEMPOTENT_WRITE, ACLOperation.ALTER,
                           ACLOperation.DESCRIBE, ACLOperation.CREATE_TOKENS,
                           ACLOperation.DESCRIBE_TOKENS},
    ResourceType.TRANSACTIONAL_ID: {ACLOperation.DESCRIBE, ACLOperation.WRITE},
}

_GRANTABLE = [op for op in ACLOperation if op > ACLOperation.ANY]
_CONCRETE_PATTERNS = ("literal", "prefixed")
_FILTER_PATTERNS = (*_CONCRETE_PATTERNS, "any", "match")

ADD_EPILOG = """examples:
  kafkalite acls add --allow-principal User:alice --operation Write --topic orders
  kafkalite acls add --allow-principal User:alice --operation Read --operation Describe \\
      --topic logs- --resource-pattern-type prefixed --group billing
  kafkalite acls add --deny-principal User:bob --deny-host 10.0.0.7 --operation All --topic orders

Every principal gets every operation on every resource. Hosts default to * (any host);
--operation defaults to All."""

LIST_EPILOG = """examples:
  kafkalite acls list                                  # every ACL
  kafkalite acls list --topic orders
  kafkalite acls list --topic logs- --resource-pattern-type prefixed
  kafkalite acls list --topic orders --resource-pattern-type match   # all that apply to it
  kafkalite acls list --principal User:alice --json"""

REMOVE_EPILOG = """examples:
  kafkalite acls remove --allow-principal User:alice --operation Write --topic orders
  kafkalite acls remove --topic orders                 # every ACL of the topic

An option left out matches anything: without --operation every operation of the principal
goes, without a principal every ACL of the resource, without --allow-host any host."""


def register(commands: Any, parents: list[argparse.ArgumentParser]) -> None:
    acls = commands.add_parser("acls", help="add, list and remove ACLs",
                               description="Add, list and remove ACLs (needs a broker with "
                               "an authorizer), like kafka-acls.")
    actions = acls.add_subparsers(dest="action", required=True, metavar="ACTION",
                                  parser_class=type(acls))
    add = add_command(actions, "add", run_add, help="create ACLs", epilog=ADD_EPILOG,
                      parents=parents)
    _principal_options(add)
    _resource_options(add, _CONCRETE_PATTERNS)

    listing = add_command(actions, "list", run_list, help="print ACLs", epilog=LIST_EPILOG,
                          parents=parents)
    listing.add_argument("--principal", action="append", default=[], type=principal,
                         metavar="TYPE:NAME", help="only this principal's ACLs (repeatable)")
    _resource_options(listing, _FILTER_PATTERNS)
    listing.add_argument("--json", action="store_true", help="one JSON document")

    remove = add_command(actions, "remove", run_remove, help="delete ACLs",
                         epilog=REMOVE_EPILOG, parents=parents)
    _principal_options(remove)
    _resource_options(remove, _FILTER_PATTERNS)


def _principal_options(parser: argparse.ArgumentParser) -> None:
    group = parser.add_argument_group("who and what")
    for permission in ("allow", "deny"):
        group.add_argument(f"--{permission}-principal", action="append", default=[],
                           type=principal, metavar="TYPE:NAME",
                           help=f"{permission.upper()} this principal, e.g. User:alice "
                                "(repeatable)")
        group.add_argument(f"--{permission}-host", action="append", default=[],
                           metavar="HOST", help=f"the --{permission}-principal only from this "
                           "IP address (repeatable; default: any, *)")
    group.add_argument("--operation", action="append", default=[], type=operation,
                       dest="operations", metavar="OPERATION",
                       help="Read, Write, Create, Delete, Alter, Describe, ClusterAction, "
                            "DescribeConfigs, AlterConfigs, IdempotentWrite, All (repeatable)")


def _resource_options(parser: argparse.ArgumentParser, patterns: tuple[str, ...]) -> None:
    group = parser.add_argument_group("resources")
    group.add_argument("--topic", action="append", default=[], dest="topics", metavar="TOPIC",
                       help="a topic (repeatable; * for every topic)")
    group.add_argument("--group", action="append", default=[], dest="groups", metavar="GROUP",
                       help="a consumer group (repeatable; * for every group)")
    group.add_argument("--cluster", action="store_true", help=f"the cluster ({CLUSTER_NAME})")
    group.add_argument("--transactional-id", action="append", default=[],
                       dest="transactional_ids", metavar="ID",
                       help="a transactional id (repeatable; * for every id)")
    group.add_argument("--resource-pattern-type", choices=patterns,
                       help="how the resource names match: literal (the default; * is every "
                            "name), prefixed"
                            + (", any, or match (every ACL that applies to the name)"
                               if "match" in patterns else ""))


def principal(text: str) -> str:
    kind, colon, name = text.partition(":")
    if not colon or not kind or not name:
        raise argparse.ArgumentTypeError(f"{text!r} is not TYPE:NAME (such as User:alice)")
    return text


def operation(text: str) -> ACLOperation:
    """Kafka's spelling (``DescribeConfigs``), any case, ``_`` or ``-`` ignored."""
    wanted = text.replace("_", "").replace("-", "").lower()
    for op in _GRANTABLE:
        if op.name.replace("_", "").lower() == wanted:
            return op
    raise argparse.ArgumentTypeError(
        f"{text!r} is not one of {', '.join(_display(op) for op in _GRANTABLE)}")


def _display(op: ACLOperation) -> str:
    return "".join(part.capitalize() for part in op.name.split("_"))


def run_add(args: argparse.Namespace) -> int:
    acls = list(_acls(args, _resources(args, required=True)))
    with admin_client(args) as admin:
        outcome = _refusal_explained(admin.create_acls, acls)
    for acl, error in outcome["failed"]:
        raise CliError(f"cannot add {_describe_acl(acl)} on {_describe_pattern(acl)}: "
                       f"{error}")
    _print_grouped("Added ACLs for", outcome["succeeded"])
    return 0


def run_list(args: argparse.Namespace) -> int:
    patterns: list[ResourcePatternFilter] = [*_resources(args, required=False)] or [
        ResourcePatternFilter(ResourceType.ANY, None,
                              _pattern_type(args, ACLResourcePatternType.ANY))]
    found: list[ACL] = []
    with admin_client(args) as admin:
        for pattern in patterns:
            for who in args.principal or [None]:
                acls, _ = _refusal_explained(admin.describe_acls, ACLFilter(
                    who, None, ACLOperation.ANY, ACLPermissionType.ANY, pattern))
                found.extend(a for a in acls if a not in found)
    if args.json:
        print_json([_acl_dict(acl) for acl in found])
    else:
        _print_grouped("Current ACLs for", found)
    return 0


def run_remove(args: argparse.Namespace) -> int:
    patterns = _resources(args, required=True)
    filters = list(_filters(args, patterns))
    with admin_client(args) as admin:
        results = _refusal_explained(admin.delete_acls, filters)
    removed = []
    for acl_filter, matched, error in results:
        if error is not None:
            raise CliError(f"cannot remove ACLs on {_describe_pattern(acl_filter)}: {error}")
        for acl, acl_error in matched:
            if acl_error is not None:
                raise CliError(f"cannot remove {_describe_acl(acl)} on "
                               f"{_describe_pattern(acl)}: {acl_error}")
            removed.append(acl)
    if not removed:
        print("No ACL matched; nothing removed.", file=sys.stderr)
    _print_grouped("Removed ACLs for", removed)
    return 0


def _pattern_type(args: argparse.Namespace, default: ACLResourcePatternType =
                  ACLResourcePatternType.LITERAL) -> ACLResourcePatternType:
    """--resource-pattern-type, else literal (else any for a list of every resource)."""
    if args.resource_pattern_type is None:
        return default
    return ACLResourcePatternType[args.resource_pattern_type.upper()]


def _resources(args: argparse.Namespace, *, required: bool) -> list[ResourcePattern]:
    kind = _pattern_type(args)
    named = [*((ResourceType.TOPIC, n) for n in args.topics),
             *((ResourceType.GROUP, n) for n in args.groups),
             *([(ResourceType.CLUSTER, CLUSTER_NAME)] if args.cluster else []),
             *((ResourceType.TRANSACTIONAL_ID, n) for n in args.transactional_ids)]
    if required and not named:
        raise UsageError("name a resource: --topic, --group, --cluster or --transactional-id")
    for resource_type, name in named:
        if not name:
            raise UsageError(f"an empty {resource_type.name.lower()} name")
    return [ResourcePattern(resource_type, name, kind) for resource_type, name in named]


def _grants(args: argparse.Namespace, default_host: str | None
            ) -> Iterator[tuple[str, str | None, ACLPermissionType]]:
    """(principal, host, permission) for every principal option, checking the hosts fit."""
    for permission in (ACLPermissionType.ALLOW, ACLPermissionType.DENY):
        word = permission.name.lower()
        principals = getattr(args, f"{word}_principal")
        hosts = getattr(args, f"{word}_host")
        if hosts and not principals:
            raise UsageError(f"--{word}-host needs an --{word}-principal")
        for who, host in product(principals, hosts or [default_host]):
            yield who, host, permission


def _acls(args: argparse.Namespace, patterns: list[ResourcePattern]) -> Iterator[ACL]:
    grants = list(_grants(args, ANY_HOST))
    if not grants:
        raise UsageError("name a principal: --allow-principal or --deny-principal")
    operations = args.operations or [ACLOperation.ALL]
    for pattern in patterns:
        allowed = _OPERATIONS_BY_TYPE[pattern.resource_type]
        for op in operations:
            if op != ACLOperation.ALL and op not in allowed:
                raise UsageError(f"{_display(op)} is not an operation on a "
                                 f"{pattern.resource_type.name.lower().replace('_', ' ')}; "
                                 f"choose from All, "
                                 f"{', '.join(sorted(_display(o) for o in allowed))}")
        for (who, host, permission), op in product(grants, operations):
            yield ACL(who, host or ANY_HOST, op, permission, pattern)


def _filters(args: argparse.Namespace, patterns: list[ResourcePattern]
             ) -> Iterator[ACLFilter]:
    """Remove's filters: what the user left out (operation, host, principal) matches all."""
    operations = args.operations or [ACLOperation.ANY]
    grants: list[tuple[str | None, str | None, ACLPermissionType]] = [
        *_grants(args, None)] or [(None, None, ACLPermissionType.ANY)]
    for pattern, (who, host, permission), op in product(patterns, grants, operations):
        yield ACLFilter(who, host, op, permission, pattern)


def _refusal_explained(call: Callable[..., Any], *call_args: Any) -> Any:
    """The broker's refusal as one sentence; SECURITY_DISABLED says what to configure."""
    try:
        return call(*call_args)
    except SecurityDisabledError:
        raise CliError("the broker has no authorizer (set authorizer.class.name in its "
                       "configuration to use ACLs)") from None
    except KafkaError as exc:
        raise CliError(f"the broker refused: {exc}") from None


def _describe_pattern(acl: ACLFilter) -> str:
    pattern = acl.resource_pattern
    return (f"`ResourcePattern(resourceType={pattern.resource_type.name}, "
            f"name={pattern.resource_name}, patternType={pattern.pattern_type.name})`")


def _describe_acl(acl: ACL) -> str:
    return (f"(principal={acl.principal}, host={acl.host}, operation={acl.operation.name}, "
            f"permissionType={acl.permission_type.name})")


def _print_grouped(heading: str, acls: list[ACL]) -> None:
    """kafka-acls' layout: a line per resource pattern, then its ACLs indented."""
    by_pattern: dict[ResourcePatternFilter, list[ACL]] = {}
    for acl in acls:
        by_pattern.setdefault(acl.resource_pattern, []).append(acl)
    for acl_list in by_pattern.values():
        print(f"{heading} resource {_describe_pattern(acl_list[0])}:")
        for acl in acl_list:
            print(f" \t{_describe_acl(acl)}")
        print()


def _acl_dict(acl: ACL) -> dict[str, Any]:
    pattern = acl.resource_pattern
    return {"resource_type": pattern.resource_type.name, "resource_name":
            pattern.resource_name, "pattern_type": pattern.pattern_type.name,
            "principal": acl.principal, "host": acl.host, "operation": acl.operation.name,
            "permission_type": acl.permission_type.name}
