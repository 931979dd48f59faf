"""Damaged index files: whatever bytes they hold, the log opens and serves every record.

Each example copies a prepared partition directory, damages its ``.index`` and
``.timeindex`` files (bytes overwritten, files cut or extended, or replaced outright),
reopens the log and compares every read with the undamaged log's answers.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from log_batches import decode_offsets, v2_batch

from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log

BATCH = len(v2_batch(3))
CONFIG = LogConfig(segment_bytes=BATCH * 12, index_interval_bytes=1)
BATCHES = 30
FIRST_TIMESTAMP = 1_000


def _write(directory: Path) -> None:
    log = Log.open(directory, CONFIG)
    for i in range(BATCHES):
        log.append_as_leader(v2_batch(3, timestamp=FIRST_TIMESTAMP + 10 * i), leader_epoch=1)
    log.close()


def _reads(log: Log) -> dict[int, list[int]]:
    """The offsets each read from every offset returns (whole batches, as fetched)."""
    return {start: decode_offsets(region.read_bytes())
            for start in range(log.log_start_offset, log.log_end_offset)
            if (region := log.read(start, BATCH * 2)) is not None}


def _timestamp_lookups(log: Log) -> dict[int, tuple[int, int] | None]:
    return {target: log.offset_for_timestamp(target)
            for target in range(FIRST_TIMESTAMP - 5, FIRST_TIMESTAMP + 10 * BATCHES + 5, 4)}


@pytest.fixture(scope="module")
def template(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict, dict]:
    directory = tmp_path_factory.mktemp("template") / "t-0"
    _write(directory)
    log = Log.open(directory, CONFIG, clean_shutdown=True)
    expected = _reads(log), _timestamp_lookups(log)
    log.close()
    indexes = sorted(p.name for p in directory.iterdir() if p.suffix in (".index", ".timeindex"))
    assert len(indexes) == 6 and all((directory / name).stat().st_size for name in indexes)
    return directory, *expected


_damage = st.one_of(
    st.tuples(st.just("overwrite"), st.integers(0, 400), st.binary(min_size=1, max_size=24)),
    st.tuples(st.just("cut"), st.integers(0, 400), st.just(b"")),
    st.tuples(st.just("extend"), st.just(0), st.binary(min_size=1, max_size=40)),
    st.tuples(st.just("replace"), st.just(0), st.binary(max_size=200)),
)


def _apply(path: Path, damage: tuple[str, int, bytes]) -> None:
    kind, at, data = damage
    content = bytearray(path.read_bytes())
    if kind == "overwrite":
        at = min(at, len(content))
        content[at:at + len(data)] = data
    elif kind == "cut":
        del content[at:]
    elif kind == "extend":
        content += data
    else:
        content = bytearray(data)
    path.write_bytes(bytes(content))


@settings(max_examples=150, deadline=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(damages=st.lists(st.tuples(st.integers(0, 5), _damage), min_size=1, max_size=4),
       clean=st.booleans())
def test_any_index_damage_is_rebuilt_and_every_read_is_right(template, tmp_path_factory,
                                                              damages, clean) -> None:
    source, expected_reads, expected_lookups = template
    directory = tmp_path_factory.mktemp("damaged") / "t-0"
    shutil.copytree(source, directory)
    indexes = sorted(p for p in directory.iterdir() if p.suffix in (".index", ".timeindex"))
    for which, damage in damages:
        _apply(indexes[which], damage)
    log = Log.open(directory, CONFIG, clean_shutdown=clean)
    try:
        assert log.log_end_offset == 3 * BATCHES
        assert _reads(log) == expected_reads
        assert _timestamp_lookups(log) == expected_lookups
    finally:
        log.close()
    shutil.rmtree(directory.parent)
