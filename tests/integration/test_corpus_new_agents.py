"""The corpus generator's Copilot CLI and Aider sessions, indexed by the real pipeline: every
planted term is the first hit with and without ``agent``, every failed Copilot shell call the
manifest lists is found by ``outcome: failed`` + ``kind: shell`` (Aider writes no exit status:
its ``/run`` calls are shell calls without an outcome), and each agent's heads are in the
catalog."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from pipeline.catchup import catch_up
from query.transport import Backend
from tests.helpers import generated

pytestmark = pytest.mark.integration


def every_hit(engine: Backend, args: dict[str, Any]) -> list[dict[str, Any]]:
    page = engine.recall({**args, "pageSize": 50}, cwd="/")
    hits: list[dict[str, Any]] = []
    while True:
        assert "error" not in page, page
        hits += page["hits"]
        if not page.get("next"):
            return hits
        page = engine.call(page["next"], cwd="/")


def test_generated_copilot_and_aider_sessions_answer_every_planted_question(
    tmp_path: Path,
) -> None:
    manifest, config = generated(
        tmp_path, sessions=12, mean_kb=8, seed=3, agents=("copilot", "aider")
    )
    assert {s.agent for s in manifest.sessions} == {"copilot", "aider"}
    catch_up(config, processes=1)
    with Backend(config, server="off") as engine:
        assert {p.agent for p in manifest.planted} == {"copilot", "aider"}
        for planted in manifest.planted:
            for only in ({}, {"agent": planted.agent}):
                page = engine.recall({"query": planted.term, "scope": "global", **only}, cwd="/")
                assert page["hits"], (planted, only)
                top = page["hits"][0]
                assert top["sessionId"].startswith(f"{planted.agent}:"), (planted, top)
                assert top["kind"] == "entry" and top.get("role") == planted.role, (planted, top)
                assert top["entryId"] == planted.entry_id, (planted, top)

        shell_errors = [e for e in manifest.tool_errors if e.tool == "bash"]
        assert shell_errors and {e.agent for e in manifest.tool_errors} == {"copilot"}
        found = every_hit(engine, {"scope": "global", "outcome": "failed", "kind": "shell"})
        hits = {(h["sessionId"].split(":", 1)[1], h["entryId"]) for h in found}
        assert {(e.session_id, e.entry_id) for e in shell_errors} <= hits
        assert all(h["sessionId"].startswith("copilot:") for h in found)
        runs = every_hit(engine, {"scope": "global", "kind": "shell", "agent": "aider"})
        assert runs and {h["tool"] for h in runs} == {"run"}
        assert all(h.get("outcome") is None for h in runs)

        catalog = engine.catalog({"scope": "global"}, cwd="/")
        agents = {a["agent"]: a for a in catalog["agents"]}
        assert set(agents) == {"copilot", "aider"}
        heads = {h["ref"] for p in agents["copilot"]["providers"] for h in p["heads"]}
        assert {"copilot.bash", "copilot.view"} <= heads


def test_generated_cursor_transcripts_answer_every_planted_question(tmp_path: Path) -> None:
    manifest, config = generated(tmp_path, sessions=6, mean_kb=8, seed=5, agents=("cursor",))
    assert {s.agent for s in manifest.sessions} == {"cursor"}
    assert all(s.cwd == "" for s in manifest.sessions)  # the slug is not read back
    assert not manifest.tool_errors  # Cursor writes no tool result
    catch_up(config, processes=1)
    with Backend(config, server="off") as engine:
        assert manifest.planted
        for planted in manifest.planted:
            for only in ({}, {"agent": "cursor"}):
                page = engine.recall({"query": planted.term, "scope": "global", **only}, cwd="/")
                top = page["hits"][0]
                assert top["sessionId"].startswith("cursor:"), (planted, top)
                assert top.get("role") == planted.role and top["entryId"] == planted.entry_id
        shell = every_hit(engine, {"scope": "global", "kind": "shell", "agent": "cursor"})
        assert shell and {h["tool"] for h in shell} == {"Shell"}
        assert all(h.get("outcome") is None for h in shell)
        assert every_hit(engine, {"scope": "global", "outcome": "failed"}) == []
