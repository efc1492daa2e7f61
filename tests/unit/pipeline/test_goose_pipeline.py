"""Goose sessions inside one ``sessions.db`` through the pipeline and the query side (the
database infrastructure is OpenCode's, ``test_opencode_pipeline``: this proves a second agent
needs only its ``stages/goose`` folder)."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.catchup import catch_up
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from store.config import Config
from store.reader import open_snapshot
from tests.goose_db import GooseDb, request, response, text
from tests.helpers import PiRoot
from tests.indexed import global_recall as _recall

WORD = "gossamerquint"


def _db(tmp: Path) -> tuple[Config, GooseDb]:
    config = PiRoot(tmp).write_config()
    db = GooseDb(tmp / "goose" / "sessions.db")
    db.session("20260101_1", "Parser")
    db.message("20260101_1", "user", text(f"why does {WORD} fail?"))
    db.message("20260101_1", "assistant", request("c1", "developer__shell", {"command": "make"}))
    db.message("20260101_1", "user", response("c1", error="command timed out"))
    db.session("20260101_2", "Other")
    db.message("20260101_2", "user", text("tidy up"))
    return config, db


@pytest.mark.parametrize("agent", [None, "goose"])
def test_a_planted_term_is_found_at_rank_one(tmp_path: Path, agent: str | None) -> None:
    config, db = _db(tmp_path)
    catch_up(config, processes=1)
    page = _recall(config, query=WORD, **({"agent": agent} if agent else {}))
    assert page["hits"][0]["sessionId"] == "goose:20260101_1"
    assert page["coverage"]["reasons"] == []
    failed = _recall(config, outcome="failed", kind="shell")["hits"]
    assert [(h["tool"], h["snippet"]) for h in failed] == [
        ("developer__shell", "toolResult(developer__shell) [error]: command timed out")
    ]


def test_a_new_message_reindexes_its_session_alone(tmp_path: Path) -> None:
    config, db = _db(tmp_path)
    with InlineRunner(config, RunSettings(workers=1, reconcile_s=3600.0)) as runner:
        runner.run_until_idle()
        other = open_snapshot(config.index_dir).session(f"{db.path}#20260101_2")
        whole = runner.worker.engine.counters.whole
        db.message("20260101_1", "assistant", text("found the cause"))
        runner.notice(str(db.path) + "-wal")
        runner.run_until_idle()
        assert runner.worker.engine.counters.whole == whole + 1
        assert open_snapshot(config.index_dir).session(f"{db.path}#20260101_2") == other
    assert _recall(config, query="cause")["hits"][0]["sessionId"] == "goose:20260101_1"
