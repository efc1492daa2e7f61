"""A new agent is its folder plus one registry line: nothing in pipeline/ or query/ changes.

The test copies the four packages, adds the test-only "toy" adapter
(``tests/data/toy_adapter``) as ``stages/toy/`` and one line to ``store/agents.py``, checks
that the copy differs from the project in exactly that, and runs the copy's own commands:
``pipeline run --once`` and ``pipeline status`` list toy sessions, ``query recall`` finds a
planted word at rank 1 with and without ``--agent toy``, a failed toy shell command is found
by ``--outcome failed --kind shell``, and ``query sessions`` / ``query catalog`` take
``--agent toy``.
"""

from __future__ import annotations

import filecmp
import shutil
import subprocess
from pathlib import Path
from typing import Any

import orjson
import pytest

from store.agents import agent_names
from tests.helpers import run_module

ROOT = Path(__file__).resolve().parents[2]
PACKAGES = ("pipeline", "query", "stages", "store")
TOY = ROOT / "tests" / "data" / "toy_adapter"
LINE = '    "toy",\n'
WORD = "TOYPLANTEDQ7"

pytestmark = pytest.mark.integration


def _copy(target: Path) -> None:
    ignore = shutil.ignore_patterns("__pycache__", "*.pyc")
    for package in PACKAGES:
        shutil.copytree(ROOT / package, target / package, ignore=ignore)
    shutil.copytree(TOY, target / "stages" / "toy", ignore=ignore)
    registry = target / "store" / "agents.py"
    text = registry.read_text()
    anchor = '    "omp",\n'
    assert anchor in text
    registry.write_text(text.replace(anchor, anchor + LINE, 1))


def _differences(a: Path, b: Path, where: str = "") -> list[str]:
    """Files that differ, or exist on one side only, between two trees (caches left out)."""
    cmp = filecmp.dircmp(a, b, ignore=["__pycache__"])
    out = [f"{where}{n}" for n in cmp.diff_files + cmp.left_only + cmp.right_only]
    for sub in cmp.common_dirs:
        out += _differences(a / sub, b / sub, f"{where}{sub}/")
    return out


def _run(src: Path, *argv: str) -> Any:
    return run_module(*argv, src=src, timeout=180)


def test_an_adapter_is_its_folder_and_one_registry_line(tmp_path: Path) -> None:
    src = tmp_path / "src"
    _copy(src)
    # The copy is the project plus the toy folder and one changed file
    changed = [d for p in PACKAGES for d in _differences(ROOT / p, src / p, f"{p}/")]
    assert sorted(changed) == ["stages/toy", "store/agents.py"]
    diff = subprocess.run(
        ["diff", str(ROOT / "store" / "agents.py"), str(src / "store" / "agents.py")],
        capture_output=True, text=True,
    )  # fmt: skip
    assert [x for x in diff.stdout.splitlines() if x[:1] in "<>"] == [f"> {LINE.rstrip()}"]

    # Given a toy session, and every other agent's root empty
    roots = {name: tmp_path / name for name in (*agent_names(), "toy")}
    for root in roots.values():
        root.mkdir()
    chats = roots["toy"] / "work-proj"
    chats.mkdir()
    lines = [
        {"cwd": "/work/proj", "session": "toy-1"},
        {"id": "m1", "speaker": "human", "text": f"why does {WORD} break the build"},
        {"id": "m2", "run": "make test", "exit": 2, "out": "1 failed"},
        {"id": "m3", "speaker": "bot", "text": "the build is fixed"},
    ]
    (chats / "one.chat").write_bytes(b"".join(orjson.dumps(x) + b"\n" for x in lines))
    (chats / "notes.txt").write_text(f"not a session {WORD}\n")
    config = tmp_path / "config.toml"
    config.write_text(
        "[sources]\n"
        + "".join(f'{name} = "{root}"\n' for name, root in roots.items())
        + f'[memory]\nindexDir = "{tmp_path / "index"}"\n'
    )
    cfg = ("--config", str(config))

    # When the copy's pipeline indexes it
    _run(src, "pipeline", "run", "--once", *cfg)
    status = _run(src, "pipeline", "status", "--json", *cfg)
    # Then status lists every agent, toy with its one session
    assert status["agents"] == {**{name: 0 for name in agent_names()}, "toy": 1}
    assert status["indexed"] == status["eligible"] == 1

    # And every query command reads it, with and without --agent toy
    for agent in ((), ("--agent", "toy")):
        found = _run(src, "query", "recall", WORD, "--scope", "global", "--json", *agent, *cfg)
        assert found["hits"][0]["sessionId"] == "toy:toy-1", found
        assert WORD in found["hits"][0]["snippet"]
    failed = _run(
        src, "query", "recall", "--scope", "global", "--outcome", "failed", "--kind", "shell",
        "--agent", "toy", "--json", *cfg,
    )  # fmt: skip
    assert [(h["sessionId"], h["tool"], h["outcome"]) for h in failed["hits"]] == [
        ("toy:toy-1", "sh", "failed")
    ], failed
    sessions = _run(src, "query", "sessions", "--scope", "global", "--agent", "toy", "--json", *cfg)
    assert [(s["id"], s["agent"]) for s in sessions["sessions"]] == [("toy:toy-1", "toy")]
    catalog = _run(src, "query", "catalog", "--scope", "global", "--agent", "toy", "--json", *cfg)
    assert [a["agent"] for a in catalog["agents"]] == ["toy"]
