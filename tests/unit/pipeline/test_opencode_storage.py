"""OpenCode < 1.2's ``storage/`` tree through the pipeline and the query side: each session a
member ``storage#<id>`` read from three folders (``store.dbtree``), found by recall and by its
failed shell call, re-indexed alone when it gains a part, read from ``opencode.db`` only once
OpenCode migrated it, and bound to its files by the same integrity checks as a file."""

from __future__ import annotations

from pathlib import Path

import blake3
import pytest

from pipeline.catchup import catch_up
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from query.engine import Engine
from query.export import export
from stages.opencode.adapter import DATABASE
from store.config import Config
from store.dbsource import read_member
from store.reader import open_snapshot
from store.writer import StoreWriter
from tests.helpers import PiRoot
from tests.indexed import PLANTED as WORD
from tests.indexed import global_recall as _recall
from tests.indexed import indexed_paths as _paths
from tests.indexed import plant_opencode
from tests.indexed import session_state as _state
from tests.opencode_db import OpenCodeDb, text
from tests.opencode_storage import Storage

SETTINGS = RunSettings(workers=1, reconcile_s=3600.0)


def _tree(tmp: Path) -> tuple[Config, Storage]:
    config = PiRoot(tmp).write_config()
    tree = Storage(tmp / "opencode" / "storage")
    plant_opencode(tree)
    return config, tree


def _member(tree: Storage, sid: str) -> str:
    return f"{tree.root}#{sid}"


@pytest.mark.parametrize("agent", [None, "opencode"])
def test_a_planted_term_is_found_at_rank_one(tmp_path: Path, agent: str | None) -> None:
    config, tree = _tree(tmp_path)
    catch_up(config, processes=1)
    page = _recall(config, query=WORD, **({"agent": agent} if agent else {}))
    first = page["hits"][0]
    assert first["sessionId"] == "opencode:ses_main"
    assert WORD in first["snippet"]
    assert page["coverage"]["reasons"] == []
    states = {s.session_id: s for s in open_snapshot(config.index_dir).manifest.sessions}
    assert states["ses_main"].path == _member(tree, "ses_main")
    assert states["ses_main"].title == "Fix the flaky parser"
    assert states["ses_main"].cwd == "/work/proj"
    assert _paths(config) == [_member(tree, "ses_main"), _member(tree, "ses_other")]


def test_a_failed_bash_is_found_by_outcome_and_kind(tmp_path: Path) -> None:
    config, _ = _tree(tmp_path)
    catch_up(config, processes=1)
    hits = _recall(config, outcome="failed", kind="shell")["hits"]
    # pytest exiting 1 failed; rg exiting 1 matched nothing: not a failure
    assert [(h["tool"], h["snippet"]) for h in hits] == [
        ("bash", "toolResult(bash) [error]: 1 failed")
    ]
    assert hits[0]["family"] == "shell" and hits[0]["isError"] is True


def test_a_new_part_reindexes_its_session_alone(tmp_path: Path) -> None:
    config, tree = _tree(tmp_path)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        other = _state(config, _member(tree, "ses_other"))
        main = _state(config, _member(tree, "ses_main"))
        whole = runner.worker.engine.counters.whole
        mid = tree.assistant("ses_main")  # a message, then its part (as OpenCode streams)
        runner.notice(str(tree.root / "message" / "ses_main" / f"{mid}.json"))
        runner.run_until_idle()
        runner.watcher._owners.clear()  # the part's owner found again from the folders
        tree.tick()
        part = tree.part("ses_main", mid, text("the appended zephyrquill answer"))
        runner.notice(str(part))  # what the observer sees of the part written
        runner.run_until_idle()
        assert runner.worker.engine.counters.whole == whole + 2
        assert _state(config, _member(tree, "ses_other")) == other  # untouched
        after = _state(config, _member(tree, "ses_main"))
        assert after.source_hash != main.source_hash
        assert after.view("active").entry_count == main.view("active").entry_count + 1
    assert _recall(config, query="zephyrquill")["hits"][0]["sessionId"] == "opencode:ses_main"
    # a rebuild from scratch gives the very states the live pipeline had
    live = open_snapshot(config.index_dir).manifest.sessions
    StoreWriter(config.index_dir).wipe()
    catch_up(config, processes=1)
    assert open_snapshot(config.index_dir).manifest.sessions == live


