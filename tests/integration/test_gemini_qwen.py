"""Gemini CLI and Qwen Code sessions through the real commands, as issue 16 accepts them.

The sessions are the real writers' bytes (``tests/data/gemini``, ``tests/data/qwen``: a
``grep`` that matched nothing, an ``ls`` that failed, a final answer) with a planted word per
agent, plus a Gemini session that was rewound and a legacy one-object file. ``pipeline run
--once`` indexes them; ``pipeline status`` counts them per agent; ``query recall`` finds each
planted word at rank 1 with and without ``--agent``, and ``--outcome failed --kind shell``
lists the two ``ls`` calls (never the searches); ``query catalog`` shows both agents' heads;
a retracted turn is searchable only with ``--branches all``.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest

from store.agents import agent_names
from tests.helpers import run_module

ROOT = Path(__file__).resolve().parents[2]
DATA = ROOT / "tests" / "data"
PLANTED = {"gemini": "GEMPLANTQ7", "qwen": "QWENPLANTQ7"}
RETRACTED = "REWOUNDQ7"

pytestmark = pytest.mark.integration


def _run(config: Path, *argv: str) -> Any:
    return run_module(*argv, "--config", str(config))


def _lines(*values: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(v) + b"\n" for v in values)


def test_gemini_and_qwen_sessions_answer_every_command(tmp_path: Path) -> None:
    roots = {name: tmp_path / name for name in agent_names()}
    for root in roots.values():
        root.mkdir()
    gemini = roots["gemini"] / "work" / "chats"
    gemini.mkdir(parents=True)
    real = (DATA / "gemini" / "real-0.61.0-shell.jsonl").read_bytes()
    (gemini / "session-2026-12-02T09-50-0a78efbe.jsonl").write_bytes(
        real.replace(b"glimmerquartz", PLANTED["gemini"].encode())
    )
    header = {"sessionId": "rw-1", "projectHash": "a" * 64, "startTime": "2026-12-01T10:00:00Z",
              "lastUpdated": "2026-12-01T10:00:00Z", "kind": "main"}  # fmt: skip

    def message(mid: str, kind: str, text: str) -> dict[str, Any]:
        return {"id": mid, "timestamp": "2026-12-01T10:00:01Z", "type": kind, "content": text}

    (gemini / "session-2026-12-01T10-00-rw000001.jsonl").write_bytes(
        _lines(
            header,
            message("u1", "user", "plan the release"),
            message("m1", "gemini", f"draft mentioning {RETRACTED}"),
            {"$rewindTo": "m1"},
            message("m2", "gemini", "a better release plan"),
        )
    )
    legacy = {**header, "sessionId": "legacy-1",
              "messages": [message("l1", "user", "legacy question about LEGACYQ7")]}  # fmt: skip
    (gemini / "session-2025-08-01T10-00-legacy01.json").write_bytes(
        orjson.dumps(legacy, option=orjson.OPT_INDENT_2)
    )
    # the project's root, as the CLI's ProjectRegistry marks the folder it named
    (roots["gemini"] / "work" / ".project_root").write_text("/tmp/gx/gwork")
    # the CLI's devtools activity log beside the chats: a session's name, no session
    logs = roots["gemini"] / "work" / "logs"
    logs.mkdir()
    (logs / "session-2026-12-02T09-50-0a78efbe.jsonl").write_bytes(
        _lines({"type": "network", "payload": {"body": "LOGONLYQ7"}})
    )
    qwen = roots["qwen"] / "-tmp-gx-qwork" / "chats"
    qwen.mkdir(parents=True)
    real = (DATA / "qwen" / "real-0.24.4-shell.jsonl").read_bytes()
    (qwen / "6a63ecc6-6a3c-4a3a-bbc8-bd040a4055ad.jsonl").write_bytes(
        real.replace(b"glimmerquartz", PLANTED["qwen"].encode())
    )
    config = tmp_path / "config.toml"
    config.write_text(
        "[sources]\n"
        + "".join(f'{name} = "{root}"\n' for name, root in roots.items())
        + f'[memory]\nindexDir = "{tmp_path / "index"}"\n'
    )

    _run(config, "pipeline", "run", "--once")
    status = _run(config, "pipeline", "status", "--json")
    assert status["agents"] == {
        name: {"gemini": 3, "qwen": 1}.get(name, 0) for name in agent_names()
    }, status
    assert status["indexed"] == status["eligible"] == 4
    assert "missing_session_header" not in orjson.dumps(status).decode(), status
    rows = _run(config, "query", "sessions", "--scope", "global", "--agent", "gemini", "--json")
    cwds = {r["id"]: r["cwd"] for r in rows["sessions"]}
    assert cwds["gemini:rw-1"] == "/tmp/gx/gwork", rows  # from .project_root

    for agent, word in PLANTED.items():
        for scope in ((), ("--agent", agent)):
            found = _run(config, "query", "recall", word, "--scope", "global", "--json", *scope)
            top = found["hits"][0]
            assert top["sessionId"].startswith(f"{agent}:") and word in top["snippet"], found
        # and its hit expands from the file (its line and offset are the record's own)
        expanded = _run(config, "query", "call", orjson.dumps(top["follow"]).decode(), "--json")
        assert any(word in e["text"] for e in expanded["entries"]), expanded
    legacy_hit = _run(config, "query", "recall", "LEGACYQ7", "--scope", "global", "--json")
    assert legacy_hit["hits"][0]["sessionId"] == "gemini:legacy-1", legacy_hit
    expanded = _run(
        config, "query", "call", orjson.dumps(legacy_hit["hits"][0]["follow"]).decode(), "--json"
    )
    assert any("LEGACYQ7" in e["text"] for e in expanded["entries"]), expanded

    failed = _run(
        config, "query", "recall", "--scope", "global", "--outcome", "failed", "--kind", "shell",
        "--json",
    )  # fmt: skip
    assert sorted((h["sessionId"].split(":")[0], h["tool"]) for h in failed["hits"]) == [
        ("gemini", "run_shell_command"),
        ("qwen", "run_shell_command"),
    ], failed
    assert all("ls" in h["snippet"] or "nonexistent" in h["snippet"] for h in failed["hits"])
    for hit in failed["hits"]:  # a result of a rewritten turn expands too
        expanded = _run(config, "query", "call", orjson.dumps(hit["follow"]).decode(), "--json")
        assert any(e.get("outcome") == "failed" for e in expanded["entries"]), expanded

    # A rewound turn is off the active path, and still in the file's other branch
    active = _run(config, "query", "recall", RETRACTED, "--scope", "global", "--json")
    assert active["hits"] == [], active
    every = _run(
        config, "query", "recall", RETRACTED, "--scope", "global", "--branches", "all", "--json"
    )
    assert [h["sessionId"] for h in every["hits"]] == ["gemini:rw-1"], every

    for agent in PLANTED:
        catalog = _run(config, "query", "catalog", "--scope", "global", "--agent", agent, "--json")
        assert [a["agent"] for a in catalog["agents"]] == [agent], catalog
