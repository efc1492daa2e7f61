"""Acceptance through the real `pipeline run`: a Claude Code session whose file is deleted
while the pipeline runs stays findable from the archive and expands exactly as it did, across
a SIGTERM and a restart and the real `pipeline rebuild`; a `pipeline forget` while it runs
takes it out for good: after the collection of old generations, no byte of it is left."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest

from pipeline.settings import RunSettings
from store.errors import SnapshotMissing
from store.reader import open_snapshot
from store.writer import StoreWriter
from tests.doubles import LivePipeline, wait_for
from tests.unit.archive.grep import files_holding
from tests.unit.archive.kit import ClaudeRoot, call, claude_session, entry_hits, recall

pytestmark = pytest.mark.integration

WORD = "ocelotrine"


def _found(config) -> bool:
    try:
        return bool(entry_hits(config, WORD))
    except SnapshotMissing:
        return False


def _archived(config, path: Path) -> bool:
    try:
        state = open_snapshot(config.index_dir).session(str(path))
    except Exception:
        return False
    return state is not None and state.archived


def _expansions(config) -> dict[int, object]:
    """Every entry hit's expansion, by entry index (what "expands exactly" compares)."""
    out: dict[int, object] = {}
    for hit in entry_hits(config, WORD):
        got = call(config, hit["follow"])
        assert "error" not in got, got
        out[hit["index"]] = got["entries"]
    return out


def _cli(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", *argv], capture_output=True, text=True,
                          check=False)  # fmt: skip


def test_deleted_while_running_then_restart_rebuild_then_forget(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", claude_session(WORD))
    cfg = ("--config", str(root.config_path))
    live = LivePipeline(root.config_path, "--processes", "1").start()
    try:
        live.wait_ready(config.index_dir)
        wait_for(lambda: _found(config), timeout=60, what="the session indexed")
        before = _expansions(config)
        assert before
        path.unlink()
        wait_for(lambda: _archived(config, path), timeout=60, what="the session archived")
        hits = entry_hits(config, WORD)
        assert hits and all(h["archived"] for h in hits)
        assert _expansions(config) == before  # exactly what it expanded to from the file
        assert live.stop() == 0
        live = LivePipeline(root.config_path, "--processes", "1").start()
        live.wait_ready(config.index_dir)
        assert _archived(config, path)
        assert all(h["archived"] for h in entry_hits(config, WORD))
        assert _expansions(config) == before
        assert live.stop() == 0

        rebuilt = _cli("pipeline", "rebuild", *cfg)  # the real command, pipeline stopped
        assert rebuilt.returncode == 0, rebuilt.stdout + rebuilt.stderr
        assert _archived(config, path)
        assert all(h["archived"] for h in entry_hits(config, WORD))
        assert _expansions(config) == before
        page = recall(config, WORD)
        assert "source_deleted" in page["coverage"]["notes"]

        live = LivePipeline(root.config_path, "--processes", "1").start()
        live.wait_ready(config.index_dir)
        assert files_holding(config.index_dir, WORD)  # the grep below can see the word
        done = _cli("pipeline", "forget", str(path), *cfg, "--wait", "60")
        assert done.returncode == 0, done.stdout + done.stderr
        assert "the running pipeline" in done.stdout
        assert entry_hits(config, WORD) == []
    finally:
        live.stop()
    assert files_holding(config.archive_dir, WORD) == []
    # Old generations still name the session's records until their grace period is over
    # (a reader may be on one); past it, the collection leaves no byte of it anywhere.
    StoreWriter(config.index_dir).collect_garbage(
        keep_generations=1, grace_seconds=RunSettings().gc_grace_s,
        now=time.time() + RunSettings().gc_grace_s + 1,
    )  # fmt: skip
    assert files_holding(config.index_dir, WORD) == []
