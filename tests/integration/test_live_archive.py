"""Acceptance through the real `pipeline run`: a Claude Code session whose file is deleted
while the pipeline runs stays findable from the archive, across a SIGTERM and a restart; a
`pipeline forget` while it runs takes it out for good."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from store.errors import SnapshotMissing
from store.reader import open_snapshot
from tests.doubles import LivePipeline, wait_for
from tests.unit.archive.grep import files_holding
from tests.unit.archive.kit import ClaudeRoot, claude_session, entry_hits

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


def test_deleted_while_running_then_restart_then_forget(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    path = root.session("s1", claude_session(WORD))
    live = LivePipeline(root.config_path, "--processes", "1").start()
    try:
        live.wait_ready(config.index_dir)
        wait_for(lambda: _found(config), timeout=60, what="the session indexed")
        path.unlink()
        wait_for(lambda: _archived(config, path), timeout=60, what="the session archived")
        hits = entry_hits(config, WORD)
        assert hits and all(h["archived"] for h in hits)
        assert live.stop() == 0
        live = LivePipeline(root.config_path, "--processes", "1").start()
        live.wait_ready(config.index_dir)
        assert _archived(config, path)
        assert all(h["archived"] for h in entry_hits(config, WORD))
        done = subprocess.run(
            [sys.executable, "-m", "pipeline", "forget", str(path), "--config",
             str(root.config_path), "--wait", "60"],
            capture_output=True, text=True, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout + done.stderr
        assert "the running pipeline" in done.stdout
        assert entry_hits(config, WORD) == []
    finally:
        live.stop()
    assert files_holding(config.archive_dir, WORD) == []
