"""Client quotas (KIP-13, KIP-55, KIP-124, KIP-546): which entities carry which quota,
what a change may contain, and which quota applies to a connection. Pure.

An entity is a user, a client id, or a user with a client id; either name may be the
type's *default* (``<default>`` in ZooKeeper, a null name on the wire), which applies to
each user (client id) without an entity of its own. A connection of user ``u`` with client
id ``c`` takes each quota key from the first of these entities that sets it, Kafka's order:

1. user ``u`` + client id ``c``;  2. user ``u`` + default client id;  3. user ``u``;
4. default user + client id ``c``;  5. default user + default client id;  6. default user;
7. client id ``c``;  8. default client id.

The bytes counted against the quota are those of the connections the chosen entity
covers: a quota set for user ``u`` is shared by every client id of ``u``; one set for the
default client id is had by each client id on its own.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from enum import IntEnum

from kafkalite.protocol.errors import InvalidRequestError

USER = "user"
CLIENT_ID = "client-id"
ENTITY_TYPES = (USER, CLIENT_ID)

PRODUCER_BYTE_RATE = "producer_byte_rate"
CONSUMER_BYTE_RATE = "consumer_byte_rate"
REQUEST_PERCENTAGE = "request_percentage"
QUOTA_KEYS: dict[str, bool] = {
    PRODUCER_BYTE_RATE: True, CONSUMER_BYTE_RATE: True, REQUEST_PERCENTAGE: False}
"""Every quota key, and whether its value is a whole number (Kafka's LONG keys)."""

_WHOLE_EPSILON = 1e-6


@dataclass(frozen=True, slots=True)
class Name:
    """An entity's name for one type; None is the type's default."""

    name: str | None

    @property
    def is_default(self) -> bool:
        return self.name is None


DEFAULT = Name(None)


@dataclass(frozen=True, slots=True)
class QuotaEntity:
    """A user, a client id, or both (None: the type is not part of the entity)."""

    user: Name | None = None
    client_id: Name | None = None

    def components(self) -> list[tuple[str, str | None]]:
        """(entity type, name or None for the default), as the wire carries them."""
        found = []
        if self.user is not None:
            found.append((USER, self.user.name))
        if self.client_id is not None:
            found.append((CLIENT_ID, self.client_id.name))
        return found

    def __str__(self) -> str:
        return ", ".join(f"{kind}={'<default>' if name is None else name}"
                         for kind, name in self.components())


def entity_from_wire(components: Iterable[tuple[str, str | None]]) -> QuotaEntity:
    """The entity of an AlterClientQuotas entry; INVALID_REQUEST for an unknown type, a
    type named twice, or no type at all."""
    names: dict[str, Name] = {}
    for kind, name in components:
        if kind not in ENTITY_TYPES:
            raise InvalidRequestError(f"Unhandled client quota entity type: {kind}")
        if kind in names:
            raise InvalidRequestError(f"Duplicate {kind} entity type in the quota entity")
        names[kind] = Name(name)
    if not names:
        raise InvalidRequestError("Invalid empty client quota entity")
    return QuotaEntity(names.get(USER), names.get(CLIENT_ID))


@dataclass(frozen=True, slots=True)
class QuotaOp:
    key: str
    value: float
    remove: bool


def altered(current: Mapping[str, float], ops: Iterable[QuotaOp]) -> dict[str, float]:
    """An entity's quotas after ``ops``; INVALID_REQUEST naming the first bad op (an unknown
    key, a value that is not positive, a fraction for a whole-number key)."""
    result = dict(current)
    seen: set[str] = set()
    for op in ops:
        whole = QUOTA_KEYS.get(op.key)
        if whole is None:
            raise InvalidRequestError(f"Invalid configuration key {op.key}")
        if op.key in seen:
            raise InvalidRequestError(f"Duplicate quota key {op.key}")
        seen.add(op.key)
        if op.remove:
            result.pop(op.key, None)
            continue
        if not op.value > 0:
            raise InvalidRequestError(f"Quota {op.key} must be positive, not {op.value}")
        if whole and abs(op.value - round(op.value)) > _WHOLE_EPSILON:
            raise InvalidRequestError(f"Configuration {op.key} must be a Long value")
        result[op.key] = float(round(op.value)) if whole else op.value
    return result


QuotaConfigs = Mapping[QuotaEntity, Mapping[str, float]]
"""Every entity with quotas, and its quotas."""


def applicable(configs: QuotaConfigs, key: str, user: str,
               client_id: str) -> tuple[float, QuotaEntity] | None:
    """The ``key`` quota of a connection and the entity its bytes are counted under (the
    chosen entity with the connection's own names), or None without one."""
    for entity in _precedence(user, client_id):
        value = configs.get(entity, {}).get(key)
        if value is not None:
            return value, QuotaEntity(
                None if entity.user is None else Name(user),
                None if entity.client_id is None else Name(client_id))
    return None


def _precedence(user: str, client_id: str) -> list[QuotaEntity]:
    u, c = Name(user), Name(client_id)
    return [QuotaEntity(u, c), QuotaEntity(u, DEFAULT), QuotaEntity(u, None),
            QuotaEntity(DEFAULT, c), QuotaEntity(DEFAULT, DEFAULT), QuotaEntity(DEFAULT, None),
            QuotaEntity(None, c), QuotaEntity(None, DEFAULT)]


class MatchType(IntEnum):
    """DescribeClientQuotas filter components."""

    EXACT = 0
    DEFAULT = 1
    SPECIFIED = 2


@dataclass(frozen=True, slots=True)
class FilterComponent:
    entity_type: str
    match_type: MatchType
    match: str | None


def filter_from_wire(components: Iterable[tuple[str, int, str | None]]
                     ) -> list[FilterComponent]:
    """A DescribeClientQuotas filter; INVALID_REQUEST for an unknown entity or match
    type, or a type filtered twice."""
    found: list[FilterComponent] = []
    for kind, match_type, match in components:
        if kind not in ENTITY_TYPES:
            raise InvalidRequestError(f"Custom entity type {kind!r} not supported")
        if any(c.entity_type == kind for c in found):
            raise InvalidRequestError(f"Duplicate {kind} filter component entity type")
        try:
            found.append(FilterComponent(kind, MatchType(match_type), match))
        except ValueError:
            raise InvalidRequestError(f"Unexpected match type {match_type}") from None
        if found[-1].match_type == MatchType.EXACT and match is None:
            raise InvalidRequestError(f"Exact match of {kind} requires a name")
    return found


def matching(configs: QuotaConfigs, components: list[FilterComponent],
             strict: bool) -> list[tuple[QuotaEntity, Mapping[str, float]]]:
    """The entities (with quotas) a DescribeClientQuotas filter selects: each component
    must match the entity's name of its type; ``strict`` also excludes entities with a type
    the filter does not name."""
    selected = []
    for entity, quotas in configs.items():
        if not quotas:
            continue
        names = dict(entity.components())
        if strict and set(names) != {c.entity_type for c in components}:
            continue
        if all(c.entity_type in names and _matches(c, names[c.entity_type])
               for c in components):
            selected.append((entity, quotas))
    return sorted(selected, key=lambda item: str(item[0]))


def _matches(component: FilterComponent, name: str | None) -> bool:
    if component.match_type == MatchType.DEFAULT:
        return name is None
    if component.match_type == MatchType.SPECIFIED:
        return name is not None
    return name == component.match
