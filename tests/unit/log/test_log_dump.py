"""dump-log: per-batch lines, deep iteration, index checks, exit status."""

from __future__ import annotations

import io
import struct
from pathlib import Path

from log_batches import v2_batch

from kafkalite_server.log.config import LogConfig
from kafkalite_server.log.dump import dump_index, dump_log, main_dump
from kafkalite_server.log.log import Log


def _small_log(tmp_path: Path) -> Path:
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=1))
    log.append_as_leader(v2_batch(2, timestamp=1_000), leader_epoch=3)
    log.append_as_leader(v2_batch(3, timestamp=2_000, compression=1), leader_epoch=3)
    log.close()
    return tmp_path / "t-0" / f"{0:020d}.log"


def test_dump_prints_one_line_per_batch(tmp_path: Path) -> None:
    path = _small_log(tmp_path)
    out = io.StringIO()
    assert dump_log(path, out=out)
    lines = out.getvalue().splitlines()
    first_size = len(v2_batch(2, timestamp=1_000))
    assert lines[0] == f"Dumping {path}"
    assert lines[1] == "Log starting offset: 0"
    assert lines[2].startswith("baseOffset: 0 lastOffset: 1 count: 2 baseSequence: -1 ")
    assert "partitionLeaderEpoch: 3" in lines[2]
    assert f"position: 0 CreateTime: 1001 size: {first_size} magic: 2 " \
           f"compresscodec: none" in lines[2]
    assert lines[3].startswith("baseOffset: 2 lastOffset: 4 count: 3")
    assert f"position: {first_size} CreateTime: 2002" in lines[3]
    assert "compresscodec: gzip" in lines[3] and lines[3].endswith("isvalid: true")
    assert len(lines) == 4


def test_deep_iteration_prints_records_of_compressed_batches(tmp_path: Path) -> None:
    out = io.StringIO()
    dump_log(_small_log(tmp_path), deep_iteration=True, out=out)
    records = [line for line in out.getvalue().splitlines() if line.startswith("| ")]
    assert len(records) == 5
    assert records[3] == ("| offset: 3 CreateTime: 2001 keySize: 5 valueSize: 10 "
                          "headerKeys: [h] key: key-1 payload: BBBBBBBBBB")


def test_dump_flags_crc_damage_and_trailing_bytes(tmp_path: Path) -> None:
    path = _small_log(tmp_path)
    data = bytearray(path.read_bytes())
    data[40] ^= 0xFF
    path.write_bytes(bytes(data) + b"\x00\x01")
    out = io.StringIO()
    assert not dump_log(path, out=out)
    text = out.getvalue()
    assert "isvalid: false" in text and "Found 2 invalid bytes" in text


def test_index_dump_checks_entries_against_the_log(tmp_path: Path) -> None:
    path = _small_log(tmp_path)
    index = path.with_suffix(".index")
    out = io.StringIO()
    assert dump_index(index, out=out)
    assert out.getvalue().splitlines()[1] == f"offset: 4 position: {len(v2_batch(2))}"
    index.write_bytes(struct.pack(">ii", 3, 7))
    out = io.StringIO()
    assert not dump_index(index, out=out)
    assert "Index offset: 3, log offset: none" in out.getvalue()
    assert dump_index(path.with_suffix(".timeindex"), out=io.StringIO())


def test_main_dump_exit_status(tmp_path: Path) -> None:
    path = _small_log(tmp_path)
    out = io.StringIO()
    assert main_dump([str(path), "--index", "--deep-iteration"], out=out) == 0
    assert "Dumping " + str(path.with_suffix(".timeindex")) in out.getvalue()
    assert main_dump([str(tmp_path / "missing.log")], out=io.StringIO()) == 1
