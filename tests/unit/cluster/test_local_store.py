"""The durable local coordination store: replay, a torn journal tail, compaction, crashes at
every fsync of a write (a subprocess killed there), and what never survives a restart."""

from __future__ import annotations

import errno
import json
import os
import random
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from kafkalite.protocol.errors import KafkaStorageError
from kafkalite_server.cluster.coordination import (
    BadVersionError,
    Check,
    Create,
    EventType,
    SetData,
    WatchEvent,
)
from kafkalite_server.cluster.local_store import (
    SNAPSHOT_FILE,
    LocalEnsemble,
    LocalStoreError,
    LocalStoreInUseError,
    journal_name,
)

REPO_ROOT = Path(__file__).resolve().parents[3]


def _journals(directory: Path) -> list[str]:
    return sorted(path.name for path in directory.glob("journal-*"))


def test_every_kind_of_write_is_there_after_a_reopen(tmp_path):
    store = LocalEnsemble.open(tmp_path)
    client = store.connect()
    client.create("/brokers/topics/t", b"assignment", makepath=True)
    client.set("/brokers/topics/t", b"grown")
    client.commit([Create("/config"), Create("/config/topics"),
                   Create("/config/topics/t", b"\x00\xff binary")])
    client.ensure_path("/config/changes")
    first = client.create("/config/changes/config_change_", b"1", sequential=True)
    client.create("/gone", b"x")
    client.delete("/gone")
    created = {path: client.get(path)[1] for path in ("/brokers/topics/t", "/config/topics/t")}
    store.close()

    again = LocalEnsemble.open(tmp_path).connect()
    data, stat = again.get("/brokers/topics/t")
    assert (data, stat) == (b"grown", created["/brokers/topics/t"])
    assert again.get("/config/topics/t") == (b"\x00\xff binary", created["/config/topics/t"])
    assert again.exists("/gone") is None
    again.set("/brokers/topics/t", b"again", version=1)  # the version carried over
    second = again.create("/config/changes/config_change_", b"2", sequential=True)
    assert (first, second) == ("/config/changes/config_change_0000000000",
                               "/config/changes/config_change_0000000001")


def test_ephemeral_nodes_never_survive_and_creation_ids_keep_growing(tmp_path):
    store = LocalEnsemble.open(tmp_path)
    client = store.connect()
    client.ensure_path("/brokers/ids")
    client.create("/brokers/ids/0", b"me", ephemeral=True)
    first_epoch = client.exists("/brokers/ids/0").creation_id  # the last write: ephemeral
    store.close()

    store = LocalEnsemble.open(tmp_path)
    client = store.connect()
    assert client.children("/brokers/ids") == []
    client.create("/brokers/ids/0", b"me again", ephemeral=True)
    assert client.exists("/brokers/ids/0").creation_id > first_epoch  # a new broker epoch
    store.close()


def test_a_torn_last_entry_is_dropped_and_the_journal_goes_on(tmp_path):
    store = LocalEnsemble.open(tmp_path)
    store.connect().create("/kept", b"acknowledged")
    store.close()
    journal = tmp_path / journal_name(0)
    whole = journal.stat().st_size
    with open(journal, "ab") as out:  # a crash in the middle of the next append
        out.write(b"\x00\x00\x01\x00\xde\xad")

    store = LocalEnsemble.open(tmp_path)
    assert journal.stat().st_size == whole
    client = store.connect()
    assert client.get("/kept")[0] == b"acknowledged"
    client.create("/after", b"next")
    store.close()
    assert LocalEnsemble.open(tmp_path).connect().get("/after")[0] == b"next"


def test_an_entry_whose_checksum_fails_ends_the_journal(tmp_path):
    store = LocalEnsemble.open(tmp_path)
    client = store.connect()
    client.create("/one", b"1")
    store.close()
    journal = tmp_path / journal_name(0)
    first_entry = journal.stat().st_size
    store = LocalEnsemble.open(tmp_path)
    store.connect().create("/two", b"2")
    store.close()
    damaged = bytearray(journal.read_bytes())
    damaged[-2] ^= 0xFF  # inside the second entry's payload: its CRC no longer matches
    journal.write_bytes(bytes(damaged))

    client = LocalEnsemble.open(tmp_path).connect()
    assert client.get("/one")[0] == b"1"
    assert client.exists("/two") is None  # never mis-read
    assert journal.stat().st_size == first_entry


