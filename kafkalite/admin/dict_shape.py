"""Results that read both as kafkalite's typed objects and as kafka-python 3's dicts.

kafka-python 3.0 returns plain dicts from ``list_groups`` and ``describe_groups``
(``g['group_id']``, ``g['group_state']``); kafkalite returns dataclasses
(``g.group_id``). A result class that mixes in :class:`DictShape` answers both, so a
program written for either runs unchanged: ``[g['group_id'] for g in admin.list_groups()]``
and ``[g.group_id for g in admin.list_groups()]`` give the same list.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any, ClassVar


class DictShape:
    """Read-only dict access to a result under kafka-python 3's key names.

    ``DICT_KEYS`` lists the keys in kafka-python's order; ``DICT_ATTRIBUTES`` names the
    attribute behind a key where kafkalite's name differs (``group_state`` is ``state``).
    """

    DICT_KEYS: ClassVar[tuple[str, ...]] = ()
    DICT_ATTRIBUTES: ClassVar[Mapping[str, str]] = {}

    def __getitem__(self, key: str) -> Any:
        if key not in self.DICT_KEYS:
            raise KeyError(key)
        return getattr(self, self.DICT_ATTRIBUTES.get(key, key))

    def get(self, key: str, default: Any = None) -> Any:
        return self[key] if key in self.DICT_KEYS else default

    def keys(self) -> list[str]:
        return list(self.DICT_KEYS)

    def values(self) -> list[Any]:
        return [self[key] for key in self.DICT_KEYS]

    def items(self) -> list[tuple[str, Any]]:
        return [(key, self[key]) for key in self.DICT_KEYS]

    def __contains__(self, key: object) -> bool:
        return key in self.DICT_KEYS

    def __iter__(self) -> Iterator[str]:
        return iter(self.DICT_KEYS)

    def __len__(self) -> int:
        return len(self.DICT_KEYS)

    def to_dict(self) -> dict[str, Any]:
        """kafka-python's dict, nested results included."""
        return {key: _plain(value) for key, value in self.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, DictShape):
        return value.to_dict()
    if isinstance(value, list):
        return [_plain(item) for item in value]
    return value
