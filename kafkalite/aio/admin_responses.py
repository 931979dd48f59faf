"""The answers of :class:`~kafkalite.aio.admin.AIOKafkaAdminClient` in aiokafka's shapes.

aiokafka's admin returns several answers as its protocol objects: ``resp.topic_errors``
is a list of ``(topic, error_code, error_message)`` tuples and ``resp.to_object()`` the
same as dicts. Programs read those fields, so kafkalite returns objects with the same
class names, fields (at the version aiokafka speaks to a current broker) and tuple order,
built from what the SDK's admin handlers already parsed: no request is decoded twice.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar


@dataclass(frozen=True)
class Array:
    """A field holding a list of tuples, one value per field in ``fields``."""

    name: str
    fields: tuple[Field, ...]


Field = str | Array


def _name(field: Field) -> str:
    return field if isinstance(field, str) else field.name


def _as_object(field: Field, value: Any) -> Any:
    if not isinstance(field, Array) or value is None:
        return value
    return [{_name(sub): _as_object(sub, item) for sub, item in zip(field.fields, row,
                                                                   strict=True)}
            for row in value]


class AdminResponse:
    """An answer with aiokafka's fields: each one an attribute, ``to_object()`` as dicts."""

    SCHEMA: ClassVar[tuple[Field, ...]] = ()

    def __init__(self, *values: Any) -> None:
        if len(values) != len(self.SCHEMA):
            raise TypeError(f"{type(self).__name__} takes {len(self.SCHEMA)} values "
                            f"({', '.join(map(_name, self.SCHEMA))}), not {len(values)}")
        for field, value in zip(self.SCHEMA, values, strict=True):
            setattr(self, _name(field), value)

    def to_object(self) -> dict[str, Any]:
        return {_name(f): _as_object(f, getattr(self, _name(f))) for f in self.SCHEMA}

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AdminResponse):
            return NotImplemented
        return type(self) is type(other) and self.to_object() == other.to_object()

    __hash__ = None  # type: ignore[assignment]  # mutable, as aiokafka's

    def __repr__(self) -> str:
        shown = ", ".join(f"{_name(f)}={getattr(self, _name(f))!r}" for f in self.SCHEMA)
        return f"{type(self).__name__}({shown})"


_TOPIC_ERRORS = Array("topic_errors", ("topic", "error_code", "error_message"))


class CreateTopicsResponse_v3(AdminResponse):
    SCHEMA = ("throttle_time_ms", _TOPIC_ERRORS)


class DeleteTopicsResponse_v3(AdminResponse):
    SCHEMA = ("throttle_time_ms", Array("topic_error_codes", ("topic", "error_code")))


class CreatePartitionsResponse_v1(AdminResponse):
    SCHEMA = ("throttle_time_ms", _TOPIC_ERRORS)


_CONFIG_SYNONYMS = Array("config_synonyms", ("config_name", "config_value", "config_source"))
_CONFIG_ENTRIES = Array("config_entries", ("config_names", "config_value", "read_only",
                                           "config_source", "is_sensitive", _CONFIG_SYNONYMS))


class DescribeConfigsResponse_v2(AdminResponse):
    SCHEMA = ("throttle_time_ms", Array("resources", (
        "error_code", "error_message", "resource_type", "resource_name", _CONFIG_ENTRIES)))


class AlterConfigsResponse_v1(AdminResponse):
    SCHEMA = ("throttle_time_ms", Array("resources", (
        "error_code", "error_message", "resource_type", "resource_name")))


class DescribeGroupsResponse_v2(AdminResponse):
    SCHEMA = ("throttle_time_ms", Array("groups", (
        "error_code", "group", "state", "protocol_type", "protocol",
        Array("members", ("member_id", "client_id", "client_host", "member_metadata",
                          "member_assignment")))))

