"""atomic_write and ensure_dir: all-or-nothing replacement, private modes under any umask."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest

from store.atomic import atomic_write, ensure_dir


def _mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


def test_writes_new_file_0600_and_leaves_no_temp(tmp_path: Path, umask: int) -> None:
    target = tmp_path / "rec"
    atomic_write(target, b"abc")
    assert target.read_bytes() == b"abc"
    assert _mode(target) == 0o600
    assert os.listdir(tmp_path) == ["rec"]


def test_replaces_existing_content(tmp_path: Path) -> None:
    target = tmp_path / "CURRENT"
    target.write_bytes(b"old contents that are longer")
    target.chmod(0o644)
    atomic_write(target, b"new")
    assert target.read_bytes() == b"new"
    assert _mode(target) == 0o600


@pytest.mark.parametrize("fail", ["fsync", "replace", "write"])
def test_failed_write_keeps_old_content_and_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str
) -> None:
    # Given a published file
    target = tmp_path / "CURRENT"
    atomic_write(target, b"generation 1\n")

    # When the next write dies before the rename (disk full, crash simulated by raising)
    def boom(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    if fail == "write":
        real_fdopen = os.fdopen

        class FailingFile:
            def __init__(self, fd: int, mode: str) -> None:
                self._f = real_fdopen(fd, mode)

            def __enter__(self) -> FailingFile:
                return self

            def __exit__(self, *exc: object) -> None:
                self._f.close()

            def fileno(self) -> int:
                return self._f.fileno()

            def write(self, data: bytes) -> int:
                self._f.write(data[:3])  # a torn, partial write
                raise OSError(28, "No space left on device")

        monkeypatch.setattr(os, "fdopen", FailingFile)
    else:
        monkeypatch.setattr(os, fail, boom)
    with pytest.raises(OSError, match="No space"):
        atomic_write(target, b"generation 2\n")

    # Then readers still see the old bytes and no temp file is left behind
    monkeypatch.undo()
    assert target.read_bytes() == b"generation 1\n"
    assert os.listdir(tmp_path) == ["CURRENT"]


def test_failed_first_write_leaves_nothing(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(os, "fsync", lambda fd: (_ for _ in ()).throw(OSError(5, "EIO")))
    with pytest.raises(OSError, match="EIO"):
        atomic_write(tmp_path / "rec", b"x")
    assert os.listdir(tmp_path) == []


def test_ensure_dir_creates_parents_0700(tmp_path: Path, umask: int) -> None:
    base = tmp_path / "base"
    base.mkdir(mode=0o755)
    base.chmod(0o755)
    target = base / "a" / "b" / "c"
    assert ensure_dir(target) == target
    for p in (base / "a", base / "a" / "b", target):
        assert _mode(p) == 0o700, p
    # an existing folder is not ours to change
    assert _mode(base) == 0o755


def test_ensure_dir_is_idempotent_and_refuses_a_file(tmp_path: Path) -> None:
    d = ensure_dir(tmp_path / "d")
    d.chmod(0o750)
    ensure_dir(d)
    assert _mode(d) == 0o750
    (tmp_path / "f").write_bytes(b"")
    with pytest.raises(OSError):
        ensure_dir(tmp_path / "f" / "sub")


# ----------------------------------------------------------------------------- batches


def test_a_batch_shows_nothing_until_commit_then_everything_0600(
    tmp_path: Path, umask: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    from store.atomic import DurableBatch

    (tmp_path / "b").write_bytes(b"old")
    synced: list[int] = []
    real_fsync = os.fsync

    def fsync(fd: int) -> None:
        synced.append(fd)
        real_fsync(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    batch = DurableBatch()
    for name in ("a", "b", "c"):
        batch.write(tmp_path / name, name.encode() * 3)
    # Before the commit: the old bytes, the new ones only in hidden temp files
    assert (tmp_path / "b").read_bytes() == b"old"
    assert not (tmp_path / "a").exists()
    assert len(batch) == 3 and synced == []
    batch.commit()
    # Every file was fsynced before any rename, and no temp file is left
    assert len(synced) == 3
    assert sorted(os.listdir(tmp_path)) == ["a", "b", "c"]
    assert [(tmp_path / n).read_bytes() for n in "abc"] == [b"aaa", b"bbb", b"ccc"]
    assert {_mode(tmp_path / n) for n in "abc"} == {0o600}


@pytest.mark.parametrize("fail", ["fsync", "replace"])
def test_a_failed_batch_commit_leaves_no_temp(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, fail: str
) -> None:
    from store.atomic import DurableBatch

    batch = DurableBatch()
    for name in ("a", "b"):
        batch.write(tmp_path / name, b"x")

    def boom(*args: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, fail, boom)
    with pytest.raises(OSError):
        batch.commit()
    assert os.listdir(tmp_path) == []
    assert len(batch) == 0


def test_an_abandoned_batch_leaves_nothing(tmp_path: Path) -> None:
    from store.atomic import DurableBatch

    batch = DurableBatch()
    batch.write(tmp_path / "a", b"x")
    batch.abandon()
    assert os.listdir(tmp_path) == []


def test_a_temp_name_left_by_a_crash_is_passed_over(tmp_path: Path) -> None:
    from store import atomic
    from store.atomic import DurableBatch

    # Given the temp files a crashed process of this very id left beside a record, under the
    # names this process would try next
    start = next(atomic._temp_numbers) + 1
    stale = [tmp_path / f".rec.{os.getpid()}-{n}.tmp" for n in range(start, start + 3)]
    for path in stale:
        path.write_bytes(b"stale")
    # When the record is written, in a batch and on its own
    batch = DurableBatch()
    batch.write(tmp_path / "rec", b"batched")
    batch.commit()
    assert (tmp_path / "rec").read_bytes() == b"batched"
    atomic_write(tmp_path / "rec", b"new")
    # Then the stale files are left as they were (GC's to collect) and the record is written
    assert (tmp_path / "rec").read_bytes() == b"new"
    assert all(p.read_bytes() == b"stale" for p in stale)
    assert sorted(os.listdir(tmp_path)) == sorted(["rec", *(p.name for p in stale)])


# ----------------------------------------------------------------------------- sync threads


def test_sync_threads_serve_batch_after_batch_then_end_when_idle(tmp_path: Path) -> None:
    import threading
    import time

    from store.atomic import DurableBatch, SyncThreads

    threads = SyncThreads(size=3, idle_s=0.2)
    seen: set[int] = set()

    def sync(item: int) -> None:
        seen.add(threading.get_ident())

    for round_ in range(3):
        batch = DurableBatch(threads)
        for i in range(5):
            batch.write(tmp_path / f"r{round_}-{i}", b"x")
        batch.commit()
        # every file is there once commit returns; the same three threads did every round
        assert len(list(tmp_path.iterdir())) == 5 * (round_ + 1)
        assert threads.threads == 3
    threads.run(sync, range(8))  # any callable and items, as fsync_all takes
    assert len(seen) <= 3 and threading.get_ident() not in seen
    # Idle, they end: nothing is left behind
    deadline = time.monotonic() + 5
    while threads.threads and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threads.threads == 0
    assert not [t for t in threading.enumerate() if t.name == "fsync"]
    # and a later batch starts them again
    batch = DurableBatch(threads)
    batch.write(tmp_path / "again", b"y")
    batch.write(tmp_path / "again2", b"z")
    batch.commit()
    assert (tmp_path / "again2").read_bytes() == b"z"
    # close() ends them at once (a process that forks, a test), and they start again after
    assert threads.threads == 2
    threads.close()
    assert threads.threads == 0
    assert not [t for t in threading.enumerate() if t.name == "fsync"]
    threads.run(sync, range(4))
    assert threads.threads == 3
    threads.close()
    assert not [t for t in threading.enumerate() if t.name == "fsync"]


def test_sync_threads_raise_the_first_items_error_once_all_are_done() -> None:
    from store.atomic import SyncThreads

    done: list[int] = []

    def sync(i: int) -> None:
        if i in (2, 5):
            raise OSError(28, f"No space left on device ({i})")
        done.append(i)

    threads = SyncThreads(size=4, idle_s=0.1)
    with pytest.raises(OSError, match=r"\(2\)"):
        threads.run(sync, range(8))
    assert sorted(done) == [0, 1, 3, 4, 6, 7]
    threads.close()


# (Python 3.12 warns that forking a process with threads may deadlock: what this guards)
@pytest.mark.filterwarnings("ignore::DeprecationWarning")
def test_a_forked_child_starts_sync_threads_of_its_own() -> None:
    from store.atomic import SyncThreads

    threads = SyncThreads(size=2, idle_s=5.0)
    threads.run(lambda i: None, range(4))
    assert threads.threads == 2
    pid = os.fork()
    if pid == 0:  # the child: its parent's threads are not here, and it must not wait on them
        try:
            got: list[int] = []
            threads.run(got.append, range(4))
            os._exit(0 if sorted(got) == [0, 1, 2, 3] and threads.threads == 2 else 1)
        except BaseException:
            os._exit(2)
    _, status = os.waitpid(pid, 0)
    threads.close()
    assert os.waitstatus_to_exitcode(status) == 0
