"""docs/architecture.md is a map of the tree: every path it names exists."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "architecture.md"
_PATH = re.compile(r"`((?:kafkalite|kafkalite_server|kafkalite_demo|tests|docs|benchmarks)"
                   r"/[^`\s]*)`")


def named_paths(text: str) -> list[str]:
    """The repository paths the page names in backticks (``kafkalite_server/...``)."""
    return sorted(set(_PATH.findall(text)))


def test_the_page_names_paths() -> None:
    assert len(named_paths(PAGE.read_text(encoding="utf-8"))) >= 20


def test_every_path_the_architecture_page_names_exists() -> None:
    missing = [path for path in named_paths(PAGE.read_text(encoding="utf-8"))
               if not (ROOT / path).exists()]
    assert missing == [], f"docs/architecture.md names paths that do not exist: {missing}"


def test_a_path_that_does_not_exist_is_found() -> None:
    text = "the store (`kafkalite_server/cluster/no_such_store.py`) and `kafkalite/`"
    assert named_paths(text) == ["kafkalite/", "kafkalite_server/cluster/no_such_store.py"]
    assert not (ROOT / "kafkalite_server/cluster/no_such_store.py").exists()
