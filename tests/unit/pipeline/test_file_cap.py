"""A session file over ``Policy.max_file_bytes`` is not read, named ``oversized_file``: on a
whole build, in a worker's job, and when an append grows a live session past it (a rebuild
would skip it, so the live path must too)."""

from __future__ import annotations

import os
from pathlib import Path

import blake3

from pipeline.classify import classify
from pipeline.engine import SessionEngine, Skip, Upsert
from pipeline.session_job import Job, OversizedFile, index_session, read_source
from stages.policy import Policy
from store.reasons import OVERSIZED_FILE
from store.records import SourceEvent
from tests.helpers import header, jsonl, user

T0 = 1_700_000_000_000
CAP = 4096


def _session(tmp_path: Path) -> Path:
    path = tmp_path / "s.jsonl"
    path.write_bytes(jsonl([header("s", "/w"), user("u1", None, "numbat", T0)]))
    assert path.stat().st_size < CAP
    return path


def test_read_source_refuses_a_file_over_the_limit_before_reading(tmp_path: Path) -> None:
    path = _session(tmp_path)
    data, stamp = read_source(str(path), CAP)
    assert data == path.read_bytes() and stamp[2] == len(data)
    with path.open("r+b") as f:
        f.truncate(CAP + 1)
    try:
        read_source(str(path), CAP)
    except OversizedFile as exc:
        assert (exc.size, exc.limit) == (CAP + 1, CAP)
    else:
        raise AssertionError("read past the limit")
    assert len(read_source(str(path))[0]) == CAP + 1  # no limit: read whole


def test_a_job_over_the_cap_is_named_and_writes_nothing(tmp_path: Path) -> None:
    path = _session(tmp_path)
    with path.open("r+b") as f:
        f.truncate(CAP * 4)
    job = Job(str(path), "pi", "hot", Policy(max_file_bytes=CAP), str(tmp_path / "index"))
    result = index_session(job)
    assert (result.state, result.reason, result.bytes_written) == (None, OVERSIZED_FILE, 0)


def test_a_live_session_grown_past_the_cap_is_skipped_like_a_rebuild(tmp_path: Path) -> None:
    path = _session(tmp_path)
    engine = SessionEngine(tmp_path / "index", Policy(max_file_bytes=CAP), clock=lambda: 0.0)
    built = engine.whole(str(path), "pi", "hot")
    assert isinstance(built, Upsert)
    # an append under the cap takes the live path (what the cap must not change)
    with path.open("ab") as f:
        f.write(jsonl([user("u2", "u1", "wombat", T0 + 1)]))
    grown = _append_event(path, built.state.size)
    live = engine.apply(str(path), "pi", [grown], built.state, "hot")
    assert isinstance(live, Upsert) and engine.counters.appends == 1
    start = path.stat().st_size
    with path.open("ab") as f:
        parent = "u2"
        while f.tell() <= CAP:
            entry = f"w{f.tell()}"
            f.write(jsonl([user(entry, parent, "numbat", T0 + 2)]))
            parent = entry
    change = engine.apply(str(path), "pi", [_append_event(path, start)], live.state, "hot")
    assert isinstance(change, Skip)
    assert change.skipped.reason == OVERSIZED_FILE


def _append_event(path: Path, start: int) -> SourceEvent:
    st = os.stat(path)
    return SourceEvent(
        "append", str(path), "pi", st.st_dev, st.st_ino, st.st_size, st.st_mtime_ns,
        start, st.st_size, 0, extra={"hash": blake3.blake3(path.read_bytes()).hexdigest()},
    )  # fmt: skip


def test_the_watcher_does_not_hash_a_file_over_the_cap(tmp_path: Path) -> None:
    path = _session(tmp_path)
    under, known = classify(str(path), "pi", None, 0, CAP)
    assert under is not None and under.extra.get("hash") is not None
    with path.open("r+b") as f:
        f.truncate(CAP + 1)
    over, known = classify(str(path), "pi", known, 0, CAP)
    assert over is not None and over.kind == "rewrite" and over.end == CAP + 1
    assert "hash" not in over.extra and known is not None and known.hash is None
    assert classify(str(path), "pi", known, 0, CAP)[0] is None, "unchanged: nothing again"
