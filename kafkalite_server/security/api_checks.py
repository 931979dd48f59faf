"""What each API may do, as data: every handler declares the authorizer checks its requests
make (:func:`declares`, or :func:`requires`, which also enforces a whole-request check),
and the same :class:`Check` objects answer the questions at run time. The handler registry
refuses a handler without a declaration, the authorization audit test sends every
registered API as a principal without ACLs, and ``docs/security.md``'s table of permissions
is generated from these declarations (:mod:`kafkalite_server.security.permission_table`),
so the code, the audit and the docs cannot drift apart.

Requests about many resources (Produce, Fetch, OffsetCommit ...) check each one in their
handlers with :meth:`Check.denied` and answer those with an authorization error; requests
about one group, one transactional id or the Cluster are refused whole by ``@requires``.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, Protocol, TypeVar, cast

from kafkalite.protocol.errors import (
    BrokerResponseError,
    ClusterAuthorizationFailedError,
    GroupAuthorizationFailedError,
    TopicAuthorizationFailedError,
    TransactionalIdAuthorizationFailedError,
)
from kafkalite_server.security.acls import CLUSTER_NAME, AclOperation, ResourceType

Body = dict[str, Any]
Denial = Callable[[Body, int], Body]

ERRORS: dict[ResourceType, type[BrokerResponseError]] = {
    ResourceType.TOPIC: TopicAuthorizationFailedError,
    ResourceType.GROUP: GroupAuthorizationFailedError,
    ResourceType.CLUSTER: ClusterAuthorizationFailedError,
    ResourceType.TRANSACTIONAL_ID: TransactionalIdAuthorizationFailedError,
}
"""The error a refused check answers, by the type of resource checked (Kafka's)."""

_TARGETS = {ResourceType.TOPIC: "each topic", ResourceType.GROUP: "the group",
            ResourceType.CLUSTER: "the Cluster",
            ResourceType.TRANSACTIONAL_ID: "the transactional id"}


class Authorizing(Protocol):
    """What a check asks of a request's context (:class:`~kafkalite_server.handlers.
    registry.RequestContext`)."""

    def authorize(self, operation: AclOperation, resource_type: ResourceType,
                  name: str = CLUSTER_NAME) -> bool: ...

    def authorize_any(self, operation: AclOperation, resource_type: ResourceType) -> bool: ...


def operation_name(operation: AclOperation) -> str:
    """Kafka's spelling in its docs and tools: ``IdempotentWrite``, ``ClusterAction``."""
    return "".join(part.capitalize() for part in operation.name.split("_"))


def error_name(error: type[BrokerResponseError]) -> str:
    """``TopicAuthorizationFailedError`` -> ``TOPIC_AUTHORIZATION_FAILED``."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", error.__name__.removesuffix("Error")).upper()


@dataclass(frozen=True)
class Check:
    """One authorizer question: ``operation`` on a resource of ``resource_type``.

    ``target`` says which resource in words (default: "each topic", "the group", ...),
    ``when`` which requests ask it, ``any_resource`` that one resource of the type suffices
    (Kafka's authorizeByResourceType), ``or_else`` a check that passes instead,
    ``answered`` the error of a refusal where Kafka does not answer the resource type's
    own (a follower's Fetch without ClusterAction: TOPIC_AUTHORIZATION_FAILED), and
    ``filters`` that a resource failing it is left out of a listing rather than refused
    (ListGroups, Metadata for every topic)."""

    operation: AclOperation
    resource_type: ResourceType
    target: str = ""
    when: str = ""
    any_resource: bool = False
    or_else: Check | None = None
    answered: type[BrokerResponseError] | None = None
    filters: bool = False

    @property
    def error(self) -> type[BrokerResponseError]:
        return self.answered or ERRORS[self.resource_type]

    def allows(self, ctx: Authorizing, name: str = CLUSTER_NAME) -> bool:
        """May the request's principal do this to ``name`` (the Cluster for a Cluster
        check, whatever the name)?"""
        if self.any_resource:
            allowed = ctx.authorize_any(self.operation, self.resource_type)
        else:
            resource = CLUSTER_NAME if self.resource_type is ResourceType.CLUSTER else name
            allowed = ctx.authorize(self.operation, self.resource_type, resource)
        return allowed or (self.or_else is not None and self.or_else.allows(ctx, name))

    def denied(self, ctx: Authorizing, names: Iterable[str]) -> frozenset[str]:
        """The names this principal may not act on (answered with :attr:`error`)."""
        return frozenset(name for name in names if not self.allows(ctx, name))

    def text(self) -> str:
        """The check in words, for the docs' table."""
        words = f"{operation_name(self.operation)} on " \
                f"{self.target or _TARGETS[self.resource_type]}"
        if self.or_else is not None:
            words += f", or {self.or_else.text()}"
        if self.when:
            words += f" ({self.when})"
        return f"{words}: lists only those" if self.filters else words


@dataclass(frozen=True)
class Access:
    """What a handler declares: the checks its requests make; or, for an API that needs no
    permission (those Kafka leaves open), why."""

    checks: tuple[Check, ...] = ()
    open_because: str = ""

    @property
    def filters(self) -> bool:
        """Does the API list only what the principal may see (Metadata, ListGroups ...)?
        Asked about everything, it then leaves the rest out rather than refusing."""
        return any(check.filters for check in self.checks)

    @property
    def refusals(self) -> tuple[type[BrokerResponseError], ...]:
        """The authorization errors its answers may carry, once each."""
        return tuple(dict.fromkeys(check.error for check in self.checks if not check.filters))

    def merged(self, other: Access) -> Access:
        return Access(self.checks + other.checks, self.open_because or other.open_because)


ACCESS_ATTRIBUTE = "kafkalite_access"

AnyHandler = TypeVar("AnyHandler", bound=Callable[..., Awaitable[Any]])
"""A handler of any shape (the group handlers take their service first)."""


def access_of(handler: Any) -> Access | None:
    """A registered handler's declaration (through ``functools.partial``), or None."""
    while isinstance(handler, functools.partial):
        handler = handler.func
    found = getattr(handler, ACCESS_ATTRIBUTE, None)
    return found if isinstance(found, Access) else None


def _declare(handler: Any, access: Access) -> None:
    """Adds ``access`` before what the handler declares already: decorators apply inside
    out, so the outermost check, which runs first, is listed first."""
    previous = access_of(handler)
    setattr(handler, ACCESS_ATTRIBUTE, access if previous is None else access.merged(previous))


def declares(*checks: Check, open_because: str = ""
             ) -> Callable[[AnyHandler], AnyHandler]:
    """Handler decorator: the checks the handler makes itself (per topic, per group ...),
    or ``open_because``: why its requests need no permission."""
    if not checks and not open_because:
        raise ValueError("declare the handler's checks, or why it needs none")

    def decorate(handler: AnyHandler) -> AnyHandler:
        _declare(handler, Access(checks, open_because))
        return handler

    return decorate


def requires(check: Check, field: str | None = None,
             deny: Denial | None = None) -> Callable[[AnyHandler], AnyHandler]:
    """Handler decorator: refuses the whole request, without calling the handler, when the
    principal fails ``check`` on the resource named by the request's ``field`` (the Cluster
    when None; a null value is not checked: InitProducerId without a transactional id).
    ``deny`` builds the refusal from the request and the error code (default: the
    top-level error code). The handler's last two arguments are (ctx, body)."""
    errno = check.error.errno
    refuse = deny or top_level_error

    def decorate(handler: AnyHandler) -> AnyHandler:
        @functools.wraps(handler)
        async def checked(*args: Any) -> Body | None:
            ctx, body = args[-2], args[-1]
            name = CLUSTER_NAME if field is None else body[field]
            if name is not None and not check.allows(ctx, name):
                return refuse(body, errno)
            return await handler(*args)

        _declare(checked, Access((check,)))
        return cast(AnyHandler, checked)

    return decorate


# ----------------------------------------------------------------- the checks handlers share

CLUSTER_ACTION = Check(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER)
"""Inter-broker requests: only brokers (and super users) have it."""
REPLICA_CLUSTER_ACTION = Check(AclOperation.CLUSTER_ACTION, ResourceType.CLUSTER,
                               when="from a replica: replica_id >= 0")
"""A request a follower makes (OffsetForLeaderEpoch, ListOffsets) claiming to be a replica."""
DESCRIBE_CLUSTER = Check(AclOperation.DESCRIBE, ResourceType.CLUSTER)
ALTER_CLUSTER = Check(AclOperation.ALTER, ResourceType.CLUSTER)
READ_TOPICS = Check(AclOperation.READ, ResourceType.TOPIC)
WRITE_TOPICS = Check(AclOperation.WRITE, ResourceType.TOPIC)
DESCRIBE_TOPICS = Check(AclOperation.DESCRIBE, ResourceType.TOPIC)
DELETE_TOPICS = Check(AclOperation.DELETE, ResourceType.TOPIC)
ALTER_TOPICS = Check(AclOperation.ALTER, ResourceType.TOPIC)
CREATE_TOPIC = Check(AclOperation.CREATE, ResourceType.CLUSTER,
                     or_else=Check(AclOperation.CREATE, ResourceType.TOPIC, "the topic"),
                     answered=TopicAuthorizationFailedError)
READ_GROUP = Check(AclOperation.READ, ResourceType.GROUP)
DESCRIBE_GROUP = Check(AclOperation.DESCRIBE, ResourceType.GROUP)
LIST_GROUPS = Check(AclOperation.DESCRIBE, ResourceType.CLUSTER,
                    or_else=Check(AclOperation.DESCRIBE, ResourceType.GROUP, "each group"),
                    filters=True)
"""ListGroups: the Cluster shows every group, else each group it may describe."""
WRITE_TRANSACTIONAL_ID = Check(AclOperation.WRITE, ResourceType.TRANSACTIONAL_ID)
DESCRIBE_TRANSACTIONAL_IDS = Check(AclOperation.DESCRIBE, ResourceType.TRANSACTIONAL_ID,
                                   "each transactional id")


# ----------------------------------------------------------------- refusals of whole requests

def top_level_error(body: Body, errno: int) -> Body:
    return {"throttle_time_ms": 0, "error_code": errno}


def per_partition_error(body: Body, errno: int) -> Body:
    """OffsetCommit's answer: the error on every partition of the request."""
    return {"throttle_time_ms": 0, "topics": [
        {"name": topic["name"], "partitions": [
            {"partition_index": p["partition_index"], "error_code": errno}
            for p in topic["partitions"]]}
        for topic in body["topics"]]}


def txn_partition_error(body: Body, errno: int) -> Body:
    """AddPartitionsToTxn's answer (v0-3): the error on every partition of the request."""
    return {"throttle_time_ms": 0, "results_by_topic_v3_and_below": [
        {"name": topic["name"], "results_by_partition": [
            {"partition_index": index, "partition_error_code": errno}
            for index in topic["partitions"]]}
        for topic in body["v3_and_below_topics"]]}


def txn_markers_error(body: Body, errno: int) -> Body:
    """WriteTxnMarkers' answer: the error on every partition of every marker."""
    return {"markers": [
        {"producer_id": marker["producer_id"], "topics": [
            {"name": topic["name"], "partitions": [
                {"partition_index": index, "error_code": errno}
                for index in topic["partition_indexes"]]}
            for topic in marker["topics"]]}
        for marker in body["markers"]]}


# ----------------------------------------------------------------- config resources

_CONFIG_TOPIC = 2
_CONFIG_GROUP = 32
"""The config resource types of a topic and of a group (DescribeConfigs, AlterConfigs);
brokers are the Cluster resource for authorization."""

CONFIG_CHECKS: dict[AclOperation, tuple[Check, Check, Check]] = {
    operation: (Check(operation, ResourceType.TOPIC, "the topic", when="topic configs"),
                Check(operation, ResourceType.CLUSTER, when="broker configs"),
                Check(operation, ResourceType.GROUP, "the group", when="group configs"))
    for operation in (AclOperation.DESCRIBE_CONFIGS, AclOperation.ALTER_CONFIGS)}
"""DescribeConfigs / AlterConfigs: the check of a topic's configs, a broker's, a group's."""


def check_config_access(ctx: Authorizing, operation: AclOperation, config_resource_type: int,
                        name: str) -> None:
    """DescribeConfigs / AlterConfigs on one config resource: raises the authorization error
    (TOPIC_, CLUSTER_ or GROUP_AUTHORIZATION_FAILED) that its entry in the response carries."""
    topic, broker, group = CONFIG_CHECKS[operation]
    if config_resource_type == _CONFIG_TOPIC:
        if not topic.allows(ctx, name):
            raise topic.error(f"{operation_name(operation)} on topic {name!r}")
    elif config_resource_type == _CONFIG_GROUP:
        if not group.allows(ctx, name):
            raise group.error(f"{operation_name(operation)} on group {name!r}")
    elif not broker.allows(ctx):
        raise broker.error(f"{operation_name(operation)} on the cluster")
