"""Kafka's JAAS configuration text, as far as the broker needs it.

``org.apache.kafka.common.security.plain.PlainLoginModule required user_admin="admin-secret"
user_alice="alice-secret";``: a login module class, a control flag, then ``key=value``
options (values quoted or bare), ending with ``;``. For PLAIN, each ``user_<name>`` option
is a user and password the broker accepts.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from kafkalite.errors import ConfigError

_FLAGS = ("required", "requisite", "sufficient", "optional")
_OPTION = re.compile(r'\s*([A-Za-z0-9_.\-]+)\s*=\s*(?:"((?:[^"\\]|\\.)*)"|([^\s";]+))')


@dataclass(frozen=True)
class JaasEntry:
    module: str
    flag: str
    options: dict[str, str]

    def plain_users(self) -> dict[str, str]:
        return {key[len("user_"):]: value for key, value in self.options.items()
                if key.startswith("user_") and len(key) > len("user_")}


def parse_jaas(key: str, text: str) -> JaasEntry:
    """One login module entry; ConfigError naming ``key`` when it is not one."""
    body = text.strip()
    if not body.endswith(";"):
        raise ConfigError(key, "a JAAS entry ends with ';'")
    body = body[:-1].strip()
    parts = body.split(None, 2)
    if len(parts) < 2:
        raise ConfigError(key, "expected '<LoginModule class> <flag> [key=\"value\" ...];'")
    module, flag = parts[0], parts[1].lower()
    if flag not in _FLAGS:
        raise ConfigError(key, f"{parts[1]!r} is not a JAAS control flag ({', '.join(_FLAGS)})")
    rest = parts[2] if len(parts) == 3 else ""
    options: dict[str, str] = {}
    position = 0
    while position < len(rest):
        if rest[position:].strip() == "":
            break
        match = _OPTION.match(rest, position)
        if match is None:
            raise ConfigError(key, f"cannot read the options from {rest[position:][:30]!r}")
        quoted, bare = match.group(2), match.group(3)
        value = re.sub(r"\\(.)", r"\1", quoted) if quoted is not None else bare
        options[match.group(1)] = value
        position = match.end()
    return JaasEntry(module, flag, options)
