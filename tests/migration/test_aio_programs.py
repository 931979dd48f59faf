"""aiokafka programs run twice against a kafkalite-server: as written (with aiokafka) and
after rewriting ``from aiokafka`` into ``from kafkalite.aio``. Both runs must succeed and
print the same ``RESULT`` line (records, offsets, partitions, committed positions).
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from kafkalite_server import EmbeddedCluster
from tests.conftest import TEST_BROKER_CONFIG
from tests.migration.rewrite import rewrite_aiokafka_imports
from tests.migration.test_programs import run_program

PROGRAMS = Path(__file__).resolve().parent / "aio_programs"


@pytest.fixture(scope="module")
def broker() -> Iterator[EmbeddedCluster]:
    cluster = EmbeddedCluster(1, config={**TEST_BROKER_CONFIG, "num.partitions": "3"}).start()
    yield cluster
    cluster.stop()


def test_rewrite_touches_only_aiokafka_imports() -> None:
    source = ("from aiokafka import AIOKafkaProducer\nfrom aiokafka.errors import X\n"
              "    from aiokafka.structs import TopicPartition\naiokafka_topic = 'aiokafka'\n")
    assert rewrite_aiokafka_imports(source) == (
        "from kafkalite.aio import AIOKafkaProducer\nfrom kafkalite.aio.errors import X\n"
        "    from kafkalite.aio.structs import TopicPartition\naiokafka_topic = 'aiokafka'\n")


@pytest.mark.parametrize("program", sorted(p.name for p in PROGRAMS.glob("*.py")))
def test_aiokafka_program_runs_the_same_on_kafkalite_aio(program: str, broker: EmbeddedCluster,
                                                         tmp_path: Path) -> None:
    original = PROGRAMS / program
    rewritten = tmp_path / program
    rewritten.write_text(rewrite_aiokafka_imports(original.read_text(encoding="utf-8")),
                         encoding="utf-8")
    assert "aiokafka" not in rewritten.read_text(encoding="utf-8").replace("aiokafka's", "")

    stem = program.removesuffix(".py").replace("_", "-")
    expected = run_program(original, broker.bootstrap_servers, f"ak-{stem}")
    migrated = run_program(rewritten, broker.bootstrap_servers, f"kl-{stem}")
    assert migrated == expected
