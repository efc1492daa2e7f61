"""An index another record format or derivation wrote is derived again by `pipeline run`.

The index is derived data: after an upgrade that changes ``SCHEMA_VERSION`` (here patched the
way a new build would have it) or the derivation key, `pipeline run --once` (and the always-on
supervisor, through the same catch-up) re-derives it from the session files and the archive,
with nothing typed by the user: archived sessions survive, forgotten ones stay forgotten, and
the new generation is published once. While the old one cannot be read, queries and `pipeline
status` name the state (``index_upgrading`` / ``index_outdated``), never a traceback.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import structlog

import store.checkpoints
import store.codec
from pipeline.catchup import catch_up
from pipeline.cli import main
from pipeline.engine import policy_of
from pipeline.forget import Selection, forget
from pipeline.status import collect_status, render_status
from pipeline.upgrade import DERIVATION_CHANGED, FORMAT_CHANGED, JOURNAL_CHANGED, detect
from query.engine import Engine
from store.errors import INDEX_OUTDATED, INDEX_UPGRADING, IndexOutdated
from store.exits import EXIT_NO_INDEX, EXIT_OK
from store.reader import open_snapshot
from store.records import SCHEMA_VERSION
from store.upgrading import read_mark, write_mark
from tests.unit.archive.kit import ClaudeRoot, claude_session, entry_hits

LIVE, GONE, FORGOTTEN = "numbatlive", "zebraarchived", "quokkaforgotten"
S2 = "5e55107a-0000-4000-8000-0000000c0de5"
S3 = "5e55107a-0000-4000-8000-0000000f0f0f"


@pytest.fixture(autouse=True)
def _logging_kept() -> Iterator[None]:
    # `pipeline` main points structlog at capsys's stderr, closed after the test
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def _indexed(tmp_path: Path) -> tuple[ClaudeRoot, Path]:
    """A live session, an archived one (source deleted) and a forgotten one (source kept)."""
    root = ClaudeRoot(tmp_path)
    config = root.write_config(hotSessions=1)
    root.session("live", claude_session(LIVE), mtime_s=2_000)
    gone = root.session("gone", claude_session(GONE, session=S2), mtime_s=1_000)
    forgotten = root.session("forgotten", claude_session(FORGOTTEN, session=S3), mtime_s=1_500)
    catch_up(config)
    gone.unlink()
    catch_up(config)
    forget(config, Selection(sessions=(str(forgotten),)))
    assert entry_hits(config, GONE) and not entry_hits(config, FORGOTTEN)
    return root, forgotten


def _new_format(monkeypatch: pytest.MonkeyPatch) -> None:
    """This build writes and reads records of the next format, as after an upgrade."""
    monkeypatch.setattr(store.codec, "SCHEMA_VERSION", SCHEMA_VERSION + 1)


def _paths(config_index: Path) -> set[str]:
    return {Path(s.path).name for s in open_snapshot(config_index).manifest.sessions}


def test_run_once_derives_an_index_of_another_format_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an index with a live, an archived and a forgotten session, and a new build
    root, forgotten = _indexed(tmp_path)
    config = root.write_config(hotSessions=1)
    before = open_snapshot(config.index_dir).generation
    _new_format(monkeypatch)
    assert detect(config.index_dir, policy_of(config).fingerprint()).reason == FORMAT_CHANGED
    # When `pipeline run --once` runs, with nothing else typed
    report = catch_up(config)
    # Then it derived everything again in one generation, readable by this build
    assert report.upgrade is not None and report.upgrade.reason == FORMAT_CHANGED
    assert report.generations == [before + 1]
    assert _paths(config.index_dir) == {"live.jsonl", "gone.jsonl"}
    assert entry_hits(config, LIVE)
    # the archived session survives (built from its chain), the forgotten one stays out
    assert entry_hits(config, GONE)
    assert forgotten.exists() and not entry_hits(config, FORGOTTEN)
    # and the next run finds nothing to upgrade: the mark is gone, the index is this build's
    assert read_mark(config.index_dir) is None
    assert detect(config.index_dir, policy_of(config).fingerprint()) is None
    again = catch_up(config)
    assert again.upgrade is None and again.indexed == 0


def test_queries_and_status_name_the_state_while_the_old_index_is_unreadable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    root, _ = _indexed(tmp_path)
    config = root.write_config(hotSessions=1)
    _new_format(monkeypatch)
    # When nothing is deriving it: index_outdated, saying what to run
    with Engine(config) as engine, pytest.raises(IndexOutdated) as caught:
        engine.recall({"query": LIVE, "scope": "global"}, cwd="/")
    assert caught.value.code == INDEX_OUTDATED and "pipeline run --once" in str(caught.value)
    status = collect_status(config)
    assert status.upgrade is not None and status.upgrade["state"] == "needed"
    assert status.upgrade["reason"] == FORMAT_CHANGED and not status.upgrade["readable"]
    assert "pipeline run --once" in render_status(status)
    from pipeline.doctor import diagnose

    [index] = [c for c in diagnose(config).checks if c.name == "index"]
    assert index.level == "fail" and "derive it again" in index.message
    # the CLI: a named error body and exit 4, no traceback
    from query.cli import main as query_main

    code = query_main(["recall", LIVE, "--config", str(root.config_path), "--json", "--no-server"])
    out, err = capsys.readouterr()
    assert code == EXIT_NO_INDEX
    assert f'"code":"{INDEX_OUTDATED}"' in out and "Traceback" not in err
    # When a live pipeline has marked it (this process stands in for it): index_upgrading
    write_mark(config.index_dir, FORMAT_CHANGED, "test")
    with Engine(config) as engine, pytest.raises(IndexOutdated) as caught:
        engine.recall({"query": LIVE, "scope": "global"}, cwd="/")
    assert caught.value.code == INDEX_UPGRADING
    status = collect_status(config)
    assert status.upgrade is not None and status.upgrade["state"] == "upgrading"
    assert status.upgrade["pid"] == os.getpid()
    assert "being derived again" in render_status(status)
    # a mark whose process is gone claims nothing
    write_mark(config.index_dir, FORMAT_CHANGED, "test")
    mark = (config.index_dir / "run" / "upgrade.json").read_text()
    (config.index_dir / "run" / "upgrade.json").write_text(
        mark.replace(str(os.getpid()), str(2**22 + 12345))
    )
    with Engine(config) as engine, pytest.raises(IndexOutdated) as caught:
        engine.recall({"query": LIVE, "scope": "global"}, cwd="/")
    assert caught.value.code == INDEX_OUTDATED
    # Then `pipeline run --once` (the CLI, as a user runs it) derives it and queries answer
    assert main(["run", "--once", "--config", str(root.config_path), "-q"]) == EXIT_OK
    assert entry_hits(config, LIVE) and entry_hits(config, GONE)
    assert collect_status(config).upgrade is None


def test_a_derivation_change_is_published_whole_and_keeps_archive_and_tombstones(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Given an index built under another derivation (the same format: still readable)
    root, forgotten = _indexed(tmp_path)
    config = root.write_config(hotSessions=1, maxSyncSessions=1)
    before = open_snapshot(config.index_dir).generation
    monkeypatch.setattr("stages.policy.DERIVATION", 10_000)
    found = detect(config.index_dir, policy_of(config).fingerprint())
    assert found is not None and found.reason == DERIVATION_CHANGED
    # When run --once runs, over a maxSync budget of one session per batch
    report = catch_up(config)
    # Then one generation holds every session built again: no partial publish in between
    assert report.generations == [before + 1]
    manifest = open_snapshot(config.index_dir).manifest
    assert manifest.policy == policy_of(config).fingerprint()
    assert {Path(s.path).name for s in manifest.sessions} == {"live.jsonl", "gone.jsonl"}
    assert manifest.reasons == () or "max_sync_sessions" not in manifest.reasons
    assert entry_hits(config, GONE) and not entry_hits(config, FORGOTTEN)


def test_the_always_on_supervisor_derives_it_whole_before_any_child_starts(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from pipeline.settings import RunSettings
    from pipeline.supervisor import ProcessSupervisor

    root, _ = _indexed(tmp_path)
    config = root.write_config(hotSessions=1)
    before = open_snapshot(config.index_dir).generation
    _new_format(monkeypatch)
    supervisor = ProcessSupervisor(config, RunSettings(workers=1), log_json=True, log_level=30)
    # the step `run()` takes after its preflight, before it starts the watcher and workers
    supervisor._preflight()
    supervisor._upgrade()
    assert not any(c.process for c in supervisor.children.values())
    assert open_snapshot(config.index_dir).generation == before + 1
    assert _paths(config.index_dir) == {"live.jsonl", "gone.jsonl"}
    assert read_mark(config.index_dir) is None
    supervisor._upgrade()  # nothing to do the second time
    assert open_snapshot(config.index_dir).generation == before + 1


def test_a_journal_and_checkpoints_of_another_format_are_dropped_not_fatal(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _indexed(tmp_path)
    config = root.write_config(hotSessions=1)
    monkeypatch.setattr(store.checkpoints, "_VERSION", 2)
    found = detect(config.index_dir, policy_of(config).fingerprint())
    assert found is not None and found.reason == JOURNAL_CHANGED and found.reset_journal
    report = catch_up(config)
    assert report.upgrade is not None and report.upgrade.reason == JOURNAL_CHANGED
    assert _paths(config.index_dir) == {"live.jsonl", "gone.jsonl"}
    assert detect(config.index_dir, policy_of(config).fingerprint()) is None


def test_an_upgrade_that_stopped_halfway_is_started_again(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    root, _ = _indexed(tmp_path)
    config = root.write_config(hotSessions=1)
    _new_format(monkeypatch)

    def dies(*args: object, **kwargs: object) -> None:
        raise KeyboardInterrupt

    # When the first try is interrupted before it publishes
    monkeypatch.setattr("pipeline.publisher.Publisher.finish", dies)
    with pytest.raises(KeyboardInterrupt):
        catch_up(config)
    monkeypatch.undo()
    _new_format(monkeypatch)
    # Then nothing half-done was published, and the next run derives it whole
    with Engine(config) as engine, pytest.raises(IndexOutdated):
        engine.recall({"query": LIVE, "scope": "global"}, cwd="/")
    report = catch_up(replace(config))
    assert report.upgrade is not None
    assert _paths(config.index_dir) == {"live.jsonl", "gone.jsonl"}
    assert entry_hits(config, GONE)
