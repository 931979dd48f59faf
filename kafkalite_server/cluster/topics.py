"""Topic name rules (Kafka's ``Topic.validate``) and topic config validation."""

from __future__ import annotations

import re
from collections.abc import Mapping

from kafkalite.errors import ConfigError
from kafkalite.protocol.errors import InvalidConfigError, InvalidTopicError
from kafkalite_server.cluster.internal_topics import INTERNAL_TOPICS
from kafkalite_server.log.config import LogConfig

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
__all__ = ["INTERNAL_TOPICS", "MAX_NAME_LENGTH", "validate_topic_name", "validated_topic_configs"]


def validate_topic_name(name: str) -> None:
    if not name:
        raise InvalidTopicError("topic name is empty")
    if name in (".", ".."):
        raise InvalidTopicError(f"topic name cannot be {name!r}")
    if len(name) > MAX_NAME_LENGTH:
        raise InvalidTopicError(f"topic name is {len(name)} characters, the limit is "
                                f"{MAX_NAME_LENGTH}")
    if not _LEGAL.fullmatch(name):
        raise InvalidTopicError(f"topic name {name!r} has characters outside "
                                "ASCII letters, digits, '.', '_' and '-'")


def validated_topic_configs(default: LogConfig,
                            configs: Mapping[str, str | None]) -> dict[str, str]:
    """Non-null entries, checked by LogConfig; INVALID_CONFIG names the bad key."""
    kept = {key: value for key, value in configs.items() if value is not None}
    try:
        LogConfig.from_topic_configs(default, kept)
    except ConfigError as exc:
        raise InvalidConfigError(str(exc)) from None
    return kept
