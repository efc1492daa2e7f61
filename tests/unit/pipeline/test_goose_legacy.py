"""Goose's one-file-per-session ``sessions/<id>.jsonl`` (before ``sessions.db``; the shape of
``crates/goose/src/session/legacy.rs``: a metadata line, then one ``Message`` a line) through
the pipeline: each file a member ``<id>.jsonl#<id>`` (``store.dbsingle``) read as the rows
Goose's import makes of it, re-indexed alone when it grows, and read from ``sessions.db`` only
once Goose imported it."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from pipeline.catchup import catch_up
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from stages.goose.adapter import DATABASE
from stages.lineage import lineage
from stages.normalize import normalize
from stages.policy import Policy
from stages.read import read_session
from store.config import Config
from store.dbsource import list_members, read_member
from store.reader import open_snapshot
from tests.goose_db import GooseDb, request, response, text
from tests.helpers import PiRoot
from tests.indexed import global_recall as _recall
from tests.indexed import indexed_paths as _paths

WORD = "gossamerquint"


def _line(value: dict[str, Any]) -> bytes:
    return orjson.dumps(value) + b"\n"


def _legacy(root: Path, sid: str, description: str, *messages: dict[str, Any]) -> Path:
    root.mkdir(parents=True, exist_ok=True)
    meta = {"working_dir": "/work/proj", "description": description, "message_count": 0,
            "total_tokens": None}  # fmt: skip
    path = root / f"{sid}.jsonl"
    path.write_bytes(_line(meta) + b"".join(_line(m) for m in messages))
    return path


def _message(role: str, *content: dict[str, Any], created: int = 1_704_110_400) -> dict[str, Any]:
    return {"role": role, "created": created, "content": list(content)}


def _files(tmp: Path) -> tuple[Config, Path]:
    config = PiRoot(tmp).write_config()
    root = tmp / "goose"
    _legacy(
        root, "20240101_120000", "Parser  work",
        _message("user", text(f"why does {WORD} fail?")),
        _message("assistant", request("c1", "developer__shell", {"command": "make"})),
        _message("user", response("c1", error="command timed out")),
    )  # fmt: skip
    _legacy(root, "20240102_090000", "Other", _message("user", text("tidy up")))
    return config, root


def test_a_legacy_file_reads_as_its_imported_rows(tmp_path: Path) -> None:
    _, root = _files(tmp_path)
    path = str(root / "20240101_120000.jsonl")
    data, _ = read_member(path, "20240101_120000", DATABASE)
    assert data == (root / "20240101_120000.jsonl").read_bytes()  # the bytes as they are
    session = read_session(data, f"{path}#20240101_120000", "goose")
    assert session.reasons == ()
    assert (session.session_id, session.cwd, session.title) == (
        "20240101_120000", "/work/proj", "Parser work",
    )  # fmt: skip
    made = normalize(session, lineage(session, "active"), Policy()).entries
    assert [(e.role, e.outcome) for e in made] == [
        ("user", None), ("assistant", None), ("toolResult", "failed"),
    ]  # fmt: skip
    assert list_members(path, DATABASE).keys() == {"20240101_120000"}


@pytest.mark.parametrize("agent", [None, "goose"])
def test_a_planted_term_and_a_failed_shell_are_found(tmp_path: Path, agent: str | None) -> None:
    config, root = _files(tmp_path)
    catch_up(config, processes=1)
    page = _recall(config, query=WORD, **({"agent": agent} if agent else {}))
    assert page["hits"][0]["sessionId"] == "goose:20240101_120000"
    assert page["coverage"]["reasons"] == []
    failed = _recall(config, outcome="failed", kind="shell")["hits"]
    assert [(h["tool"], h["snippet"]) for h in failed] == [
        ("developer__shell", "toolResult(developer__shell) [error]: command timed out")
    ]
    assert _paths(config) == [
        f"{root}/20240101_120000.jsonl#20240101_120000",
        f"{root}/20240102_090000.jsonl#20240102_090000",
    ]


def test_an_appended_message_reindexes_its_file_alone(tmp_path: Path) -> None:
    config, root = _files(tmp_path)
    other = f"{root}/20240102_090000.jsonl#20240102_090000"
    with InlineRunner(config, RunSettings(workers=1, reconcile_s=3600.0)) as runner:
        runner.run_until_idle()
        before = open_snapshot(config.index_dir).session(other)
        whole = runner.worker.engine.counters.whole
        path = root / "20240101_120000.jsonl"
        with path.open("ab") as f:
            f.write(_line(_message("assistant", text("the zephyrquill cause"))))
        runner.notice(str(path))
        runner.run_until_idle()
        assert runner.worker.engine.counters.whole == whole + 1
        assert open_snapshot(config.index_dir).session(other) == before
    assert _recall(config, query="zephyrquill")["hits"][0]["sessionId"] == "goose:20240101_120000"


def test_an_imported_session_is_read_from_the_database_only(tmp_path: Path) -> None:
    config, root = _files(tmp_path)
    catch_up(config, processes=1)
    db = GooseDb(root / "sessions.db")  # Goose creates it and imports the files it finds
    db.session("20240101_120000", "Parser work")
    db.message("20240101_120000", "user", text(f"why does {WORD} fail?"))
    catch_up(config, processes=1)
    assert _paths(config) == [
        f"{root}/20240102_090000.jsonl#20240102_090000",  # not imported: still read
        f"{db.path}#20240101_120000",
    ]
    assert [h["sessionId"] for h in _recall(config, query=WORD)["hits"]] == [
        "goose:20240101_120000"
    ]


def test_an_import_while_watching_drops_the_file_copy(tmp_path: Path) -> None:
    config, root = _files(tmp_path)
    with InlineRunner(config, RunSettings(workers=1, reconcile_s=3600.0)) as runner:
        runner.run_until_idle()
        db = GooseDb(root / "sessions.db")
        db.session("20240101_120000", "Parser work")
        db.message("20240101_120000", "user", text(f"why does {WORD} fail?"))
        runner.notice(str(db.path) + "-wal")
        runner.run_until_idle()
        assert _paths(config) == [
            f"{root}/20240102_090000.jsonl#20240102_090000",
            f"{db.path}#20240101_120000",
        ]
        assert not open_snapshot(config.index_dir).manifest.skipped
