"""Recovery: torn tails, CRC damage, lost or corrupt indexes, later segments dropped."""

from __future__ import annotations

from pathlib import Path

from log_batches import decode_offsets, v2_batch

from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log

BATCH = len(v2_batch(3))
CONFIG = LogConfig(segment_bytes=BATCH * 4, index_interval_bytes=BATCH)


def _write_log(directory: Path, batches: int = 20) -> Log:
    log = Log.open(directory, CONFIG)
    for i in range(batches):
        log.append_as_leader(v2_batch(3, timestamp=1_000 + i), leader_epoch=1 + i // 10)
    return log


def _all_offsets(log: Log) -> list[int]:
    offsets: list[int] = []
    position = log.log_start_offset
    while (region := log.read(position, 1 << 20)) is not None:
        chunk = decode_offsets(region.read_bytes())
        offsets.extend(o for o in chunk if o >= position)
        position = chunk[-1] + 1
    return offsets


def _index_bytes(directory: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted(directory.iterdir())
            if p.suffix in (".index", ".timeindex")}


def test_torn_tail_is_truncated(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write_log(directory).close()  # 20 batches, 4 a segment: last segment holds 48..59
    last = directory / f"{48:020d}.log"
    with open(last, "r+b") as file:
        file.truncate(BATCH * 2 + BATCH // 2)
    log = Log.open(directory, CONFIG, recovery_point=30)
    assert log.log_end_offset == 54
    assert _all_offsets(log) == list(range(54))
    assert last.stat().st_size == BATCH * 2
    assert log.recovery_point == 30
    info = log.append_as_leader(v2_batch(1), leader_epoch=2)
    assert info.first_offset == 54


def test_crc_damage_drops_the_batch_and_every_later_segment(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write_log(directory).close()
    damaged = directory / f"{24:020d}.log"  # segment 24..35; damage its second batch
    data = bytearray(damaged.read_bytes())
    data[BATCH + BATCH - 3] ^= 0xFF
    damaged.write_bytes(bytes(data))
    log = Log.open(directory, CONFIG, recovery_point=0)
    assert log.log_end_offset == 27
    assert _all_offsets(log) == list(range(27))
    assert [s.base_offset for s in log.segments] == [0, 12, 24]
    assert not (directory / f"{36:020d}.log").exists()
    assert log.leader_epoch_cache.entries == [(1, 0)]  # epoch 2 began at 30, now cut


def test_recovery_starts_at_the_recovery_point_segment(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write_log(directory).close()
    early = directory / f"{0:020d}.log"
    data = bytearray(early.read_bytes())
    data[-3] ^= 0xFF  # damage below the recovery point goes unnoticed, as in Kafka
    early.write_bytes(bytes(data))
    log = Log.open(directory, CONFIG, recovery_point=40)
    assert log.log_end_offset == 60


def test_missing_index_is_rebuilt_even_after_a_clean_shutdown(tmp_path: Path) -> None:
    """An inactive segment loads lazily: its missing index is rebuilt on first use."""
    directory = tmp_path / "t-0"
    _write_log(directory).close()
    before = _index_bytes(directory)
    (directory / f"{12:020d}.index").unlink()
    (directory / f"{24:020d}.timeindex").unlink()
    log = Log.open(directory, CONFIG, clean_shutdown=True)
    assert _all_offsets(log) == list(range(60))
    log.close()
    assert _index_bytes(directory) == before
    assert before[f"{12:020d}.index"] and before[f"{24:020d}.timeindex"]  # not vacuous


def test_corrupt_index_fails_the_sanity_check_and_is_rebuilt(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write_log(directory).close()
    before = _index_bytes(directory)
    index = directory / f"{12:020d}.index"
    index.write_bytes(index.read_bytes()[:-8] + b"\x00\x00\x00\x02\x00\x00\x00\x05")
    partial = directory / f"{24:020d}.timeindex"
    partial.write_bytes(partial.read_bytes() + b"\x01\x02")
    log = Log.open(directory, CONFIG, clean_shutdown=True)
    assert _all_offsets(log) == list(range(60))
    assert log.log_end_offset == 60 and log.recovery_point == 60
    log.close()
    assert _index_bytes(directory) == before


def test_temp_and_orphan_files_are_removed(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write_log(directory, batches=2).close()
    (directory / f"{0:020d}.log.deleted").write_bytes(b"x")
    (directory / "leader-epoch-checkpoint.tmp").write_bytes(b"x")
    (directory / f"{500:020d}.index").write_bytes(b"")
    (directory / f"{500:020d}.txnindex").write_bytes(b"")
    (directory / f"{500:020d}.snapshot").write_bytes(b"")
    log = Log.open(directory, CONFIG, clean_shutdown=True)
    end = log.log_end_offset
    log.close()
    assert sorted(p.name for p in directory.iterdir()) == [
        f"{0:020d}.index", f"{0:020d}.log", f"{0:020d}.timeindex", f"{end:020d}.snapshot",
        "leader-epoch-checkpoint"]


def test_log_start_offset_above_the_end_restarts_the_log(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write_log(directory, batches=2).close()
    log = Log.open(directory, CONFIG, log_start_offset=100, clean_shutdown=True)
    assert (log.log_start_offset, log.log_end_offset) == (100, 100)
    assert [s.base_offset for s in log.segments] == [100]


def test_epoch_cache_is_rebuilt_when_its_checkpoint_is_lost(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    _write_log(directory).close()
    (directory / "leader-epoch-checkpoint").write_text("0\n5\n1 0\n")  # malformed
    log = Log.open(directory, CONFIG, clean_shutdown=True)
    assert log.leader_epoch_cache.entries == [(1, 0), (2, 30)]
