"""What AlterConfigs (33) and IncrementalAlterConfigs (44) turn a resource's configs into.

AlterConfigs replaces a resource's whole set of overrides with the request's entries (a
key left out returns to its default); a key given twice keeps its last value, as Kafka did
before 3.2 and as clients that re-send every described entry plus their change expect. IncrementalAlterConfigs edits key by key: SET,
DELETE (back to the default), and for list-typed keys APPEND / SUBTRACT, which start from
the current override or, without one, from Kafka's default list. Both only compute the new
set of overrides; the controller validates and persists it. Errors follow Kafka: a null
value, or a key given twice to IncrementalAlterConfigs, is INVALID_REQUEST; APPEND to a
non-list key is INVALID_CONFIG.

Internal topics keep the settings the broker's own state relies on: ``__consumer_offsets``
must stay ``cleanup.policy=compact`` (with ``delete`` in the policy, time and size retention
would drop committed offsets).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import IntEnum

from kafkalite.protocol.errors import InvalidConfigError, InvalidRequestError
from kafkalite_server.cluster.internal_topics import INTERNAL_TOPICS
from kafkalite_server.log.config import LogConfig


class AlterOp(IntEnum):
    """IncrementalAlterConfigs ``config_operation`` codes."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


@dataclass(frozen=True, slots=True)
class ConfigEdit:
    name: str
    op: AlterOp
    value: str | None


def replaced(entries: Sequence[tuple[str, str | None]]) -> dict[str, str]:
    """AlterConfigs: the request's entries are the resource's complete new overrides."""
    nulls = [name for name, value in entries if value is None]
    if nulls:
        raise InvalidRequestError(f"null value not supported for: {', '.join(nulls)}")
    return {name: value for name, value in entries if value is not None}


def edited(current: Mapping[str, str], edits: Sequence[ConfigEdit],
           list_default: Mapping[str, str]) -> dict[str, str]:
    """IncrementalAlterConfigs: ``current`` overrides after ``edits``.

    ``list_default`` maps each list-typed key to its default text (the start of an APPEND
    or SUBTRACT on a key without an override); other keys refuse APPEND/SUBTRACT.
    """
    _refuse_duplicates([edit.name for edit in edits])
    result = dict(current)
    for edit in edits:
        if edit.op == AlterOp.DELETE:
            result.pop(edit.name, None)
            continue
        if edit.value is None:
            raise InvalidRequestError(f"null value not supported for: {edit.name}")
        if edit.op == AlterOp.SET:
            result[edit.name] = edit.value
            continue
        if edit.name not in list_default:
            verb = "append" if edit.op == AlterOp.APPEND else "subtract"
            raise InvalidConfigError(f"{edit.name}: config value {verb} is not allowed for a "
                                     "key that is not a list")
        items = _split(result.get(edit.name, list_default[edit.name]))
        changes = _split(edit.value)
        if edit.op == AlterOp.APPEND:
            items += [item for item in changes if item not in items]
        else:
            items = [item for item in items if item not in changes]
        result[edit.name] = ",".join(items)
    return result


def edit_from_wire(name: str, op: int, value: str | None) -> ConfigEdit:
    try:
        return ConfigEdit(name, AlterOp(op), value)
    except ValueError:
        raise InvalidRequestError(f"{name}: unknown config operation {op}") from None


def check_internal_topic(topic: str, config: LogConfig) -> None:
    """Refuses settings that would let retention delete an internal topic's records."""
    if topic in INTERNAL_TOPICS and config.deletes_old_segments:
        raise InvalidConfigError(
            f"cleanup.policy: {topic!r} is an internal topic and must stay 'compact'; with "
            f"'{config.cleanup_policy}' retention would delete the broker's own state")


def _split(text: str) -> list[str]:
    return [item.strip() for item in text.split(",") if item.strip()]


def _refuse_duplicates(names: Sequence[str]) -> None:
    twice = sorted(name for name, count in Counter(names).items() if count > 1)
    if twice:
        raise InvalidRequestError(f"duplicate config keys: {', '.join(twice)}")
