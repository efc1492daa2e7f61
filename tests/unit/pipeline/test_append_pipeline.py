"""The always-on pipeline stepped inline: watcher → journal → worker → publisher.

Each test changes session files the way agents and people do, lets the inline runner go idle
and compares the published index with what a clean `pipeline run --once` builds from the same
files: same sessions, same stamps, same record bytes.
"""

from __future__ import annotations

import os
import tempfile
from dataclasses import replace
from pathlib import Path

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from pipeline.catchup import catch_up
from pipeline.engine import policy_of
from pipeline.runner import InlineRunner, Mailbox
from pipeline.settings import RunSettings
from pipeline.workers import IndexWorker
from stages.tier import assign_tiers
from store.config import Config
from store.reader import open_snapshot
from store.records import HotShard, Manifest, SourceEvent
from tests.doubles import FakeClock, MemoryJournal
from tests.helpers import (
    PiRoot,
    assistant,
    codex_object_rollout,
    codex_said,
    elsewhere,
    header,
    jsonl,
    user,
)

T0 = 1_700_000_000_000


def lines_for(sid: str, n: int, start: int = 0, parent: str | None = None) -> list[dict]:
    out: list[dict] = []
    for i in range(start, start + n):
        entry_id = f"{sid}-{i}"
        if i % 2:
            out.append(assistant(entry_id, parent, f"reply {i} about {sid}", T0 + i))
        else:
            out.append(user(entry_id, parent, f"question {i} mentions word{i}", T0 + i))
        parent = entry_id
    return out


def pi_session(sid: str, n: int) -> list[dict]:
    return [header(sid, "/work/proj"), *lines_for(sid, n)]


def append_lines(path: Path, records: list[dict]) -> None:
    with path.open("ab") as f:
        f.write(jsonl(records))


def clean_rebuild(config: Config, tmp: Path) -> Manifest:
    other = elsewhere(config, tmp / "clean")
    catch_up(other)
    return open_snapshot(other.index_dir).manifest


def record_bytes(index: Path, manifest: Manifest) -> dict[str, bytes]:
    out: dict[str, bytes] = {}
    for name in sorted(manifest.records()):
        out[name] = (index / "records" / name[:2] / name).read_bytes()
    return out


def assert_converged(config: Config, tmp: Path) -> Manifest:
    live = open_snapshot(config.index_dir).manifest
    clean = clean_rebuild(config, tmp)
    assert live.sessions == clean.sessions
    assert live.skipped == clean.skipped
    assert (live.policy, live.roots, live.hot_sessions) == (
        clean.policy,
        clean.roots,
        clean.hot_sessions,
    )
    assert record_bytes(config.index_dir, live) == record_bytes(tmp / "clean", clean)
    return live


SETTINGS = RunSettings(workers=1, reconcile_s=3600.0)


def settle(runner: InlineRunner, clock: FakeClock) -> None:
    """Let the pipeline go quiet long enough for every delta to merge."""
    runner.run_until_idle()
    clock.advance(SETTINGS.engine.merge_quiet_s + 1)
    runner.run_until_idle()


@pytest.fixture
def pi(tmp_path: Path) -> PiRoot:
    return PiRoot(tmp_path)


