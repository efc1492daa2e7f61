"""Classifying file changes, and the watcher that journals them."""

from __future__ import annotations

import os
from pathlib import Path

import blake3
import pytest

from pipeline.classify import WINDOW, Known, classify
from pipeline.settings import RunSettings
from pipeline.watcher import Watcher
from tests.doubles import MemoryJournal
from tests.helpers import PiRoot

NOW = 1_800_000_000_000_000_000


def digest(data: bytes) -> str:
    return blake3.blake3(data).hexdigest()


def first_look(path: Path) -> Known:
    event, known = classify(str(path), "pi", None, NOW)
    assert event is not None and known is not None
    return known


def test_an_unknown_file_is_a_rewrite_of_all_its_bytes(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2')
    event, known = classify(str(path), "pi", None, NOW)
    assert event is not None and known is not None
    assert (event.kind, event.start, event.end) == ("rewrite", 0, 14)
    assert event.extra["hash"] == digest(path.read_bytes()) == known.hash
    assert event.extra["ctime_ns"] == path.stat().st_ctime_ns
    assert (event.dev, event.inode) == (path.stat().st_dev, path.stat().st_ino)


def test_an_unchanged_stamp_is_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"x\n")
    known = first_look(path)
    assert classify(str(path), "pi", known, NOW) == (None, known)


