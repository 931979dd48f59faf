"""Every ```python block of the README and of every docs page runs against a real broker.

The blocks of one page run in order in one namespace (a later block may use what an earlier
one defined), against a fresh EmbeddedCluster whose address replaces ``localhost:9092``
(and the ``bootstrap_servers=...`` placeholder). A block that cannot run here (Spark needs a
session, a block shows a fragment) opts out with ``<!-- skip-example -->`` on the line
before its opening fence.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from kafkalite_server import EmbeddedCluster

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SKIP_MARKER = "<!-- skip-example -->"
DEFAULT_ADDRESS = "localhost:9092"
_FENCE = re.compile(r"^```python[^\n]*\n(.*?)^```[ \t]*$", re.MULTILINE | re.DOTALL)
_PLACEHOLDER = re.compile(r"bootstrap_servers=\.\.\.")


class Example(NamedTuple):
    page: str
    line: int
    source: str


def extract_examples(page: Path) -> list[Example]:
    """The page's runnable python blocks (those not preceded by the skip marker)."""
    text = page.read_text(encoding="utf-8")
    examples = []
    for match in _FENCE.finditer(text):
        before = text[:match.start()].rstrip().rsplit("\n", 1)[-1].strip()
        if before == SKIP_MARKER:
            continue
        line = text.count("\n", 0, match.start()) + 2
        examples.append(Example(page.name, line, match.group(1)))
    return examples


def with_address(source: str, address: str) -> str:
    source = source.replace(DEFAULT_ADDRESS, address)
    return _PLACEHOLDER.sub(f"bootstrap_servers={address!r}", source)


PAGES = [ROOT / "README.md", *sorted(DOCS.glob("**/*.md"))]
PAGES_WITH_EXAMPLES = [page for page in PAGES if extract_examples(page)]


def test_docs_have_examples() -> None:
    assert PAGES_WITH_EXAMPLES, f"no ```python block found under {DOCS}"


def test_extraction_honours_the_skip_marker(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("# t\n\n```python\nx = 1\n```\n\n" + SKIP_MARKER +
                    "\n```python\nraise SystemExit\n```\n\n```python\ny = x + 1\n```\n")
    examples = extract_examples(page)
    assert [e.source for e in examples] == ["x = 1\n", "y = x + 1\n"]
    assert [e.line for e in examples] == [4, 13]


@pytest.mark.parametrize("page", PAGES_WITH_EXAMPLES, ids=lambda p: str(p.relative_to(ROOT)))
def test_page_examples_run(page: Path, cluster_factory: Callable[..., EmbeddedCluster],
                           tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    cluster = cluster_factory()
    monkeypatch.chdir(tmp_path)
    namespace: dict[str, object] = {"__name__": f"docs_{page.stem}"}
    spark_before = _active_spark_session()
    try:
        for example in extract_examples(page):
            code = compile(with_address(example.source, cluster.bootstrap_servers),
                           f"{example.page}:{example.line}", "exec")
            exec(code, namespace)
    finally:
        # A page that started Spark stops it, so later Spark tests get their own settings
        # (getOrCreate would otherwise hand them this page's session).
        spark_after = _active_spark_session()
        if spark_after is not None and spark_after is not spark_before:
            spark_after.stop()


def _active_spark_session() -> Any:
    sql = sys.modules.get("pyspark.sql")
    return None if sql is None else sql.SparkSession.getActiveSession()


def migration_rewrite(source: str) -> str:
    """docs/migration.md's contract: ``from kafka`` becomes ``from kafkalite``, and
    ``import kafka`` becomes ``import kafkalite as kafka``."""
    source = re.sub(r"^(\s*)from kafka(?=[ .])", r"\1from kafkalite", source, flags=re.MULTILINE)
    return re.sub(r"^(\s*)import kafka$", r"\1import kafkalite as kafka", source,
                  flags=re.MULTILINE)


def test_the_migration_example_is_its_own_contract_applied() -> None:
    text = (DOCS / "migration.md").read_text(encoding="utf-8")
    before, after = _FENCE.findall(text[text.index("Before and after:"):])[:2]
    assert "from kafka import" in before
    assert after == migration_rewrite(before)
