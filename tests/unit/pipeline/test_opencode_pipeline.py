"""OpenCode sessions inside one ``opencode.db`` through the pipeline and the query side: each
session a member ``<db>#<id>``, found by recall and by its failed shell call, re-indexed alone
when it gains a message, kept from the archive when the database is deleted, and bound to its
rows by the same integrity checks as a file."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import blake3
import pytest

from pipeline.catchup import catch_up
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from query.engine import Engine
from query.export import export
from stages.opencode.adapter import DATABASE
from store.config import Config, load_config
from store.dbsource import read_member
from store.reader import open_snapshot
from store.writer import StoreWriter
from tests.helpers import PiRoot
from tests.indexed import PLANTED as WORD
from tests.indexed import global_recall as _recall
from tests.indexed import plant_opencode
from tests.indexed import session_state as _state
from tests.opencode_db import OpenCodeDb, text

SETTINGS = RunSettings(workers=1, reconcile_s=3600.0)


def _db(tmp: Path) -> tuple[Config, OpenCodeDb]:
    config = PiRoot(tmp).write_config()
    db = OpenCodeDb(tmp / "opencode" / "opencode.db")
    plant_opencode(db)
    return config, db


def _entries(config: Config, text: str) -> list[dict[str, Any]]:
    """Entry hits for *text*, following a cold (archived) session candidate into it."""
    out: list[dict[str, Any]] = []
    with Engine(config) as engine:
        for h in engine.recall({"scope": "global", "query": text}, cwd="/")["hits"]:
            if h["kind"] == "session":
                out += [
                    x for x in engine.call(h["follow"], cwd="/")["hits"] if x["kind"] == "entry"
                ]
            else:
                out.append(h)
    return out


def _member(db: OpenCodeDb, sid: str) -> str:
    return f"{db.path}#{sid}"


@pytest.mark.parametrize("agent", [None, "opencode"])
def test_a_planted_term_is_found_at_rank_one(tmp_path: Path, agent: str | None) -> None:
    config, db = _db(tmp_path)
    catch_up(config, processes=1)
    page = _recall(config, query=WORD, **({"agent": agent} if agent else {}))
    first = page["hits"][0]
    assert first["sessionId"] == "opencode:ses_main"
    assert WORD in first["snippet"]
    assert page["coverage"]["reasons"] == []
    states = {s.session_id: s for s in open_snapshot(config.index_dir).manifest.sessions}
    assert states["ses_main"].path == _member(db, "ses_main")
    assert states["ses_main"].title == "Fix the flaky parser"
    assert states["ses_main"].cwd == "/work/proj"
    # no write-ahead log or shared-memory file left beside the database
    assert sorted(p.name for p in db.path.parent.iterdir()) == ["opencode.db"]


def test_a_failed_bash_is_found_by_outcome_and_kind(tmp_path: Path) -> None:
    config, _ = _db(tmp_path)
    catch_up(config, processes=1)
    hits = _recall(config, outcome="failed", kind="shell")["hits"]
    # pytest exiting 1 failed; rg exiting 1 matched nothing: not a failure
    assert [(h["tool"], h["snippet"]) for h in hits] == [
        ("bash", "toolResult(bash) [error]: 1 failed")
    ]
    assert hits[0]["family"] == "shell" and hits[0]["isError"] is True


def test_a_new_message_reindexes_its_session_alone(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        other = _state(config, _member(db, "ses_other"))
        main = _state(config, _member(db, "ses_main"))
        whole = runner.worker.engine.counters.whole
        db.user("ses_main", "and the appended zephyrquill question")
        runner.notice(str(db.path) + "-wal")  # what the observer sees of a WAL write
        runner.run_until_idle()
        assert runner.worker.engine.counters.whole == whole + 1
        assert _state(config, _member(db, "ses_other")) == other  # untouched
        after = _state(config, _member(db, "ses_main"))
        assert after.source_hash != main.source_hash
        assert after.view("active").entry_count == main.view("active").entry_count + 1
    assert _recall(config, query="zephyrquill")["hits"][0]["sessionId"] == "opencode:ses_main"
    # a rebuild from scratch gives the very states the live pipeline had
    live = open_snapshot(config.index_dir).manifest.sessions
    StoreWriter(config.index_dir).wipe()
    catch_up(config, processes=1)
    assert open_snapshot(config.index_dir).manifest.sessions == live


def test_a_deleted_database_still_answers_from_the_archive(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        assert _state(config, _member(db, "ses_main")).archive == "kept"
        before = _recall(config, query=WORD)["hits"]
        db.path.unlink()
        runner.notice(str(db.path))
        runner.run_until_idle()
        assert _state(config, _member(db, "ses_main")).archived
    hits = _entries(config, WORD)
    assert [h["snippet"] for h in hits] == [h["snippet"] for h in before]
    assert hits[0]["archived"] is True
    with Engine(config) as engine:
        expanded = engine.call(hits[0]["follow"], cwd="/")
    assert "error" not in expanded and WORD in expanded["entries"][0]["text"]


def test_expand_checks_the_rows_against_the_bindings(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    catch_up(config, processes=1)
    hit = _recall(config, query=WORD)["hits"][0]
    with Engine(config) as engine:
        fresh = engine.call(hit["follow"], cwd="/")
    assert "error" not in fresh and WORD in fresh["entries"][0]["text"]
    db.user("ses_main", "a later message")  # the rows change, the index does not yet know
    with Engine(config) as engine:
        stale = engine.call(hit["follow"], cwd="/")
    error = stale["error"]
    assert error["code"] == "stale_pointer", stale
    # the hash it names is the one of the session's rows as they are now
    data, _ = read_member(str(db.path), "ses_main", DATABASE)
    assert (
        error["actualSourceHash"]
        == blake3.blake3(data).hexdigest()
        != hit["follow"]["args"]["expectedSourceHash"]
    )
    # the other session's pointers still hold: its rows did not change
    other = _recall(config, query="changelog")["hits"][0]
    with Engine(config) as engine:
        assert "error" not in engine.call(other["follow"], cwd="/")


def test_an_unreadable_database_is_named_and_recovers(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    good = db.path.read_bytes()
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        kept = open_snapshot(config.index_dir).manifest.sessions
        db.path.write_bytes(b"\0" * len(good))  # damaged: not a database any more
        runner.watcher.request_reconcile()
        runner.run_until_idle()
        manifest = open_snapshot(config.index_dir).manifest
        assert [(k.path, k.reason) for k in manifest.skipped] == [
            (str(db.path), "source_unreadable")
        ]
        assert manifest.sessions == kept  # its sessions are not known gone: kept as they were
        db.path.write_bytes(good)
        runner.watcher.request_reconcile()
        runner.run_until_idle()
        manifest = open_snapshot(config.index_dir).manifest
        assert manifest.skipped == () and manifest.sessions == kept


def test_the_same_rows_in_a_new_file_are_restamped_not_rebuilt(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    with InlineRunner(config, SETTINGS) as runner:
        runner.run_until_idle()
        before = _state(config, _member(db, "ses_main"))
        counters = runner.worker.engine.counters
        whole, restamps = counters.whole, counters.restamps
        copy = db.path.with_name("copy.db")
        copy.write_bytes(db.path.read_bytes())
        copy.replace(db.path)  # a backup restored: a new inode, the very same rows
        runner.notice(str(db.path))
        runner.run_until_idle()
        assert (counters.whole, counters.restamps) == (whole, restamps + 2)
        after = _state(config, _member(db, "ses_main"))
    assert after.inode != before.inode and after.source_hash == before.source_hash
    assert after.index_record == before.index_record


def test_export_source_gives_the_rows_serialized(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    catch_up(config, processes=1)
    with Engine(config) as engine:
        engine.freshness.archive = None  # no archived copy to fall back on: the rows themselves
        exported = export(
            engine.refresh(), _member(db, "ses_main"), fmt="source", branches="active",
            cwd="/", roots=engine.roots, freshness=engine.freshness,
        )  # fmt: skip
    assert exported.data == read_member(str(db.path), "ses_main", DATABASE)[0]


def test_a_long_lived_engine_sees_a_session_go_stale(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    catch_up(config, processes=1)
    with Engine(config) as engine:
        first = engine.recall({"scope": "global", "query": WORD}, cwd="/")
        assert first["coverage"]["staleSessions"] == 0
        again = engine.recall({"scope": "global", "query": WORD}, cwd="/")  # the listing kept
        assert again["coverage"]["staleSessions"] == 0
        db.user("ses_main", "a message the index does not hold yet")
        stale = engine.recall({"scope": "global", "query": WORD}, cwd="/")
        assert stale["coverage"]["staleSessions"] == 1  # ses_main alone


def test_a_session_past_max_file_bytes_is_skipped_alone(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    db.assistant("ses_main", text("long output " * 100_000))  # 1.2 MB of rows
    cap = 1 << 20  # the smallest cap a config takes
    assert len(read_member(str(db.path), "ses_other", DATABASE)[0]) < cap
    assert len(read_member(str(db.path), "ses_main", DATABASE)[0]) > cap
    path = tmp_path / "config.toml"  # PiRoot's, with the cap added as a user would
    lines = path.read_text().splitlines()
    lines.insert(lines.index("[sources]") + 1, f"maxFileBytes = {cap}")
    path.write_text("\n".join(lines) + "\n")
    catch_up(load_config(path), processes=1)
    manifest = open_snapshot(config.index_dir).manifest
    assert [s.session_id for s in manifest.sessions] == ["ses_other"]
    assert [(k.path, k.reason) for k in manifest.skipped] == [
        (_member(db, "ses_main"), "oversized_file")
    ]


def test_a_session_the_index_has_not_seen_makes_a_global_answer_incomplete(
    tmp_path: Path,
) -> None:
    config, db = _db(tmp_path)
    catch_up(config, processes=1)
    assert _recall(config, query=WORD)["coverage"]["complete"] is True
    db.session("ses_new", "Started after the last run")
    db.user("ses_new", "brand new question")
    coverage = _recall(config, query=WORD)["coverage"]
    assert coverage["complete"] is False and coverage["staleSessions"] == 1, coverage


def test_a_database_locked_by_a_writer_costs_a_recall_one_wait_not_one_per_session(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A writer holding an EXCLUSIVE lock (rollback journal, mid-transaction): each read
    waits the busy timeout and fails. Before, a recall waited it twice per session of the
    database (its listing, then its own stamp) plus once for the unseen sessions: 6 s for one
    session, 2 s more per session. Now one failed listing answers for every session in it,
    and a query waits ``QUERY_BUSY_MS`` (250 ms), not the pipeline's 2 s."""
    import sqlite3
    import time
    from contextlib import contextmanager

    import store.dbsource as dbsource

    config, db = _db(tmp_path)
    for n in range(6):
        db.session(f"ses_more{n}", f"more {n}")
        db.user(f"ses_more{n}", f"{WORD} number {n}")
    with sqlite3.connect(db.path) as c:
        c.execute("PRAGMA journal_mode = DELETE")
    catch_up(config, processes=1)
    assert _recall(config, query=WORD)["coverage"]["complete"]
    waits: list[str] = []
    real = dbsource._reading

    @contextmanager
    def counted(path: str, *args: Any) -> Any:
        try:
            with real(path, *args) as found:
                yield found
        except dbsource.DbUnreadable:
            waits.append(path)
            raise

    monkeypatch.setattr(dbsource, "_reading", counted)
    writer = sqlite3.connect(db.path, isolation_level=None)
    try:
        writer.execute("BEGIN EXCLUSIVE")
        writer.execute("UPDATE message SET time_updated = time_updated + 1")
        started = time.monotonic()
        page = _recall(config, query=WORD)
        waited = time.monotonic() - started
    finally:
        writer.close()
    assert page["coverage"]["complete"] is False
    assert "source_unavailable" in page["coverage"]["reasons"]
    assert len(waits) <= 2, waits  # the listing, and the unseen sessions' own look
    assert waited < 1.5, waited  # two waits of 250 ms, and the answer's own work


def test_sessions_whose_ids_name_no_member_are_named_not_dropped(tmp_path: Path) -> None:
    """A session id that cannot name a member (``<db>#<id>``: holding ``/``, a ``#`` that
    splits it elsewhere, empty) was left out of the listing in silence: its words were never
    found and every answer said ``complete``. Now the database is named ``source_unreadable``
    (by status and by each answer) while its other sessions answer as before."""
    from pipeline.status import collect_status

    config, db = _db(tmp_path)
    for sid in ("ses/slash", "ses#hash", ""):
        db.session(sid, "odd")
        db.user(sid, "oddidterm here")
    catch_up(config, processes=1)
    page = _recall(config, query=WORD)
    assert page["hits"][0]["sessionId"] == "opencode:ses_main"
    assert page["coverage"]["complete"] is False
    assert page["coverage"]["reasons"] == ["source_unreadable"]
    assert collect_status(config).skipped_sessions == [
        {"path": str(db.path), "agent": "opencode", "reason": "source_unreadable"}
    ]