def _migrate(tmp: Path, *sids: str) -> OpenCodeDb:
    """What OpenCode 1.2 does on its first start: *sids* copied into opencode.db, the tree
    left in place."""
    db = OpenCodeDb(tmp / "opencode" / "opencode.db")
    prompts = {"ses_main": f"why does the {WORD} parser fail?", "ses_other": "tidy the changelog"}
    for sid in sids:
        db.session(sid, "Fix the flaky parser")
        db.user(sid, prompts.get(sid, "brand new question"))
    return db


def test_a_migrated_session_is_read_from_the_database_only(tmp_path: Path) -> None:
    config, tree = _tree(tmp_path)
    db = _migrate(tmp_path, "ses_main")  # ses_other not migrated (e.g. an orphan project)
    catch_up(config, processes=1)
    assert _paths(config) == [f"{db.path}#ses_main", _member(tree, "ses_other")]
    hits = _recall(config, query=WORD)["hits"]
    assert [h["sessionId"] for h in hits] == ["opencode:ses_main"]  # once, not twice
    assert _recall(config, query="changelog")["hits"][0]["sessionId"] == "opencode:ses_other"
    assert open_snapshot(config.index_dir).manifest.skipped == ()


def test_a_migration_while_watching_drops_the_tree_copy(tmp_path: Path) -> None:
    config, tree = _tree(tmp_path)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        assert _paths(config) == [_member(tree, "ses_main"), _member(tree, "ses_other")]
        db = _migrate(tmp_path, "ses_main", "ses_other")
        runner.notice(str(db.path) + "-wal")
        runner.run_until_idle()
        assert _paths(config) == [f"{db.path}#ses_main", f"{db.path}#ses_other"]
    assert [h["sessionId"] for h in _recall(config, query=WORD)["hits"]] == ["opencode:ses_main"]


def test_a_migration_between_runs_forgets_the_tree_copy(tmp_path: Path) -> None:
    config, tree = _tree(tmp_path)
    catch_up(config, processes=1)
    db = _migrate(tmp_path, "ses_main")
    catch_up(config, processes=1)
    # forgotten, not kept from the archive: a kept copy would answer twice
    assert _paths(config) == [f"{db.path}#ses_main", _member(tree, "ses_other")]
    assert [h["sessionId"] for h in _recall(config, query=WORD)["hits"]] == ["opencode:ses_main"]
    db.path.unlink()  # the database gone (a downgrade): the tree's copy answers again
    catch_up(config, processes=1)
    assert _member(tree, "ses_main") in _paths(config)


def test_expand_checks_the_files_against_the_bindings(tmp_path: Path) -> None:
    config, tree = _tree(tmp_path)
    catch_up(config, processes=1)
    hit = _recall(config, query=WORD)["hits"][0]
    with Engine(config) as engine:
        fresh = engine.call(hit["follow"], cwd="/")
    assert "error" not in fresh and WORD in fresh["entries"][0]["text"]
    tree.tick()
    tree.user("ses_main", "a later message")  # the files change, the index does not yet know
    with Engine(config) as engine:
        stale = engine.call(hit["follow"], cwd="/")
    error = stale["error"]
    assert error["code"] == "stale_pointer", stale
    data, _ = read_member(str(tree.root), "ses_main", DATABASE)
    assert (
        error["actualSourceHash"]
        == blake3.blake3(data).hexdigest()
        != hit["follow"]["args"]["expectedSourceHash"]
    )
    other = _recall(config, query="changelog")["hits"][0]
    with Engine(config) as engine:
        assert "error" not in engine.call(other["follow"], cwd="/")


