"""`pipeline run` always on: real processes, a real watchdog observer, real files.

Every test starts the pipeline as a subprocess, changes session files the way agents and people
do, and waits (generously) for the published index to follow. The end state is compared with
a clean `pipeline run --once` of the same files.
"""

from __future__ import annotations

import os
import shutil
import signal
from pathlib import Path

import orjson
import psutil
import pytest

from pipeline.catchup import catch_up
from pipeline.status import collect_status, render_status
from store.config import Config
from store.errors import SnapshotMissing
from store.reader import open_snapshot
from store.records import HotShard, Manifest, SessionState
from tests.doubles import LivePipeline, pid_gone, wait_for
from tests.helpers import PiRoot, assistant, elsewhere, header, jsonl, user

pytestmark = pytest.mark.integration

T0 = 1_700_000_000_000


def lines_for(sid: str, n: int, start: int = 0, parent: str | None = None) -> list[dict]:
    out: list[dict] = []
    for i in range(start, start + n):
        entry_id = f"{sid}-{i}"
        make = assistant if i % 2 else user
        out.append(make(entry_id, parent, f"{sid} line {i} mentions token{sid}{i}", T0 + i))
        parent = entry_id
    return out


def pi_session(sid: str, n: int) -> list[dict]:
    return [header(sid, "/work/proj"), *lines_for(sid, n)]


def append(path: Path, records: list[dict]) -> None:
    with path.open("ab") as f:
        f.write(jsonl(records))


def state_of(config: Config, path: Path) -> SessionState | None:
    try:
        return open_snapshot(config.index_dir).session(str(path))
    except SnapshotMissing:
        return None


def has_term(config: Config, path: Path, term: str) -> bool:
    """True when *term* is searchable in the published records of *path* (base + deltas)."""
    try:
        snapshot = open_snapshot(config.index_dir)
    except SnapshotMissing:
        return False
    state = snapshot.session(str(path))
    if state is None or state.tier != "hot":
        return False
    for name in (state.index_record, *state.index_deltas):
        if term in snapshot.load(name, HotShard).view("active").postings:
            return True
    return False


def idle(config: Config) -> bool:
    """Lag 0, nothing stale or new, and every delta merged."""
    status = collect_status(config).as_dict()
    if status["pipeline"]["lag"]["events"] or status["stale"] or status["new"]:
        return False
    manifest = open_snapshot(config.index_dir).manifest
    return not any(s.index_deltas for s in manifest.sessions)


def assert_equals_clean_build(config: Config, tmp: Path) -> Manifest:
    other = elsewhere(config, tmp / "clean")
    catch_up(other)
    clean = open_snapshot(other.index_dir).manifest
    live = open_snapshot(config.index_dir).manifest
    assert live.sessions == clean.sessions
    assert live.skipped == clean.skipped
    for name in clean.records():
        live_bytes = (config.index_dir / "records" / name[:2] / name).read_bytes()
        assert live_bytes == (other.index_dir / "records" / name[:2] / name).read_bytes()
    return live


@pytest.fixture
def pi(tmp_path: Path) -> PiRoot:
    return PiRoot(tmp_path)


def start(pi: PiRoot, *args: str) -> LivePipeline:
    live = LivePipeline(pi.config_path, "--merge-after", "1", *args).start()
    live.wait_ready(pi.index)
    return live


