"""Client quotas (KIP-546): DescribeClientQuotas (48) and AlterClientQuotas (49), answered
by any broker. The shapes follow Kafka's Admin API (kafka-python has none): an entity maps
entity types (``"user"``, ``"client-id"``) to a name, None being the type's default.
"""

from __future__ import annotations

import enum
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from kafkalite.admin.handler import AdminApiHandler, ApiResult, Request
from kafkalite.admin.lookup import AnyBroker
from kafkalite.protocol import ApiKey
from kafkalite.protocol.errors import BrokerResponseError, error_for_code

USER = "user"
CLIENT_ID = "client-id"


class ClientQuotaEntity(Mapping[str, str | None]):
    """A quota entity, e.g. ``ClientQuotaEntity({"user": "alice", "client-id": None})``
    (alice's default client id); hashable, so it keys the results."""

    def __init__(self, entries: Mapping[str, str | None]) -> None:
        self._entries = dict(sorted(entries.items()))

    def __getitem__(self, key: str) -> str | None:
        return self._entries[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._entries)

    def __len__(self) -> int:
        return len(self._entries)

    def __hash__(self) -> int:
        return hash(tuple(self._entries.items()))

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Mapping) and dict(self._entries) == dict(other)

    def __repr__(self) -> str:
        return f"ClientQuotaEntity({self._entries!r})"

    def to_wire(self) -> list[dict[str, Any]]:
        return [{"entity_type": kind, "entity_name": name}
                for kind, name in self._entries.items()]


class MatchType(enum.IntEnum):
    EXACT = 0
    DEFAULT = 1
    SPECIFIED = 2


@dataclass(frozen=True)
class ClientQuotaFilterComponent:
    """One condition of :meth:`KafkaAdminClient.describe_client_quotas`' filter."""

    entity_type: str
    match_type: MatchType
    match: str | None = None

    @classmethod
    def of_entity(cls, entity_type: str, name: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, MatchType.EXACT, name)

    @classmethod
    def of_default_entity(cls, entity_type: str) -> ClientQuotaFilterComponent:
        return cls(entity_type, MatchType.DEFAULT)

    @classmethod
    def of_entity_type(cls, entity_type: str) -> ClientQuotaFilterComponent:
        """Any entity with a (non-default) name of the type."""
        return cls(entity_type, MatchType.SPECIFIED)


@dataclass(frozen=True)
class ClientQuotaAlteration:
    """Changes of one entity's quotas: ``{key: value}``, a value of None removing the key."""

    entity: ClientQuotaEntity
    ops: Mapping[str, float | None] = field(default_factory=dict)


Quotas = dict[ClientQuotaEntity, dict[str, float]]
Outcomes = dict[ClientQuotaEntity, BrokerResponseError | None]

_KEY = "client-quotas"


class DescribeClientQuotas(AdminApiHandler[str, Quotas]):
    api_key = ApiKey.DESCRIBE_CLIENT_QUOTAS

    def __init__(self, components: Sequence[ClientQuotaFilterComponent], strict: bool) -> None:
        super().__init__(AnyBroker())
        self.components = components
        self.strict = strict

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {"strict": self.strict, "components": [
            {"entity_type": c.entity_type, "match_type": c.match_type, "match": c.match}
            for c in self.components]})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, Quotas]:
        (key,) = keys
        outcome: ApiResult[str, Quotas] = ApiResult()
        if not outcome.error(key, body["error_code"], "describe_client_quotas",
                             body["error_message"]):
            outcome.complete(key, {
                ClientQuotaEntity({e["entity_type"]: e["entity_name"] for e in entry["entity"]}):
                {value["key"]: value["value"] for value in entry["values"]}
                for entry in body["entries"] or ()})
        return outcome


class AlterClientQuotas(AdminApiHandler[str, Outcomes]):
    api_key = ApiKey.ALTER_CLIENT_QUOTAS

    def __init__(self, alterations: Sequence[ClientQuotaAlteration], validate_only: bool) -> None:
        super().__init__(AnyBroker())
        self.alterations = alterations
        self.validate_only = validate_only

    def build_request(self, node: int, keys: Sequence[str]) -> Request:
        return Request(self.api_key, {"validate_only": self.validate_only, "entries": [
            {"entity": alteration.entity.to_wire(), "ops": [
                {"key": key, "value": 0.0 if value is None else float(value),
                 "remove": value is None} for key, value in alteration.ops.items()]}
            for alteration in self.alterations]})

    def handle_response(self, node: int, keys: Sequence[str], body: Mapping[str, Any],
                        ) -> ApiResult[str, Outcomes]:
        (key,) = keys
        outcome: ApiResult[str, Outcomes] = ApiResult()
        results: Outcomes = {}
        for entry in body["entries"]:
            entity = ClientQuotaEntity({e["entity_type"]: e["entity_name"]
                                        for e in entry["entity"]})
            code = entry["error_code"]
            results[entity] = None if code == 0 else error_for_code(code)(
                f"altering the quotas of {dict(entity)}: {entry['error_message']}")
        outcome.complete(key, results)
        return outcome
