"""The migration contract's only edit: kafka-python imports become kafkalite imports.

``from kafka ...`` becomes ``from kafkalite ...`` and ``import kafka`` becomes
``import kafkalite as kafka``; nothing else in a program changes. For aiokafka,
``from aiokafka ...`` becomes ``from kafkalite.aio ...``.
"""

from __future__ import annotations

import re

_FROM = re.compile(r"^(\s*)from kafka(\.|\s)", re.MULTILINE)
_IMPORT = re.compile(r"^(\s*)import kafka(\s*)$", re.MULTILINE)


def rewrite_imports(source: str) -> str:
    source = _FROM.sub(r"\1from kafkalite\2", source)
    return _IMPORT.sub(r"\1import kafkalite as kafka\2", source)


_FROM_AIOKAFKA = re.compile(r"^(\s*)from aiokafka(\.|\s)", re.MULTILINE)


def rewrite_aiokafka_imports(source: str) -> str:
    return _FROM_AIOKAFKA.sub(r"\1from kafkalite.aio\2", source)
