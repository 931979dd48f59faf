"""Topic name rules (Kafka's ``Topic.validate``)."""

from __future__ import annotations

import re

from kafkalite.protocol.errors import InvalidTopicError
from kafkalite_server.cluster.internal_topics import INTERNAL_TOPICS

MAX_NAME_LENGTH = 249
_LEGAL = re.compile(r"[a-zA-Z0-9._-]+")
__all__ = ["INTERNAL_TOPICS", "MAX_NAME_LENGTH", "validate_topic_name"]


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
