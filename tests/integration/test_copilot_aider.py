"""Copilot CLI and Aider sessions, as their real writers wrote them (tests/data), through the
commands a user runs: `pipeline run --once`, `pipeline status`, `query recall` with and
without `--agent`, `--outcome failed --kind shell`, and `query catalog`."""

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


def test_copilot_and_aider_sessions_are_found_by_every_command(tmp_path: Path) -> None:
    # Given Copilot's session-state folder and a projects folder holding an Aider project
    roots = {name: tmp_path / name for name in agent_names()}
    shutil.copytree(DATA / "copilot", roots["copilot"])
    shutil.copytree(DATA / "aider", roots["aider"] / "src")
    config = tmp_path / "config.toml"
    config.write_text(
        "[sources]\n"
        + "".join(f'{name} = "{root}"\n' for name, root in roots.items())
        + f'[memory]\nindexDir = "{tmp_path / "index"}"\n'
    )
    cfg = ("--config", str(config))

    _run("pipeline", "run", "--once", *cfg)
    status = _run("pipeline", "status", "--json", *cfg)
    assert status["agents"] == {**{n: 0 for n in agent_names()}, "copilot": 4, "aider": 1}
    assert status["indexed"] == status["eligible"] == 5 and status["incomplete"] == 0

    # A planted word of each agent is the first hit, with and without --agent
    for agent, word in (("copilot", "FINALSHELLQ7"), ("aider", "FINALAIDERQ7")):
        for only in ((), ("--agent", agent)):
            found = _run("query", "recall", word, "--scope", "global", "--json", *only, *cfg)
            assert found["hits"][0]["sessionId"].startswith(f"{agent}:"), found
            assert word in found["hits"][0]["snippet"]

    # Copilot's failed shell call is typed (its exit code); Aider writes no exit status, so
    # its /run calls are shell calls without an outcome
    failed = _run(
        "query", "recall", "--scope", "global", "--outcome", "failed", "--kind", "shell",
        "--json", *cfg,
    )  # fmt: skip
    assert [(h["sessionId"].split(":")[0], h["tool"]) for h in failed["hits"]] == [
        ("copilot", "bash")
    ], failed
    runs = _run("query", "recall", "--scope", "global", "--kind", "shell", "--agent", "aider",
                "--json", *cfg)  # fmt: skip
    assert [(h["tool"], h.get("outcome")) for h in runs["hits"]] == [("run", None)] * 2

    # The catalog shows each agent's heads: its own tools, and MCP tools under their server
    heads = {}
    for agent in ("copilot", "aider"):
        catalog = _run("query", "catalog", "--scope", "global", "--agent", agent, "--json", *cfg)
        (listed,) = catalog["agents"]
        heads[agent] = {h["ref"] for p in listed["providers"] for h in p["heads"]}
    assert {"copilot.bash", "copilot.view", "copilot.task", "needle.lookup"} <= heads["copilot"]
    assert heads["aider"] == {"aider.run"}
