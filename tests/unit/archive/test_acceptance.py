"""Issue 17's acceptance: a Claude Code session whose file is deleted after indexing is still
found by recall and expands exactly, through `pipeline run` (always-on) and `run --once`,
after a restart and after a rebuild, and every answer says it is archived."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson

from pipeline.catchup import catch_up
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from pipeline.status import collect_status
from query.engine import Engine
from query.transport import Backend
from store.config import Config
from store.reader import open_snapshot
from store.records import SessionState
from store.writer import StoreWriter
from tests.helpers import jsonl
from tests.unit.archive.kit import ClaudeRoot, call, claude_session, entry_hits

WORD = "ptarmiganite"


def _expanded(config: Config, hit: dict[str, Any]) -> dict[str, Any]:
    result = call(config, hit["follow"])
    assert "error" not in result, result
    return result


def _state(config: Config, path: Path) -> SessionState:
    found = open_snapshot(config.index_dir).session(str(path))
    assert found is not None
    return found


def _says_archived(config: Config, path: Path) -> None:
    hits = entry_hits(config, WORD)
    assert hits and all(h["archived"] is True for h in hits)
    with Engine(config) as engine:
        page = engine.recall({"query": WORD, "scope": "global"}, cwd="/")
        assert page["coverage"]["complete"] is True  # nothing is hidden: a note, not a reason
        assert "source_deleted" in page["coverage"]["notes"]
        assert page["coverage"]["archived"]["sessions"] == 1
        rows = engine.sessions({"scope": "global"}, cwd="/")["sessions"]
        [row] = [r for r in rows if r["file"] == str(path)]
        assert row["archived"] is True and Path(row["archive"]).is_file()  # its HEAD
    with Backend(config, server="off") as backend:
        catalog = backend.catalog({"scope": "global"}, cwd="/")
        assert catalog["total"] > 0  # the Bash calls of the archived session
        assert "source_deleted" in catalog["coverage"]["notes"]


def test_run_once_restart_and_rebuild(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", claude_session(WORD, turns=3))
    catch_up(config)
    before = {h["index"]: _expanded(config, h)["entries"] for h in entry_hits(config, WORD)}
    path.unlink()

    catch_up(config)
    _says_archived(config, path)
    after = {h["index"]: _expanded(config, h)["entries"] for h in entry_hits(config, WORD)}
    assert after == before  # exactly the entries it expanded to while the file was there
    archived = _state(config, path)
    assert archived.archived and archived.tier == "cold"
    status = collect_status(config).as_dict()
    assert status["archived"] == 1 and status["stale"] == 0
    assert status["archive"]["bytes"] > 0 and status["archive"]["archivedSessions"] == 1

    catch_up(config)  # a restart: nothing to do, the same generation
    assert _state(config, path) == archived

    # walk (the client's guest-side reader) visits every entry of the archived session, whole
    from query.client import Memory

    memory = Memory(config, cwd="/", server="off")
    texts: list[str] = []
    walked = memory.walk({"session": str(path), "maxChars": 256}, lambda e: texts.append(e.text))
    assert walked.error is None and walked.visited == archived.view("active").entry_count
    assert any(WORD in t for t in texts)

    StoreWriter(config.index_dir).wipe()  # `pipeline rebuild`
    catch_up(config)
    assert _state(config, path) == archived  # the very same records, built from the archive
    _says_archived(config, path)
    again = {h["index"]: _expanded(config, h)["entries"] for h in entry_hits(config, WORD)}
    assert again == before


def test_always_on_append_delete_restart_rebuild(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    lines = claude_session(WORD, turns=3)
    path = root.session("s1", lines[:4])
    settings = RunSettings(workers=1)
    with InlineRunner(config, settings) as runner:
        runner.run_until_idle()
        # appends go through the append path: the archive keeps one segment each
        for line in lines[4:]:
            with path.open("ab") as f:
                f.write(orjson.dumps(line) + b"\n")
            runner.notice(str(path))
            runner.run_until_idle()
        assert _state(config, path).archive == "kept"
        before = {h["index"]: _expanded(config, h)["entries"] for h in entry_hits(config, WORD)}
        assert len(before) >= 6
        path.unlink()
        runner.notice(str(path))
        runner.run_until_idle()
        _says_archived(config, path)
        live = _state(config, path)
    assert {h["index"]: _expanded(config, h)["entries"] for h in entry_hits(config, WORD)} == before
    with InlineRunner(config, settings) as runner:  # a restart
        runner.run_until_idle()
        assert _state(config, path) == live
        _says_archived(config, path)
    StoreWriter(config.index_dir).wipe()
    catch_up(config)
    assert _state(config, path) == live  # the rebuild gives what the live pipeline had
    assert {h["index"]: _expanded(config, h)["entries"] for h in entry_hits(config, WORD)} == before


def test_a_new_policy_rebuilds_archived_sessions_from_the_archive(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", claude_session(WORD))
    catch_up(config)
    path.unlink()
    catch_up(config)
    # another policy: every record is built again; the archived session from its copy
    changed = root.write_config(maxEntryChars=500)
    with InlineRunner(changed, RunSettings(workers=1)) as runner:
        runner.run_until_idle()
    state = _state(changed, path)
    assert state.archived
    assert entry_hits(changed, WORD)


def test_a_source_that_comes_back_is_indexed_from_the_file_again(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    lines = claude_session(WORD)
    path = root.session("s1", lines)
    catch_up(config)
    path.unlink()
    catch_up(config)
    assert _state(config, path).archived
    path.write_bytes(jsonl(lines))
    catch_up(config)
    assert _state(config, path).archive == "kept"
    assert all("archived" not in h for h in entry_hits(config, WORD))


def test_keep_off_drops_a_deleted_session_as_before(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config("[archive]\nkeep = false\n")
    path = root.session("s1", claude_session(WORD))
    catch_up(config)
    assert not (config.archive_dir).exists()
    assert _state(config, path).archive == ""
    path.unlink()
    catch_up(config)
    assert open_snapshot(config.index_dir).session(str(path)) is None
    assert entry_hits(config, WORD) == []


def test_files_and_folders_are_private(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    root.session("s1", claude_session(WORD))
    old = os.umask(0o022)
    try:
        catch_up(config)
    finally:
        os.umask(old)
    for dirpath, _dirs, files in os.walk(config.archive_dir):
        assert os.stat(dirpath).st_mode & 0o777 == 0o700, dirpath
        for name in files:
            assert os.stat(os.path.join(dirpath, name)).st_mode & 0o777 == 0o600, name


def test_doctor_says_what_the_archive_keeps(tmp_path: Path) -> None:
    from pipeline.doctor import diagnose

    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", claude_session(WORD))
    catch_up(config)
    path.unlink()
    catch_up(config)
    [check] = [c for c in diagnose(config).checks if c.name == "archive"]
    assert check.level == "ok" and "1 read from the archive" in check.message
    off = root.write_config("[archive]\nkeep = false\n")
    [check] = [c for c in diagnose(off).checks if c.name == "archive"]
    assert check.level == "warn" and "keep = false" in check.message
