"""The cleaner manager: the filthiest compacted log first, only above its dirty ratio,
never a delete-only log, and the first dirty offset saved in Kafka's checkpoint format."""

from __future__ import annotations

from pathlib import Path

from cleaner_logs import Clock, keyed_batch

from kafkalite_server.log.cleaner_manager import CLEANER_OFFSET_CHECKPOINT, CleanerConfig
from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.log import Log
from kafkalite_server.log.manager import LogManager

START = 1_000_000


def _fill(log: Log, writes: int, keys: int) -> None:
    for i in range(writes):
        log.append_as_leader(keyed_batch([(b"k%d" % (i % keys), b"v%d" % i)]), leader_epoch=0)
    log.roll()


def test_the_dirtiest_eligible_log_is_cleaned_first_and_checkpointed(tmp_path: Path) -> None:
    clock = Clock(START)
    compact = LogConfig(cleanup_policy="compact", segment_bytes=300, file_delete_delay_ms=0,
                        min_cleanable_dirty_ratio=0.3)
    manager = LogManager([tmp_path], compact, now_ms=clock,
                         cleaner_config=CleanerConfig(enable=False))
    few_keys = manager.create_log("few", 0)  # 40 writes of 2 keys: very dirty
    many_keys = manager.create_log("many", 0)  # 40 writes of 40 keys: nothing to drop
    deleted = manager.create_log("plain", 0, LogConfig(cleanup_policy="delete",
                                                      segment_bytes=300))
    for log, keys in ((few_keys, 2), (many_keys, 40), (deleted, 1)):
        _fill(log, 40, keys)
    cleaner = manager.start_cleaner(lambda log: log.log_end_offset)

    first = cleaner.clean_once()
    assert first is not None and first.stats.records_dropped == 38  # "few" went first
    second = cleaner.clean_once()  # "many" is dirty too (ratio 1.0 >= 0.3), nothing drops
    assert second is not None and second.stats.records_dropped == 0
    assert cleaner.clean_once() is None  # both clean, no tombstones; "plain" never qualifies
    assert len(deleted.segments) > 2  # the delete-policy log was never compacted

    lines = (tmp_path / CLEANER_OFFSET_CHECKPOINT).read_text().splitlines()
    assert lines[0] == "0" and lines[1] == "2"
    assert sorted(lines[2:]) == ["few 0 40", "many 0 40"]
    manager.shutdown()
    reopened = LogManager([tmp_path], compact, now_ms=clock,
                          cleaner_config=CleanerConfig(enable=False))
    again = reopened.start_cleaner(lambda log: log.log_end_offset)
    assert again.first_dirty_offsets == {("few", 0): 40, ("many", 0): 40}
    reopened.shutdown()


def test_below_the_dirty_ratio_nothing_is_cleaned(tmp_path: Path) -> None:
    clock = Clock(START)
    config = LogConfig(cleanup_policy="compact", segment_bytes=300, file_delete_delay_ms=0,
                       min_cleanable_dirty_ratio=0.9)
    manager = LogManager([tmp_path], config, now_ms=clock,
                         cleaner_config=CleanerConfig(enable=False))
    log = manager.create_log("t", 0)
    _fill(log, 40, 2)
    cleaner = manager.start_cleaner(lambda log: log.log_end_offset)
    assert cleaner.clean_once() is not None  # all dirty: ratio 1.0
    _fill(log, 4, 2)  # a little more: far below 0.9 of the log
    assert cleaner.clean_once() is None  # no tombstones either: nothing is due
    manager.shutdown()