def test_compaction_folds_the_journal_into_a_snapshot(tmp_path):
    store = LocalEnsemble.open(tmp_path, compact_bytes=2_000)
    client = store.connect()
    client.ensure_path("/n")
    for i in range(100):
        client.create(f"/n/{i}", str(i).encode() * 10)
        if i % 3 == 0:
            client.set(f"/n/{i}", b"changed")
        if i % 7 == 0:
            client.delete(f"/n/{i}")
    expected = {name: client.get(f"/n/{name}") for name in client.children("/n")}
    assert (tmp_path / SNAPSHOT_FILE).exists()
    journals = _journals(tmp_path)
    assert len(journals) == 1 and journals != [journal_name(0)]
    assert (tmp_path / journals[0]).stat().st_size < 2_000
    store.close()

    again = LocalEnsemble.open(tmp_path).connect()
    assert {name: again.get(f"/n/{name}") for name in again.children("/n")} == expected


def test_a_compaction_that_fails_after_renaming_its_snapshot_loses_nothing(tmp_path):
    """Its directory fsync fails: the new snapshot may or may not be on disk, and the store
    goes on in the old journal. A reopen replays that journal after the snapshot."""
    directory_syncs = 0

    def fsync(fd: int) -> None:
        nonlocal directory_syncs
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            directory_syncs += 1
            if directory_syncs % 2 == 0:  # a compaction's second: after the rename
                raise OSError(errno.EIO, os.strerror(errno.EIO))
        os.fsync(fd)
    store = LocalEnsemble.open(tmp_path, fsync=fsync, compact_bytes=1_000)
    client = store.connect()
    client.ensure_path("/n")
    for i in range(60):
        client.create(f"/n/{i:02d}", b"x" * 50)
    assert (tmp_path / SNAPSHOT_FILE).exists() and directory_syncs > 2
    client.create("/after-the-last-compaction", b"kept")  # only in the old journal
    store.close()

    again = LocalEnsemble.open(tmp_path).connect()
    assert again.children("/n") == [f"{i:02d}" for i in range(60)]
    assert again.get("/after-the-last-compaction")[0] == b"kept"
    assert _journals(tmp_path) == [journal_name(int(json.loads(
        (tmp_path / SNAPSHOT_FILE).read_bytes())["journal"]))]


def test_a_failed_append_changes_nothing_and_names_the_journal(tmp_path):
    failing = False

    def fsync(fd: int) -> None:
        if failing:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        os.fsync(fd)
    store = LocalEnsemble.open(tmp_path, fsync=fsync)
    client = store.connect()
    client.create("/a", b"1")
    seen: list[WatchEvent] = []
    client.get("/a", watch=seen.append)
    failing = True
    with pytest.raises(KafkaStorageError, match=journal_name(0)):
        client.commit([SetData("/a", b"2"), Create("/b", b"new")])
    assert client.get("/a") == (b"1", client.exists("/a"))
    assert client.exists("/b") is None and seen == []  # no watch fired for a failed write
    failing = False
    client.set("/a", b"3")
    assert seen == [WatchEvent(EventType.CHANGED, "/a")]
    store.close()
    again = LocalEnsemble.open(tmp_path).connect()
    assert again.get("/a")[0] == b"3" and again.exists("/b") is None


def test_a_failed_batch_puts_back_only_what_it_touched(tmp_path):
    client = LocalEnsemble.open(tmp_path).connect()
    client.create("/a", b"1")
    with pytest.raises(BadVersionError):
        client.commit([SetData("/a", b"2"), Create("/b"), Check("/a", 0)])
    assert client.get("/a")[0] == b"1" and client.exists("/b") is None