def test_growth_is_an_append_of_the_new_bytes_only(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\n")
    known = first_look(path)
    with path.open("ab") as f:
        f.write(b"two\nthr")
    event, after = classify(str(path), "pi", known, NOW)
    assert event is not None and after is not None
    assert (event.kind, event.start, event.end) == ("append", 4, 11)
    assert event.extra["hash"] == digest(b"one\ntwo\nthr")


@pytest.mark.parametrize("where", ["head", "tail"])
def test_an_in_place_edit_of_a_read_window_makes_growth_a_rewrite(
    tmp_path: Path, where: str
) -> None:
    path = tmp_path / "s.jsonl"
    body = bytearray(b"x" * (3 * WINDOW))
    path.write_bytes(body)
    known = first_look(path)
    body[0 if where == "head" else len(body) - 1] = ord("y")
    path.write_bytes(bytes(body) + b"more\n")
    event, _ = classify(str(path), "pi", known, NOW)
    assert event is not None and event.kind == "rewrite"


def test_after_a_scan_growth_proves_the_whole_prefix_again(tmp_path: Path) -> None:
    # Given a change in the middle, outside both windows, that a window check cannot see
    path = tmp_path / "s.jsonl"
    body = bytearray(b"x" * (3 * WINDOW))
    path.write_bytes(body)
    known = first_look(path)
    known.forget_reads()  # what every reconcile scan does
    body[len(body) // 2] = ord("y")
    path.write_bytes(bytes(body) + b"more\n")
    event, _ = classify(str(path), "pi", known, NOW)
    assert event is not None and event.kind == "rewrite"


def test_a_known_prefix_from_the_manifest_is_proved_by_its_hash(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\n")
    st = path.stat()
    known = Known("pi", st.st_dev, st.st_ino, 4, st.st_mtime_ns, st.st_ctime_ns, digest(b"one\n"))
    with path.open("ab") as f:
        f.write(b"two\n")
    event, _ = classify(str(path), "pi", known, NOW)
    assert event is not None and (event.kind, event.start) == ("append", 4)


def test_a_same_size_rewrite_with_the_old_mtime_is_still_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"text":"alpha"}\n')
    known = first_look(path)
    st = path.stat()
    path.write_bytes(b'{"text":"omega"}\n')
    os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
    event, _ = classify(str(path), "pi", known, NOW)
    assert event is not None and event.kind == "rewrite"


def test_a_touch_is_an_append_of_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\n")
    known = first_look(path)
    os.utime(path, (1, 1))
    event, _ = classify(str(path), "pi", known, NOW)
    assert event is not None
    assert (event.kind, event.start, event.end, event.mtime_ns) == ("append", 4, 4, 10**9)


def test_a_shrink_or_a_new_inode_is_a_rewrite(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\ntwo\n")
    known = first_look(path)
    path.write_bytes(b"one\n")
    event, known2 = classify(str(path), "pi", known, NOW)
    assert event is not None and event.kind == "rewrite"
    assert known2 is not None
    # An atomic replace (new inode) that only looks like growth
    other = tmp_path / "tmp"
    other.write_bytes(b"one\nthree\n")
    other.replace(path)
    event, _ = classify(str(path), "pi", known2, NOW)
    assert event is not None and (event.kind, event.start) == ("rewrite", 0)


def test_a_vanished_file_is_a_delete_and_an_unknown_one_nothing(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\n")
    known = first_look(path)
    path.unlink()
    event, after = classify(str(path), "pi", known, NOW)
    assert event is not None and (event.kind, after) == ("delete", None)
    assert classify(str(path), "pi", None, NOW) == (None, None)


def test_a_symlink_is_not_a_session(tmp_path: Path) -> None:
    target = tmp_path / "real.jsonl"
    target.write_bytes(b"x\n")
    link = tmp_path / "link.jsonl"
    link.symlink_to(target)
    assert classify(str(link), "pi", None, NOW) == (None, None)


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads any file")
def test_an_unreadable_file_is_journaled_without_a_hash(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\n")
    path.chmod(0)
    event, known = classify(str(path), "pi", None, NOW)
    assert event is not None and event.kind == "rewrite" and "hash" not in event.extra
    assert known is not None and known.hash is None


def test_without_hash_new_an_unknown_file_is_a_rewrite_of_its_stat_unread(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b'{"a":1}\n{"b":2')
    opened: list[str] = []
    real_open = os.open

    def spy(name: str, *args: object, **kwargs: object) -> int:
        opened.append(os.fspath(name))
        return real_open(name, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(os, "open", spy)
    event, known = classify(str(path), "pi", None, NOW, hash_new=False)
    assert opened == []  # not read at all
    st = path.stat()
    assert event is not None and known is not None
    assert (event.kind, event.start, event.end) == ("rewrite", 0, 14)
    assert "hash" not in event.extra and known.hash is None
    assert event.extra["ctime_ns"] == st.st_ctime_ns
    assert (event.dev, event.inode, event.mtime_ns) == (st.st_dev, st.st_ino, st.st_mtime_ns)


def test_without_hash_new_a_known_file_is_still_hashed(tmp_path: Path) -> None:
    path = tmp_path / "s.jsonl"
    path.write_bytes(b"one\n")
    known = first_look(path)
    os.utime(path, (1, 1))  # a touch: only the hash tells it from a rewrite
    event, _ = classify(str(path), "pi", known, NOW, hash_new=False)
    assert event is not None
    assert (event.kind, event.start, event.end) == ("append", 4, 4)
    assert event.extra["hash"] == digest(b"one\n")
    with path.open("ab") as f:
        f.write(b"two\n")
    event, _ = classify(str(path), "pi", known, NOW, hash_new=False)
    assert event is not None and (event.kind, event.start, event.end) == ("append", 4, 8)
    assert event.extra["hash"] == digest(b"one\ntwo\n")


# -- the watcher -------------------------------------------------------------------------


def watcher_for(pi: PiRoot, journal: MemoryJournal, **settings: float) -> Watcher:
    config = pi.write_config()
    w = Watcher(
        config,
        journal,
        policy="p",
        published=lambda: -1,
        settings=RunSettings(workers=1, **settings),  # type: ignore[arg-type]
        clock=lambda: 0.0,
        now_ns=lambda: NOW,
    )
    w.boot()
    return w


def test_the_first_loop_journals_every_file_once(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    a = pi.session("a", [{"type": "session", "id": "a"}])
    b = pi.session("b", [{"type": "session", "id": "b"}])
    journal = MemoryJournal()
    w = watcher_for(pi, journal)
    assert w.loop_once(0.0)
    assert sorted((e.kind, e.path) for e in journal.read(-1)) == [
        ("rewrite", str(a)),
        ("rewrite", str(b)),
    ]
    w.mark(str(a))
    w.loop_once(0.0)
    assert journal.head() == 1  # marked but unchanged: nothing new


def test_a_burst_of_writes_between_ticks_is_one_event(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    a = pi.session("a", [{"type": "session", "id": "a"}])
    journal = MemoryJournal()
    w = watcher_for(pi, journal)
    w.loop_once(0.0)
    for n in range(50):
        with a.open("ab") as f:
            f.write(b'{"n":%d}\n' % n)
        w.mark(str(a))
    w.loop_once(0.0)
    [append] = journal.read(0)
    assert (append.kind, append.end) == ("append", a.stat().st_size)


def test_only_files_discovery_would_list_are_journaled(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    pi.session("a", [{"type": "session", "id": "a"}])
    folder = pi.root / "--work-proj--"
    (folder / "notes.txt").write_text("x")
    (folder / ".hidden.jsonl").write_text("{}\n")
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (elsewhere / "x.jsonl").write_text("{}\n")
    (pi.root / "linked").symlink_to(elsewhere)
    journal = MemoryJournal()
    w = watcher_for(pi, journal)
    for p in (folder / "notes.txt", folder / ".hidden.jsonl", pi.root / "linked" / "x.jsonl"):
        w.mark(str(p))
    w.loop_once(0.0)
    assert [Path(e.path).name for e in journal.read(-1)] == ["a.jsonl"]


def test_the_reconcile_scan_finds_what_no_event_reported(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    a = pi.session("a", [{"type": "session", "id": "a"}])
    journal = MemoryJournal()
    w = watcher_for(pi, journal, reconcile_s=10.0)
    w.loop_once(0.0)
    # Given changes the observer never reported (dropped events)
    with a.open("ab") as f:
        f.write(b"{}\n")
    b = pi.session("b", [{"type": "session", "id": "b"}])
    assert not w.loop_once(5.0)
    # When the scan timer comes round, they are found
    assert w.loop_once(10.0)
    assert sorted((e.kind, Path(e.path).name) for e in journal.read(0)) == [
        ("append", "a.jsonl"),
        ("rewrite", b.name),
    ]


def test_far_behind_workers_hold_journaling_back_and_changes_coalesce(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    a = pi.session("a", [{"type": "session", "id": "a"}])
    journal = MemoryJournal()
    w = watcher_for(pi, journal, max_pending_events=0)
    w.loop_once(0.0)  # head 0, published -1: one pending, more than 0 allowed
    for _ in range(5):
        with a.open("ab") as f:
            f.write(b"{}\n")
        w.mark(str(a))
        assert not w.loop_once(0.0)
    assert journal.head() == 0 and w.statistics().held_back
    assert w.statistics().dirty == 1


def test_boot_resumes_from_what_the_journal_already_said(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    pi.session("a", [{"type": "session", "id": "a"}])
    journal = MemoryJournal()
    watcher_for(pi, journal).loop_once(0.0)
    # A restarted watcher (nothing published yet) knows the file from the journal
    again = watcher_for(pi, journal)
    again.loop_once(0.0)
    assert journal.head() == 0


def test_an_inotify_overflow_reported_by_watchdog_triggers_a_scan(tmp_path: Path) -> None:
    import logging

    from pipeline.watcher import Observers

    pi = PiRoot(tmp_path)
    w = watcher_for(pi, MemoryJournal())
    w.loop_once(0.0)
    assert not w._rescan
    observers = Observers(w)
    observers.start({})
    try:
        # watchdog says so only in a log record
        logging.getLogger("watchdog.observers.inotify_c").warning(
            "Inotify queue overflowed; filesystem events were lost"
        )
        assert w._rescan
    finally:
        observers.stop()