def test_a_long_lived_engine_sees_a_tree_session_go_stale(tmp_path: Path) -> None:
    config, tree = _tree(tmp_path)
    catch_up(config, processes=1)
    with Engine(config) as engine:
        assert (
            engine.recall({"scope": "global", "query": WORD}, cwd="/")["coverage"]["staleSessions"]
            == 0
        )
        tree.tick()
        tree.user("ses_main", "a message the index does not hold yet")
        stale = engine.recall({"scope": "global", "query": WORD}, cwd="/")
        assert stale["coverage"]["staleSessions"] == 1  # ses_main alone


def test_export_source_gives_the_files_serialized(tmp_path: Path) -> None:
    config, tree = _tree(tmp_path)
    catch_up(config, processes=1)
    with Engine(config) as engine:
        engine.freshness.archive = None  # no archived copy to fall back on: the files themselves
        exported = export(
            engine.refresh(), _member(tree, "ses_main"), fmt="source", branches="active",
            cwd="/", roots=engine.roots, freshness=engine.freshness,
        )  # fmt: skip
    assert exported.data == read_member(str(tree.root), "ses_main", DATABASE)[0]


def test_a_deleted_tree_still_answers_from_the_archive(tmp_path: Path) -> None:
    config, tree = _tree(tmp_path)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        assert _state(config, _member(tree, "ses_main")).archive == "kept"
        for sub in ("part", "message", "session"):
            for f in sorted((tree.root / sub).rglob("*.json")):
                if "ses_main" in str(f) or sub == "part":
                    f.unlink()
        runner.notice(str(tree.root / "session" / "prj_1" / "ses_main.json"))
        runner.run_until_idle()
        assert _state(config, _member(tree, "ses_main")).archived
    assert _recall(config, query=WORD)["hits"][0]["archived"] is True


def test_a_tree_session_the_index_has_not_seen_makes_a_global_answer_incomplete(
    tmp_path: Path,
) -> None:
    config, tree = _tree(tmp_path)
    catch_up(config, processes=1)
    assert _recall(config, query=WORD)["coverage"]["complete"] is True
    tree.session("ses_new", "Started after the last run")
    tree.user("ses_new", "brand new question")
    coverage = _recall(config, query=WORD)["coverage"]
    assert coverage["complete"] is False and coverage["staleSessions"] == 1, coverage
    _migrate(tmp_path, "ses_new")  # the database holds it: unseen there, not twice
    coverage = _recall(config, query=WORD)["coverage"]
    assert coverage["staleSessions"] == 1, coverage


def test_the_observer_sees_a_part_written_into_a_tree_that_appeared_later(
    tmp_path: Path,
) -> None:
    import time

    from pipeline.watcher import Observers, Watcher
    from tests.doubles import MemoryJournal

    config = PiRoot(tmp_path).write_config()
    (tmp_path / "opencode").mkdir(exist_ok=True)
    w = Watcher(
        config, MemoryJournal(), policy="p", published=lambda: -1, settings=SETTINGS,
        clock=lambda: 0.0, now_ns=lambda: 1,
    )  # fmt: skip
    w.boot()
    observers = Observers(w)
    observers.start(config.roots)
    try:
        tree = Storage(tmp_path / "opencode" / "storage")  # OpenCode < 1.2 starts: a new tree
        tree.session("ses_a", "t")
        mid = tree.user("ses_a", "hello")
        w._dirty.clear()
        observers.watch_new_roots(config.roots)  # after the scan its creation requested
        part = tree.part("ses_a", mid, text("more"))
        deadline = time.monotonic() + 5
        while str(part) not in w._dirty and time.monotonic() < deadline:
            time.sleep(0.02)
        assert str(part) in w._dirty
        assert w._members_of([str(part)]) == [_member(tree, "ses_a")]
    finally:
        observers.stop()
