"""`pipeline run --once` end to end on hand-written Pi sessions (and the real ones)."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from dataclasses import replace
from pathlib import Path

import orjson
import pytest

from pipeline.catchup import catch_up
from pipeline.status import collect_status
from store.reader import open_snapshot
from store.records import ColdDigest, HotShard, SessionEntries
from tests.helpers import (
    SHARED_FIXTURES,
    PiRoot,
    assistant,
    bash,
    elsewhere,
    header,
    jsonl,
    tool_result,
    user,
)

T0 = 1_700_000_000_000


def small_session(sid: str, words: str) -> list[dict]:
    return [
        header(sid, "/work/proj"),
        user("u1", None, f"please look at {words}", T0),
        assistant("a1", "u1", "running the tests", T0 + 1,
                  {"id": "c1", "name": "bash", "arguments": {"command": "pytest"}}),
        bash("b1", "a1", "pytest", "1 failed", T0 + 2, exit_code=1),
        tool_result("r1", "b1", "read", "file body " + words, T0 + 3),
    ]  # fmt: skip


@pytest.fixture
def pi(tmp_path: Path) -> PiRoot:
    return PiRoot(tmp_path)


def record_files(index: Path) -> dict[str, bytes]:
    return {p.name: p.read_bytes() for p in sorted((index / "records").rglob("*")) if p.is_file()}


def test_indexes_every_session_and_names_incomplete_ones(pi: PiRoot) -> None:
    config = pi.write_config(hotSessions=1)
    pi.session("a", small_session("sa", "alpha"), mtime_s=2000)
    pi.session("b", small_session("sb", "beta"), mtime_s=1000)
    broken = pi.session("c", small_session("sc", "gamma"), mtime_s=500)
    with broken.open("ab") as f:
        f.write(b'{"type":"message","id":"x"\n')  # a malformed line
    os.utime(broken, (500, 500))
    report = catch_up(config)
    assert (report.eligible, report.indexed, report.failed) == (3, 3, 0)
    status = collect_status(config).as_dict()
    assert status["indexed"] == status["eligible"] == 3
    assert (status["hot"], status["cold"]) == (1, 2)
    assert status["incomplete"] == 1
    [incomplete] = status["incompleteSessions"]
    assert incomplete["path"] == str(broken)
    assert incomplete["reasons"] == ["malformed_line"]
    snapshot = open_snapshot(config.index_dir)
    tiers = {Path(s.path).name: s.tier for s in snapshot.manifest.sessions}
    assert tiers == {"a.jsonl": "hot", "b.jsonl": "cold", "c.jsonl": "cold"}
    hot = snapshot.session(str(pi.root / "--work-proj--" / "a.jsonl"))
    assert hot is not None
    shard = snapshot.load(hot.index_record, HotShard)
    assert [e.role for e in shard.view("active").entries] == [
        "user", "assistant", "bashExecution", "toolResult",
    ]  # fmt: skip
    assert "alpha" in shard.view("active").postings
    cold = snapshot.session(str(pi.root / "--work-proj--" / "b.jsonl"))
    assert cold is not None
    digest = snapshot.load(cold.index_record, ColdDigest)
    assert b"beta" in digest.view("active").vocabulary.split(b"\n")
    entries = snapshot.load(cold.entries_record, SessionEntries)
    assert entries.view("active").entries[2].outcome == "failed"


def test_rerun_without_change_writes_nothing(pi: PiRoot) -> None:
    config = pi.write_config()
    pi.session("a", small_session("sa", "alpha"))
    first = catch_up(config)
    assert first.generations == [1] and first.bytes_written > 0
    before = {p: p.stat().st_mtime_ns for p in pi.index.rglob("*")}
    second = catch_up(config)
    assert second.bytes_written == 0
    assert second.generations == []
    assert second.reused == 1 and second.indexed == 0
    assert {p: p.stat().st_mtime_ns for p in pi.index.rglob("*")} == before


def test_rebuild_from_nothing_gives_identical_record_files(pi: PiRoot) -> None:
    config = pi.write_config(hotSessions=2)
    for n in range(5):
        pi.session(f"s{n}", small_session(f"id{n}", f"word{n}"), mtime_s=1000 + n)
    catch_up(config)
    first = record_files(pi.index)
    shutil.rmtree(pi.index)
    catch_up(config)
    assert record_files(pi.index) == first
    assert all(len(v) > 0 for v in first.values())


def test_changes_are_followed(pi: PiRoot) -> None:
    config = pi.write_config(hotSessions=1)
    a = pi.session("a", small_session("sa", "alpha"), mtime_s=1000)
    b = pi.session("b", small_session("sb", "beta"), mtime_s=2000)
    catch_up(config)
    # Given a grows (and becomes the newest), b is deleted, c appears
    with a.open("ab") as f:
        f.write(jsonl([user("u2", "r1", "appended zeta", T0 + 9)]))
    os.utime(a, (3000, 3000))
    b.unlink()
    pi.session("c", small_session("sc", "gamma"), mtime_s=500)
    report = catch_up(config)
    # b's file is gone: its session stays, read from the archive; it was the hot one, so it
    # is built again, cold, from the archived bytes (a, c and b: three builds)
    assert (report.indexed, report.removed, report.archived) == (3, 0, 1)
    manifest = open_snapshot(config.index_dir).manifest
    states = {Path(s.path).name: s for s in manifest.sessions if not s.archived}
    assert set(states) == {"a.jsonl", "c.jsonl"}
    assert [Path(s.path).name for s in manifest.sessions if s.archived] == ["b.jsonl"]
    assert states["a.jsonl"].tier == "hot" and states["c.jsonl"].tier == "cold"
    assert states["a.jsonl"].view("active").entry_count == 5
    assert collect_status(config).as_dict()["stale"] == 0


def test_status_reports_stale_and_new_without_writing(pi: PiRoot) -> None:
    config = pi.write_config()
    a = pi.session("a", small_session("sa", "alpha"))
    catch_up(config)
    with a.open("ab") as f:
        f.write(jsonl([user("u2", "r1", "later", T0 + 9)]))
    pi.session("n", small_session("sn", "new"))
    status = collect_status(config).as_dict()
    assert (status["stale"], status["new"], status["indexed"]) == (1, 1, 0)
    assert status["staleSessions"] == [str(a)]


def test_policy_change_rebuilds_everything(pi: PiRoot) -> None:
    pi.session("a", small_session("sa", "alpha"))
    catch_up(pi.write_config())
    report = catch_up(pi.write_config(indexToolOutput=False))
    assert report.indexed == 1 and report.reused == 0
    snapshot = open_snapshot(pi.index)
    [state] = snapshot.manifest.sessions
    entries = snapshot.load(state.entries_record, SessionEntries).view("active").entries
    assert entries[3].text.startswith("toolResult(read)") and "file body" not in entries[3].text


def test_a_new_hot_set_and_new_sessions_publish_one_generation(pi: PiRoot) -> None:
    # Given an index of two sessions, one of them hot
    pi.session("a", small_session("sa", "alpha"), mtime_s=1000)
    pi.session("b", small_session("sb", "beta"), mtime_s=2000)
    first = catch_up(pi.write_config(hotSessions=1))
    # When the hot set grows (a retier of the indexed ones) and a session appears meanwhile
    pi.session("c", small_session("sc", "gamma"), mtime_s=500)
    report = catch_up(pi.write_config(hotSessions=3))
    # Then one generation says it all, every session hot, none named pending
    assert report.generations == [first.generations[-1] + 1]
    manifest = open_snapshot(pi.index).manifest
    assert [s.tier for s in manifest.sessions] == ["hot", "hot", "hot"]
    assert not manifest.skipped and not manifest.reasons


def test_cli_run_and_status(pi: PiRoot) -> None:
    pi.write_config()
    pi.session("a", small_session("sa", "alpha"))
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    run = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", "--once", "--config", str(pi.config_path)],
        capture_output=True, env=env, timeout=120,
    )  # fmt: skip
    assert run.returncode == 0, run.stderr
    assert run.stdout == b""  # quiet when not on a terminal; logs go to stderr
    status = subprocess.run(
        [sys.executable, "-m", "pipeline", "status", "--json", "--config", str(pi.config_path)],
        capture_output=True, env=env, timeout=120,
    )  # fmt: skip
    assert status.returncode == 0, status.stderr
    data = orjson.loads(status.stdout)
    assert data["indexed"] == data["eligible"] == 1 and data["generation"] == 1


def test_cli_errors_name_the_problem(pi: PiRoot) -> None:
    pi.config_path.write_text("[memory]\nhotSessions = -3\n")
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[2])}
    bad = subprocess.run(
        [sys.executable, "-m", "pipeline", "status", "--config", str(pi.config_path)],
        capture_output=True, env=env, timeout=120,
    )  # fmt: skip
    assert bad.returncode == 2
    assert b"memory.hotSessions" in bad.stderr


def test_worker_processes_give_the_same_records(pi: PiRoot, monkeypatch) -> None:
    from pipeline import catchup

    config = pi.write_config(hotSessions=2)
    for n in range(4):
        pi.session(f"s{n}", small_session(f"id{n}", f"word{n}"), mtime_s=1000 + n)
    catch_up(config)
    inline = record_files(pi.index)
    shutil.rmtree(pi.index)
    monkeypatch.setattr(catchup, "INLINE_BYTES", 0)
    catch_up(config, processes=2)
    assert record_files(pi.index) == inline


@pytest.mark.real
def test_real_pi_sessions_index_without_errors(pi: PiRoot) -> None:
    source = SHARED_FIXTURES / "pi"
    if not source.is_dir():
        pytest.skip("../shared/fixtures/real/pi is not present (a user's clone has no ../shared)")
    folder = pi.root / "--real--"
    folder.mkdir(parents=True)
    for f in sorted(source.glob("*.jsonl")):
        (folder / f.name).symlink_to(f)
    config = pi.write_config(hotSessions=100)
    report = catch_up(config)
    # symlinks are never followed out of a root: copy instead to prove indexing works
    assert report.eligible == 0
    for link in folder.iterdir():
        target = link.resolve()
        link.unlink()
        shutil.copyfile(target, link)
    report = catch_up(config)
    assert report.failed == 0 and report.indexed == len(list(source.glob("*.jsonl")))
    status = collect_status(config).as_dict()
    assert status["indexed"] == status["eligible"]


def test_a_deletion_alone_is_published(pi: PiRoot) -> None:
    config = pi.write_config(hotSessions=5)
    pi.session("a", small_session("sa", "alpha"), mtime_s=1000)
    b = pi.session("b", small_session("sb", "beta"), mtime_s=2000)
    catch_up(config)
    b.unlink()  # nothing left to index, no tier moves: only the removal
    report = catch_up(replace(config, archive=replace(config.archive, keep=False)))
    assert (report.indexed, report.removed, len(report.generations)) == (0, 1, 1)
    manifest = open_snapshot(config.index_dir).manifest
    assert [Path(s.path).name for s in manifest.sessions] == ["a.jsonl"]


def test_a_deletion_alone_is_published_as_archived(pi: PiRoot) -> None:
    config = pi.write_config(hotSessions=5)
    pi.session("a", small_session("sa", "alpha"), mtime_s=1000)
    b = pi.session("b", small_session("sb", "beta"), mtime_s=2000)
    catch_up(config)
    b.unlink()  # kept: b becomes cold (a build from its archived bytes) and archived
    report = catch_up(config)
    assert (report.indexed, report.removed, report.archived, len(report.generations)) == (
        1,
        0,
        1,
        1,
    )
    manifest = open_snapshot(config.index_dir).manifest
    assert {Path(s.path).name: s.archived for s in manifest.sessions} == {
        "a.jsonl": False,
        "b.jsonl": True,
    }


def test_a_pooled_build_writes_the_lexicon_an_inline_plan_expects(tmp_path: Path) -> None:
    from pipeline.lexicon import BUCKET_DIGESTS, LexiconKeeper
    from store.writer import StoreWriter
    from tests.helpers import generated

    # more than the inline threshold and more cold sessions than one bucket: the worker
    # pool indexes and builds buckets as their sessions finish
    _, config = generated(
        tmp_path, sessions=BUCKET_DIGESTS + 60, mean_kb=40, seed=9, hot_sessions=4
    )
    report = catch_up(config, processes=2)
    assert report.failed == 0
    manifest = open_snapshot(config.index_dir).manifest
    cold = [s for s in manifest.sessions if s.tier != "hot"]
    assert len(manifest.lexicon) == 2 and len(cold) > BUCKET_DIGESTS
    plan = LexiconKeeper(StoreWriter(config.index_dir)).plan(manifest.lexicon, cold)
    assert not plan.todo and plan.segments == manifest.lexicon
    again = tmp_path / "again"
    other = elsewhere(config, again)
    catch_up(other, processes=1)  # one worker, another order of work: the same files
    assert open_snapshot(again).manifest.lexicon == manifest.lexicon


def test_a_pooled_build_in_several_batches_publishes_each_with_its_lexicon(
    tmp_path: Path,
) -> None:
    from tests.helpers import generated

    _, config = generated(tmp_path, sessions=120, mean_kb=80, seed=4, hot_sessions=4)
    small = replace(config, memory=replace(config.memory, max_sync_source_bytes=4 * 1024 * 1024))
    report = catch_up(small, processes=2)
    assert report.failed == 0 and len(report.generations) > 1
    manifest = open_snapshot(config.index_dir).manifest
    assert manifest.lexicon and not manifest.reasons
    cold = [s for s in manifest.sessions if s.tier != "hot"]
    from pipeline.lexicon import LexiconKeeper
    from store.writer import StoreWriter

    plan = LexiconKeeper(StoreWriter(config.index_dir)).plan(manifest.lexicon, cold)
    assert not plan.todo and plan.segments == manifest.lexicon  # built once, complete