def test_a_second_process_cannot_open_the_store(tmp_path):
    store = LocalEnsemble.open(tmp_path)
    with pytest.raises(LocalStoreInUseError, match=str(tmp_path)):
        LocalEnsemble.open(tmp_path)
    store.close()
    LocalEnsemble.open(tmp_path).close()  # free again


def test_a_snapshot_that_is_not_ours_is_refused_by_name(tmp_path):
    (tmp_path / SNAPSHOT_FILE).write_text("{not json")
    with pytest.raises(LocalStoreError, match=SNAPSHOT_FILE):
        LocalEnsemble.open(tmp_path)
    LocalEnsemble.open(tmp_path / "other").close()  # and the lock was released


# ------------------------------------------------------------------ crashes

WRITER = textwrap.dedent("""
    import os, random, signal, sys
    from pathlib import Path
    from kafkalite_server.cluster.coordination import Create, SetData
    from kafkalite_server.cluster.local_store import LocalEnsemble

    directory, seed = Path(sys.argv[1]), int(sys.argv[2])
    rng = random.Random(seed)
    crash_at, mode = rng.randrange(1, 120), rng.choice(["torn", "before", "after"])
    calls = 0
    synced = {}  # file (device, inode) -> its size at its last fsync

    def fsync(fd):
        # Every fsync of the store: a journal append, a new journal, a snapshot's temp
        # file, a directory. The crash comes at one of them: with what was written since
        # the file's last fsync only partly on disk, or whole but not yet synced, or
        # synced but not yet answered.
        global calls
        calls += 1
        status = os.fstat(fd)
        key = (status.st_dev, status.st_ino)
        if calls == crash_at:
            if mode == "torn" and not os.path.isdir(f"/proc/self/fd/{fd}"):
                low = min(synced.get(key, 0), status.st_size)
                os.ftruncate(fd, rng.randrange(low, status.st_size + 1))
            if mode == "after":
                os.fsync(fd)
            os.kill(os.getpid(), signal.SIGKILL)
        os.fsync(fd)
        synced[key] = status.st_size

    store = LocalEnsemble.open(directory, fsync=fsync, compact_bytes=1_500)
    client = store.connect()
    client.create("/brokers/ids/0", b"ephemeral", ephemeral=True, makepath=True)
    if client.exists("/counter") is None:
        client.commit([Create("/counter", b"-1"), Create("/w")])
    start = len(client.children("/w"))
    for i in range(start, start + 60):
        client.commit([Create(f"/w/{i:04d}", b"x" * (i % 50)),
                       SetData("/counter", str(i).encode())])
        print(i, flush=True)
    """)


def _crash_once(directory: Path, seed: int) -> list[int]:
    """Runs the writer until it kills itself; the writes it saw acknowledged."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(
        filter(None, [str(REPO_ROOT), os.environ.get("PYTHONPATH")]))}
    done = subprocess.run([sys.executable, "-c", WRITER, str(directory), str(seed)],
                          capture_output=True, text=True, env=env, timeout=120)
    assert done.returncode in (-9, 0), done.stderr
    return [int(line) for line in done.stdout.split()]


@pytest.mark.parametrize("seed", range(12))
def test_a_write_that_returned_survives_a_crash_at_any_fsync(tmp_path, seed):
    rng = random.Random(seed)
    acknowledged: list[int] = []
    for round_seed in (rng.randrange(1 << 30) for _ in range(3)):  # crash, recover, crash
        acknowledged += _crash_once(tmp_path, round_seed)
        store = LocalEnsemble.open(tmp_path)
        client = store.connect()
        assert client.children("/brokers/ids") == []
        names = client.children("/w")
        written = [int(name) for name in names]
        assert written == list(range(len(written))), "the journal replayed a hole"
        assert set(acknowledged) <= set(written), "an acknowledged write was lost"
        assert len(written) <= (max(acknowledged, default=-1) + 2), "more than one unacked"
        counter, stat = client.get("/counter")
        assert int(counter) == len(written) - 1, "a batch was replayed in part"
        assert stat.version == len(written)
        creation = [client.exists(f"/w/{name}").creation_id for name in names]
        assert creation == sorted(set(creation))
        store.close()
