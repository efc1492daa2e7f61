"""Cursor agent transcripts (tests/data/cursor, built from third-party evidence: no Cursor
writer runs here) through the commands a user runs: `pipeline run --once`, `pipeline status`,
`query recall` with and without `--agent`, `--kind shell`, `--outcome failed`, and `query
catalog`."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import pytest

from store.agents import agent_names
from tests.helpers import run_module

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"

pytestmark = pytest.mark.integration


def _run(*argv: str) -> Any:
    return run_module(*argv, timeout=180)


def test_cursor_transcripts_are_found_by_every_command(tmp_path: Path) -> None:
    # Given Cursor's projects folder: a session, its subagent, and a flat-layout session
    roots = {name: tmp_path / name for name in agent_names()}
    shutil.copytree(DATA / "cursor", roots["cursor"])
    config = tmp_path / "config.toml"
    config.write_text(
        "[sources]\n"
        + "".join(f'{name} = "{root}"\n' for name, root in roots.items())
        + f'[memory]\nindexDir = "{tmp_path / "index"}"\n'
    )
    cfg = ("--config", str(config))

    _run("pipeline", "run", "--once", *cfg)
    status = _run("pipeline", "status", "--json", *cfg)
    assert status["agents"] == {**{n: 0 for n in agent_names()}, "cursor": 3}
    assert status["indexed"] == status["eligible"] == 3 and status["incomplete"] == 0

    # A planted word is the first hit, with and without --agent
    for word in ("FINALCURSORQ7", "FLATCURSORQ7"):
        for only in ((), ("--agent", "cursor")):
            found = _run("query", "recall", word, "--scope", "global", "--json", *only, *cfg)
            assert found["hits"][0]["sessionId"].startswith("cursor:"), found
            assert word in found["hits"][0]["snippet"]

    # --kind shell finds both Shell calls; Cursor writes no result, so none has an outcome
    shell = _run("query", "recall", "--scope", "global", "--kind", "shell", "--agent", "cursor",
                 "--json", *cfg)  # fmt: skip
    assert sorted((h["tool"], h.get("outcome")) for h in shell["hits"]) == [("Shell", None)] * 2
    failed = _run("query", "recall", "--scope", "global", "--outcome", "failed", "--agent",
                  "cursor", "--json", *cfg)  # fmt: skip
    assert failed["hits"] == []

    catalog = _run("query", "catalog", "--scope", "global", "--agent", "cursor", "--json", *cfg)
    (listed,) = catalog["agents"]
    heads = {h["ref"] for p in listed["providers"] for h in p["heads"]}
    assert {"cursor.Shell", "cursor.Read", "cursor.StrReplace", "cursor.ReadFile"} <= heads