def test_appends_rewrites_deletes_and_renames_are_followed(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config(hotSessions=3)
    a = pi.session("a", pi_session("sa", 4))
    b = pi.session("b", pi_session("sb", 4))
    c = pi.session("c", pi_session("sc", 4))
    d = pi.session("d", pi_session("sd", 4))
    live = start(pi)
    try:
        wait_for(lambda: idle(config), timeout=20, what="the first build")
        # An appended line is searchable soon after it is written
        append(a, lines_for("sa", 1, start=4, parent="sa-3"))
        wait_for(lambda: has_term(config, a, "tokensa4"), what="the appended line")
        # A rewrite (same size, old mtime), a truncation, a delete and a rename
        st = b.stat()
        b.write_bytes(b.read_bytes().replace(b"tokensb0", b"rewrite0"))
        os.utime(b, ns=(st.st_atime_ns, st.st_mtime_ns))
        c.write_bytes(jsonl(pi_session("sc", 1)))
        d.rename(d.with_name("renamed.jsonl"))
        a.unlink()
        renamed = d.with_name("renamed.jsonl")

        def followed() -> bool:
            manifest = open_snapshot(config.index_dir).manifest
            paths = {s.path: s for s in manifest.sessions if not s.archived}
            kept = [s.path for s in manifest.sessions if s.archived]
            return (
                set(paths) == {str(b), str(c), str(renamed)}
                # the deleted file, and the old versions of the rewrite and the truncation
                and sorted(kept)[0] == str(a)
                and len(kept) == 3
                and paths[str(c)].view("active").entry_count == 1
                and has_term(config, b, "rewrite0")
                and not has_term(config, b, "tokensb0")
            )

        wait_for(followed, what="rewrite, truncate, rename and delete")
        wait_for(lambda: idle(config), timeout=20, what="lag 0 and merged deltas")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
    assert_equals_clean_build(config, tmp_path)
    events = {e.get("event") for e in live.events()}
    assert {"journal.appended", "stage.index.done", "generation.published"} <= events


def test_a_backlog_made_while_stopped_is_indexed_at_start(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config(hotSessions=1)
    a = pi.session("a", pi_session("sa", 4), mtime_s=1000)
    b = pi.session("b", pi_session("sb", 4), mtime_s=2000)
    live = start(pi)
    wait_for(lambda: idle(config), timeout=20, what="the first build")
    assert live.stop() == 0
    # While stopped: a grows (and becomes the newest), b is deleted, e is new
    append(a, lines_for("sa", 3, start=4, parent="sa-3"))
    b.unlink()
    pi.session("e", pi_session("se", 2), mtime_s=500)
    live = start(pi)
    try:
        wait_for(lambda: idle(config), timeout=20, what="the backlog")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
    manifest = assert_equals_clean_build(config, tmp_path)
    assert {Path(s.path).name: s.tier for s in manifest.sessions} == {
        "a.jsonl": "hot",
        "e.jsonl": "cold",
        "b.jsonl": "cold",  # deleted while stopped: kept from the archive
    }


def test_a_half_written_line_becomes_one_entry_and_never_malformed(
    pi: PiRoot, tmp_path: Path
) -> None:
    config = pi.write_config()
    a = pi.session("a", pi_session("sa", 2))
    line = orjson.dumps(user("sa-2", "sa-1", "finally finished thought", T0 + 9)) + b"\n"
    live = start(pi)
    try:
        wait_for(lambda: idle(config), timeout=20, what="the first build")
        with a.open("ab") as f:
            f.write(line[:25])
        size = a.stat().st_size
        # The half line is seen (the published size moves) but makes nothing
        wait_for(lambda: (s := state_of(config, a)) is not None and s.size == size, what="half")
        state = state_of(config, a)
        assert state is not None and state.view("active").entry_count == 2
        with a.open("ab") as f:
            f.write(line[25:])
        wait_for(lambda: has_term(config, a, "finished"), what="the finished line")
        state = state_of(config, a)
        assert state is not None and state.view("active").entry_count == 3
        assert "malformed_line" not in state.view("active").reasons
        wait_for(lambda: idle(config), timeout=20, what="merge")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
    assert_equals_clean_build(config, tmp_path)


def test_status_reports_positions_lag_and_workers(pi: PiRoot) -> None:
    config = pi.write_config()
    pi.session("a", pi_session("sa", 2))
    live = start(pi, "--processes", "2")
    try:
        wait_for(lambda: idle(config), timeout=20, what="the first build")
        wait_for(lambda: collect_status(config).as_dict()["pipeline"]["ready"], what="ready")
        p = collect_status(config).as_dict()["pipeline"]
        assert p["running"] and p["pid"] == live.pid
        assert p["readyAt"] is not None
        text = render_status(collect_status(config)).splitlines()
        assert any(line.startswith("pipeline ") and ", ready;" in line for line in text)
        assert p["lag"] == {"events": 0, "oldestPendingSeconds": None}
        assert {"watch", "publish"} <= set(p["positions"])
        assert p["positions"]["publish"] == p["journal"]["head"]
        names = [w["name"] for w in p["workers"]]
        assert names == ["watcher", "index-0", "index-1", "publisher"]
        assert all(w["state"] == "running" and w["restarts"] == 0 for w in p["workers"])
        assert p["lastGenerationAt"] is not None
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
    assert not collect_status(config).as_dict()["pipeline"]["running"]


def test_children_are_forked_by_the_supervisor_which_has_no_other_thread(pi: PiRoot) -> None:
    """Issue 22 item 11: the supervisor imports the pipeline and forks every child from
    itself, so a start (and the first append after it) waits on neither an interpreter per
    child nor a fork server's; it never starts a thread, so each fork copies no lock that
    another thread held."""
    config = pi.write_config()
    pi.session("a", pi_session("sa", 2))
    live = start(pi)
    try:
        children = [c["pid"] for c in live.wait_ready(pi.index)["children"]]
        assert {psutil.Process(pid).ppid() for pid in children} == {live.pid}
        supervisor = psutil.Process(live.pid)
        assert supervisor.num_threads() == 1
        assert {c.pid for c in supervisor.children()} == set(children)
        wait_for(lambda: idle(config), timeout=20, what="the first build")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()


def test_once_ready_the_first_append_takes_the_append_path(pi: PiRoot, tmp_path: Path) -> None:
    """Issue 22 item 11: a run says when it is ready (every process up, the first reconcile
    journaled, the workers warm); the first append after that is no whole build."""
    config = pi.write_config()
    a = pi.session("a", pi_session("sa", 4))
    catch_up(config)
    live = start(pi, "--processes", "1")
    try:
        state = wait_for(
            lambda: (s := live.run_state(pi.index)) and s.get("ready") and s, what="ready"
        )
        assert state["readyAt"] >= state["startedAt"]
        assert any(e.get("event") == "pipeline.ready" for e in live.events())
        append(a, lines_for("sa", 2, start=4, parent="sa-3"))
        wait_for(lambda: has_term(config, a, "tokensa5"), what="the first append")

        def stats() -> dict[str, object] | None:
            state = live.run_state(pi.index) or {}
            (worker,) = [c for c in state.get("children", []) if c["name"] == "index-0"]
            return worker["stats"] if worker["stats"].get("appends") else None

        counters = wait_for(stats, timeout=20, what="the worker statistics after the append")
        assert counters["warmed"] == 1 and counters["whole"] == 0
        wait_for(lambda: idle(config), timeout=20, what="the merge")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
    assert_equals_clean_build(config, tmp_path)


def test_a_second_pipeline_is_refused(pi: PiRoot) -> None:
    pi.write_config()
    pi.session("a", pi_session("sa", 2))
    live = start(pi)
    try:
        second = LivePipeline(pi.config_path, log_path=pi.base / "second.log").start()
        assert second.process is not None
        assert second.process.wait(60) == 3
        assert b"locked by another writer" in (pi.base / "second.log").read_bytes()
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()


def test_sigkill_leaves_no_orphans_and_a_restart_loses_nothing(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    a = pi.session("a", pi_session("sa", 4))
    live = start(pi)
    children = [c["pid"] for c in live.wait_ready(pi.index)["children"]]
    wait_for(lambda: idle(config), timeout=20, what="the first build")
    append(a, lines_for("sa", 2, start=4, parent="sa-3"))
    live.stop(signal.SIGKILL)
    wait_for(lambda: all(pid_gone(p) for p in children), what="no orphan processes")
    append(a, lines_for("sa", 2, start=6, parent="sa-5"))
    live = start(pi)
    try:
        wait_for(lambda: has_term(config, a, "tokensa7"), what="the lines appended around the kill")
        wait_for(lambda: idle(config), timeout=20, what="convergence")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
    assert_equals_clean_build(config, tmp_path)


def test_a_root_that_appears_later_is_watched(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    pi.session("a", pi_session("sa", 2))
    live = start(pi, "--reconcile-seconds", "0.5")
    try:
        wait_for(lambda: idle(config), timeout=20, what="the first build")
        # Given the Claude root did not exist when the pipeline started
        claude = pi.base / "claude" / "-work-proj"
        claude.mkdir(parents=True)
        record = {
            "parentUuid": None,
            "type": "user",
            "message": {"role": "user", "content": "claude words arrive late"},
            "uuid": "u-1",
            "timestamp": "2026-01-01T00:00:00.000Z",
            "sessionId": "c-1",
            "cwd": "/work/proj",
        }
        path = claude / "c-1.jsonl"
        path.write_bytes(orjson.dumps(record) + b"\n")
        wait_for(lambda: has_term(config, path, "late"), timeout=20, what="the new root indexed")
        # Then appends to it are seen too
        record = {**record, "parentUuid": "u-1", "uuid": "u-2"}
        record["message"] = {"role": "user", "content": "and more appended quickly"}
        with path.open("ab") as f:
            f.write(orjson.dumps(record) + b"\n")
        wait_for(lambda: has_term(config, path, "quickly"), timeout=20, what="the append")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()


def test_the_live_lexicon_converges_to_the_clean_build_while_running(
    pi: PiRoot, tmp_path: Path
) -> None:
    config = pi.write_config(hotSessions=1)
    for n in range(4):
        pi.session(f"s{n}", pi_session(f"s{n}", 3), mtime_s=1000 + n)
    live = start(pi)
    try:
        wait_for(lambda: idle(config), timeout=20, what="the first build")
        # A new newest session turns the hot one cold: its bucket is rebuilt in the
        # background while the pipeline keeps publishing
        pi.session("s9", pi_session("s9", 3), mtime_s=5000)
        other = elsewhere(config, tmp_path / "clean")

        def converged() -> bool:
            manifest = open_snapshot(config.index_dir).manifest
            if len(manifest.sessions) != 5:
                return False
            shutil.rmtree(other.index_dir, ignore_errors=True)
            catch_up(other)
            clean = open_snapshot(other.index_dir).manifest
            return bool(manifest.lexicon) and manifest.lexicon == clean.lexicon

        wait_for(converged, timeout=30, what="the lexicon of the new cold set")
        assert live.stop() == 0
    finally:
        if live.process and live.process.poll() is None:
            live.kill()