def test_a_fresh_index_equals_a_clean_build(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config(hotSessions=1)
    pi.session("a", pi_session("sa", 6), mtime_s=2000)
    pi.session("b", pi_session("sb", 4), mtime_s=1000)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    live = assert_converged(config, tmp_path)
    assert [s.tier for s in live.sessions] == ["hot", "cold"]


def test_appends_become_deltas_then_merge_into_the_clean_build(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config(hotSessions=2)
    path = pi.session("a", pi_session("sa", 4))
    clock = FakeClock()
    with InlineRunner(config, SETTINGS, clock=clock) as runner:
        runner.run_until_idle()
        # When lines are appended one by one, each published as soon as it is seen
        parent = "sa-3"
        for i in range(4, 10):
            append_lines(path, lines_for("sa", 1, start=i, parent=parent))
            parent = f"sa-{i}"
            runner.notice(str(path))
            runner.run_until_idle()
            clock.advance(0.1)
            state = open_snapshot(config.index_dir).session(str(path))
            assert state is not None and state.size == path.stat().st_size
        # Then the session grew by deltas only: no whole rebuild since the first
        counters = runner.worker.engine.counters
        assert (counters.whole, counters.appends, counters.declined) == (1, 6, 0)
        assert len(state.index_deltas) == 6
        assert state.view("active").entry_count == 10
        snapshot = open_snapshot(config.index_dir)
        last = snapshot.load(state.index_deltas[-1], HotShard)
        assert [e.index for e in last.view("active").entries] == [9]
        assert "word8" in snapshot.load(state.index_deltas[-2], HotShard).view("active").postings
        # And once quiet, the deltas merge into the record a clean build makes
        clock.advance(SETTINGS.engine.merge_quiet_s + 1)
        runner.run_until_idle()
        assert runner.worker.engine.counters.merges == 1
    live = assert_converged(config, tmp_path)
    assert not live.sessions[0].index_deltas


def test_deltas_compact_in_tiers(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    path = pi.session("a", pi_session("sa", 2))
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        parent = "sa-1"
        for i in range(2, 2 + 17):
            append_lines(path, lines_for("sa", 1, start=i, parent=parent))
            parent = f"sa-{i}"
            runner.notice(str(path))
            runner.run_until_idle()
        state = open_snapshot(config.index_dir).session(str(path))
        assert state is not None
        # 17 appends with fanout 8: two level-1 deltas and one level-0 delta
        assert runner.worker.engine.counters.compactions == 2
        assert len(state.index_deltas) == 3
        assert state.view("active").entry_count == 19


def test_a_half_written_line_is_never_malformed(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    path = pi.session("a", pi_session("sa", 2))
    line = orjson.dumps(user("sa-2", "sa-1", "the finished thought", T0 + 9)) + b"\n"
    clock = FakeClock()
    with InlineRunner(config, SETTINGS, clock=clock) as runner:
        runner.run_until_idle()
        # When a writer stops in the middle of a line
        with path.open("ab") as f:
            f.write(line[:20])
        runner.notice(str(path))
        runner.run_until_idle()
        state = open_snapshot(config.index_dir).session(str(path))
        assert state is not None and state.size == path.stat().st_size
        assert state.view("active").entry_count == 2
        assert "malformed_line" not in state.view("active").reasons
        # And finishes it later
        with path.open("ab") as f:
            f.write(line[20:])
        runner.notice(str(path))
        runner.run_until_idle()
        state = open_snapshot(config.index_dir).session(str(path))
        assert state is not None
        assert state.view("active").entry_count == 3
        assert "malformed_line" not in state.view("active").reasons
        assert runner.worker.engine.counters.whole == 1
        settle(runner, clock)
    assert_converged(config, tmp_path)


def test_rewrite_truncate_delete_and_rename_are_followed(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    a = pi.session("a", pi_session("sa", 6))
    b = pi.session("b", pi_session("sb", 6))
    c = pi.session("c", pi_session("sc", 6))
    d = pi.session("d", pi_session("sd", 6))
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        # rewrite in place, same size, mtime restored
        st = a.stat()
        a.write_bytes(a.read_bytes().replace(b"question 0", b"QUESTION 0"))
        os.utime(a, ns=(st.st_atime_ns, st.st_mtime_ns))
        # truncate to a shorter session
        b.write_bytes(jsonl(pi_session("sb", 2)))
        # delete
        c.unlink()
        # rename
        renamed = d.with_name("d-renamed.jsonl")
        d.rename(renamed)
        runner.notice(str(a), str(b), str(c), str(d), str(renamed))
        runner.run_until_idle()
        live = {s.path: s for s in open_snapshot(config.index_dir).manifest.sessions}
        assert {p for p, s in live.items() if not s.archived} == {str(a), str(b), str(renamed)}
        assert live[str(b)].view("active").entry_count == 2
        # the archive keeps what is gone: the deleted file, and the old versions of the two
        # rewrites, whose entries the files no longer hold (a rename is followed, not kept)
        kept = sorted(p for p, s in live.items() if s.archived)
        assert len(kept) == 3 and kept[2] == str(c)
        assert kept[0].startswith(f"{a}@archived-") and kept[1].startswith(f"{b}@archived-")
    assert_converged(config, tmp_path)


def test_changes_made_while_stopped_are_found_at_start(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config(hotSessions=1)
    a = pi.session("a", pi_session("sa", 4), mtime_s=1000)
    b = pi.session("b", pi_session("sb", 4), mtime_s=2000)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    # While stopped: a grows (and becomes the newest), b is deleted, e is new
    append_lines(a, lines_for("sa", 2, start=4, parent="sa-3"))
    b.unlink()
    pi.session("e", pi_session("se", 3), mtime_s=500)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    live = assert_converged(config, tmp_path)
    assert {Path(s.path).name: s.tier for s in live.sessions} == {
        "a.jsonl": "hot",
        "e.jsonl": "cold",
        "b.jsonl": "cold",  # deleted while stopped: kept from the archive
    }
    assert [Path(s.path).name for s in live.sessions if s.archived] == ["b.jsonl"]


def test_a_cold_session_that_grows_becomes_hot_and_demotes_another(
    pi: PiRoot, tmp_path: Path
) -> None:
    config = pi.write_config(hotSessions=1)
    old = pi.session("old", pi_session("so", 4), mtime_s=1000)
    new = pi.session("new", pi_session("sn", 4), mtime_s=2000)
    clock = FakeClock()
    with InlineRunner(config, SETTINGS, clock=clock) as runner:
        runner.run_until_idle()
        tiers = {s.path: s.tier for s in open_snapshot(config.index_dir).manifest.sessions}
        assert tiers == {str(old): "cold", str(new): "hot"}
        append_lines(old, lines_for("so", 1, start=4, parent="so-3"))
        runner.notice(str(old))
        runner.run_until_idle()
        tiers = {s.path: s.tier for s in open_snapshot(config.index_dir).manifest.sessions}
        assert tiers == {str(old): "hot", str(new): "cold"}
        settle(runner, clock)
    assert_converged(config, tmp_path)


def test_replaying_published_events_is_a_no_op(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    pi.session("a", pi_session("sa", 4))
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        generation = runner.writer.current_generation()
    # Given a restart that forgot the publish checkpoint (a crash before it was written)
    (config.index_dir / "checkpoints" / "publish.ckpt").unlink()
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        counters = runner.worker.engine.counters
        # Then the replayed events change nothing and publish nothing
        assert counters.whole == 0 and counters.unchanged >= 1
        assert runner.writer.current_generation() == generation


def test_a_touch_moves_only_the_stamp(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    a = pi.session("a", pi_session("sa", 4), mtime_s=1000)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        os.utime(a, (5000, 5000))
        runner.notice(str(a))
        runner.run_until_idle()
        assert runner.worker.engine.counters.restamps == 1
        assert runner.worker.engine.counters.whole == 1
    assert_converged(config, tmp_path)


def test_run_once_folds_deltas_an_always_on_run_left(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    path = pi.session("a", pi_session("sa", 4))
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        append_lines(path, lines_for("sa", 1, start=4, parent="sa-3"))
        runner.notice(str(path))
        runner.run_until_idle()
    # Given an always-on run stopped before it merged
    state = open_snapshot(config.index_dir).session(str(path))
    assert state is not None and state.index_deltas
    # When `pipeline run --once` catches up, the session is rebuilt as a clean build would
    report = catch_up(config)
    assert report.indexed == 1
    assert_converged(config, tmp_path)


def test_a_session_appended_without_pause_still_merges(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config()
    path = pi.session("a", pi_session("sa", 4))
    tiny = replace(SETTINGS.engine, merge_min_bytes=1, merge_ratio=0.01)
    with InlineRunner(config, replace(SETTINGS, engine=tiny), clock=FakeClock()) as runner:
        runner.run_until_idle()
        parent = "sa-3"
        for i in range(4, 12):
            append_lines(path, lines_for("sa", 1, start=i, parent=parent))
            parent = f"sa-{i}"
            runner.notice(str(path))
            runner.run_until_idle()
        # The clock never moved: these merges are the urgent ones, not the quiet ones
        assert runner.worker.engine.counters.merges >= 1
        state = open_snapshot(config.index_dir).session(str(path))
        assert state is not None and state.view("active").entry_count == 12


def test_a_skipped_session_deleted_while_stopped_is_forgotten(
    pi: PiRoot, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pipeline.engine

    config = pi.write_config()
    pi.session("a", pi_session("sa", 2))
    broken = pi.session("b", pi_session("sb", 2))
    real = pipeline.engine.build_session

    def fails_on_b(job, data, stamp, writer):  # type: ignore[no-untyped-def]
        if job.path == str(broken):
            raise RuntimeError("a stage bug, for the test")
        return real(job, data, stamp, writer)

    monkeypatch.setattr(pipeline.engine, "build_session", fails_on_b)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    [skipped] = open_snapshot(config.index_dir).manifest.skipped
    assert (skipped.path, skipped.reason) == (str(broken), "index_error")
    monkeypatch.setattr(pipeline.engine, "build_session", real)
    broken.unlink()
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    assert_converged(config, tmp_path)


@given(
    steps=st.lists(
        st.tuples(st.integers(0, 7), st.sampled_from(["append", "delete"]), st.integers(0, 20)),
        max_size=40,
    ),
    hot=st.integers(0, 4),
)
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_the_tier_map_follows_every_event_as_a_global_ranking_would(
    steps: list[tuple[int, str, int]], hot: int
) -> None:
    # Given a worker fed events for files that do not exist (each is simply dropped)
    with tempfile.TemporaryDirectory() as base:
        config = PiRoot(Path(base)).write_config(hotSessions=hot)
        worker = IndexWorker(
            config,
            worker_id=0,
            settings=SETTINGS,
            journal=MemoryJournal(),
            outbox=Mailbox(),
            policy=policy_of(config),
        )
        worker.boot()
        for n, (which, kind, mtime) in enumerate(steps):
            event = SourceEvent(kind, f"{base}/p{which}.jsonl", "pi", 1, which, 0, mtime, 0, 0, 0)
            worker._handle([replace(event, position=n)])
            # Then its tiers are always those of a ranking of every known session
            assert worker._tiers == assign_tiers(worker.mtimes.items(), hot)


def test_a_new_policy_or_hot_set_size_rebuilds_what_it_changes(pi: PiRoot, tmp_path: Path) -> None:
    config = pi.write_config(hotSessions=2)
    pi.session("a", pi_session("sa", 4), mtime_s=3000)
    pi.session("b", pi_session("sb", 4), mtime_s=2000)
    pi.session("c", pi_session("sc", 4), mtime_s=1000)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    # Given fewer hot sessions, then another entry size: no file changed
    config = pi.write_config(hotSessions=1)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    live = assert_converged(config, tmp_path / "one")
    assert [s.tier for s in live.sessions] == ["hot", "cold", "cold"]
    config = pi.write_config(hotSessions=1, maxEntryChars=100)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
    assert_converged(config, tmp_path / "two")


# --- Codex era A: one JSON object per file, rewritten on each save ---------------------------

ERA_A_ID = "0196a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"


def era_a_rollout(*texts: str) -> bytes:
    return codex_object_rollout(ERA_A_ID, [codex_said("user", t) for t in texts])


def test_an_era_a_codex_rollout_is_indexed_and_rebuilt_whole_when_saved_again(
    pi: PiRoot, tmp_path: Path
) -> None:
    from query.engine import Engine

    config = pi.write_config(hotSessions=1)
    codex = pi.base / "codex" / "2025" / "05"
    codex.mkdir(parents=True)
    path = codex / f"rollout-2025-05-01-{ERA_A_ID}.json"
    path.write_bytes(era_a_rollout("where is the zebrafish config"))
    # not sessions: other JSON under the Codex root, a rollout-*.json under another root
    (codex / "settings.json").write_bytes(b"{}")
    pi.session("a", pi_session("sa", 2), mtime_s=1000)
    (pi.root / "rollout-2025-05-01-x.json").write_bytes(era_a_rollout("not codex"))
    clock = FakeClock()
    with InlineRunner(config, SETTINGS, clock=clock) as runner:
        runner.run_until_idle()
        live = assert_converged(config, tmp_path)
        assert sorted(s.path for s in live.sessions) == sorted([str(path), *map(str, pi_files(pi))])
        # The TS CLI saves the whole object again, longer: a whole rebuild, never a delta,
        # even when the file was caught half written and the save merely completes it (the
        # bytes then grow from a prefix, as an append's do)
        full = era_a_rollout("where is the zebrafish config", "and the okapi one")
        for data in (full[: len(full) // 2], full):
            path.write_bytes(data)
            runner.notice(str(path))
            runner.run_until_idle()
        counters = runner.worker.engine.counters
        assert (counters.appends, counters.declined) == (0, 0) and counters.whole >= 3
        state = open_snapshot(config.index_dir).session(str(path))
        assert state is not None and state.size == path.stat().st_size
        assert not state.index_deltas
    assert_converged(config, tmp_path / "again")
    with Engine(config) as engine:
        for term in ("zebrafish", "okapi"):
            page = engine.recall({"query": term, "scope": "global"}, cwd="/")
            assert page["total"] == 1 and page["hits"][0]["sessionId"] == f"codex:{ERA_A_ID}"
        assert engine.recall({"query": "not codex", "scope": "global"}, cwd="/")["total"] == 0


def pi_files(pi: PiRoot) -> list[Path]:
    return sorted(pi.root.rglob("*.jsonl"))
