"""Deprecated: the demo is ``python -m kafkalite_demo`` now (``tox -e demo`` runs it).

It uses the broker as well as the SDK, so it moved out of the SDK package, which must not
import the broker. ``python -m kafkalite.demo`` still runs it, with a DeprecationWarning,
and will be removed in a later release.
"""

from __future__ import annotations

import importlib
import sys
import warnings

MOVED = "python -m kafkalite.demo is deprecated; run python -m kafkalite_demo"


def main(argv: list[str] | None = None) -> int:
    """Runs ``kafkalite_demo.main`` after warning that this entry point moved."""
    warnings.warn(MOVED, DeprecationWarning, stacklevel=2)
    # Imported by name when called: importing this module loads nothing of the broker.
    demo = importlib.import_module("kafkalite_demo")
    code: int = demo.main(argv)
    return code


if __name__ == "__main__":
    sys.exit(main())
