"""Regex subscriptions of consumer groups (KIP-848's ``subscribed_topic_regex``).

Kafka evaluates them with RE2/J; kafkalite with Python's :mod:`re`, after refusing the
constructs RE2 does not have (so a pattern accepted here means the same in Kafka):
backreferences (``\\1``, ``(?P=name)``), lookahead and lookbehind (``(?=``, ``(?!``,
``(?<=``, ``(?<!``), atomic groups (``(?>``), conditionals (``(?(``) and possessive
quantifiers (``*+``, ``++``, ``?+``, ``}+``). A topic is subscribed when the whole name
matches, as RE2/J's ``matches()``; internal topics never match.

Differences that remain: Python's ``\\d``, ``\\w`` and ``\\s`` match Unicode classes where
RE2 matches ASCII only (topic names are ASCII, so this does not change which topics
match), and RE2's ``\\pN``-style and ``[[:alpha:]]`` classes are refused by Python.
"""

from __future__ import annotations

import re
from functools import lru_cache

_UNSUPPORTED = (
    (re.compile(r"\\[1-9]"), "backreferences"),
    (re.compile(r"\(\?P="), "named backreferences"),
    (re.compile(r"\(\?<?[=!]"), "lookaround"),
    (re.compile(r"\(\?>"), "atomic groups"),
    (re.compile(r"\(\?\("), "conditionals"),
    (re.compile(r"(?<!\\)[*+?}]\+"), "possessive quantifiers"),
)


class TopicRegexError(ValueError):
    """The pattern is not valid, or uses what RE2 does not have."""


@lru_cache(maxsize=256)
def compile_topic_regex(pattern: str) -> re.Pattern[str]:
    for construct, name in _UNSUPPORTED:
        if construct.search(pattern):
            raise TopicRegexError(f"{pattern!r} uses {name}, which RE2 does not support")
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise TopicRegexError(f"{pattern!r} is not a valid regular expression: {exc}") from None


def matching_topics(pattern: str, topics: frozenset[str]) -> frozenset[str]:
    """The topics whose whole name matches ``pattern`` (already validated)."""
    compiled = compile_topic_regex(pattern)
    return frozenset(t for t in topics if compiled.fullmatch(t))
