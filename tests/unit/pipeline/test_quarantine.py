"""Quarantine bookkeeping: deaths counted per unchanged file, breadcrumbs in shared memory."""

from __future__ import annotations

import ctypes
import os
from pathlib import Path

from pipeline.quarantine import (
    BREADCRUMB_BYTES,
    CRASHES_TO_QUARANTINE,
    Breadcrumb,
    Quarantine,
    file_stamp,
    restore,
)


def crumb() -> Breadcrumb:
    return Breadcrumb((ctypes.c_char * BREADCRUMB_BYTES)())


def test_a_breadcrumb_names_the_file_and_its_stamp(tmp_path: Path) -> None:
    path = tmp_path / "s\udcff.jsonl"  # not UTF-8: file names are bytes
    path.write_bytes(b"{}\n")
    b = crumb()
    assert b.read() is None
    b.set(str(path))
    assert b.read() == (str(path), *file_stamp(str(path)))
    b.clear()
    assert b.read() is None
    b.set(str(tmp_path / "gone.jsonl"))
    assert b.read() == (str(tmp_path / "gone.jsonl"), -1, -1)
    b.set("/" + "x" * BREADCRUMB_BYTES)  # longer than any real path: no crumb at all
    assert b.read() is None


def test_two_deaths_on_the_same_unchanged_file_quarantine_it(tmp_path: Path) -> None:
    q = Quarantine()
    path = str(tmp_path / "a.jsonl")
    assert q.crashed((path, 10, 1), "killed by SIGKILL") is None
    assert q.held() == {}
    held = q.crashed((path, 10, 1), "killed by SIGKILL (out of memory?)")
    assert CRASHES_TO_QUARANTINE == 2
    assert held is not None and held.crashes == 2 and held.how.endswith("(out of memory?)")
    assert set(q.held()) == {path}
    assert q.crashed((path, 10, 1), "killed by SIGKILL") is None  # reported once
    assert q.held()[path].crashes == 3


def test_a_changed_file_starts_counting_again(tmp_path: Path) -> None:
    q = Quarantine()
    path = str(tmp_path / "a.jsonl")
    q.crashed((path, 10, 1), "x")
    q.crashed((path, 10, 1), "x")
    assert q.crashed((path, 20, 2), "x") is None  # appended to since
    assert q.held() == {}
    assert q.crashed((path, 20, 2), "x") is not None


def test_a_quarantined_file_is_held_only_while_unchanged(tmp_path: Path) -> None:
    path = tmp_path / "a.jsonl"
    path.write_bytes(b"{}\n")
    q = Quarantine()
    stamp = (str(path), *file_stamp(str(path)))
    q.crashed(stamp, "x")
    held = q.crashed(stamp, "x")
    assert held is not None and held.holds(str(path))
    assert not held.holds(str(tmp_path / "other.jsonl"))
    with path.open("ab") as f:
        f.write(b"{}\n")
    assert not held.holds(str(path))
    os.unlink(path)
    assert not held.holds(str(path))


def test_a_new_supervisor_takes_back_what_is_still_unchanged(tmp_path: Path) -> None:
    kept, changed, gone = (tmp_path / n for n in ("kept.jsonl", "changed.jsonl", "gone.jsonl"))
    for p in (kept, changed, gone):
        p.write_bytes(b"{}\n")
    q = Quarantine()
    for p in (kept, changed, gone):
        stamp = (str(p), *file_stamp(str(p)))
        q.crashed(stamp, "killed by SIGKILL")
        q.crashed(stamp, "killed by SIGKILL")
    q.crashed((str(tmp_path / "once.jsonl"), 1, 1), "x")  # one death: not quarantined
    state = [h.to_state() for h in q.held().values()]
    with changed.open("ab") as f:
        f.write(b"{}\n")
    gone.unlink()
    back = restore([*state, {"path": 3}, "junk", {**state[0], "crashes": 1}])
    assert [h.path for h in back] == [str(kept)]
    assert back[0] == q.held()[str(kept)]
    again = Quarantine(back)
    assert set(again.held()) == {str(kept)}
    assert again.crashed((str(kept), *file_stamp(str(kept))), "x") is None  # counted on: 3
    assert again.held()[str(kept)].crashes == 3
    assert restore(None) == [] and restore({"path": "x"}) == []
