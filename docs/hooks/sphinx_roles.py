"""A griffe extension for the API reference: the code's docstrings name other objects the
Sphinx way (``:class:`Producer```, ``:meth:`~Consumer.poll```), which markdown would print
literally; this turns each into a code span (``Producer``, ``poll``) before rendering."""

from __future__ import annotations

import re
from typing import Any

import griffe

ROLE = re.compile(r":(?:class|meth|func|attr|mod|data|exc|obj):`(~?)([^`]+)`")


def _code_span(match: re.Match[str]) -> str:
    shortened, target = match.groups()
    return f"`{target.rsplit('.', 1)[-1] if shortened else target}`"


class SphinxRoles(griffe.Extension):
    def on_instance(self, *, obj: griffe.Object, **kwargs: Any) -> None:
        if obj.docstring is not None:
            obj.docstring.value = ROLE.sub(_code_span, obj.docstring.value)
