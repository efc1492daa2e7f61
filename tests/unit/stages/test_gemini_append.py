"""Appends to Gemini CLI and Qwen Code sessions: each new line is indexed in memory as a delta
(``stages.rederive``), and base + deltas equal a whole build, rewrites and rewinds included.

A Gemini model turn is written again under its id when its tool calls complete; the delta
then replaces the turn's stored entry instead of rebuilding the session. A rewind retracts
turns already stored: that change lies behind the appended line, so the session may be built
whole there, and the result must still equal a whole build.
"""

from __future__ import annotations

from pathlib import Path

import orjson

from tests.unit.stages.test_append import Grower
from tests.unit.stages.test_gemini import HEADER, model, shell, user

DATA = Path(__file__).parents[2] / "data"
GEMINI = DATA / "gemini" / "real-0.61.0-shell.jsonl"
QWEN = DATA / "qwen" / "real-0.24.4-shell.jsonl"


def line_cuts(data: bytes, start: int = 1) -> list[int]:
    offsets = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    return offsets[start:]


def test_the_real_sessions_grow_line_by_line_by_deltas(tmp_path: Path) -> None:
    for n, (agent, path, where) in enumerate(
        [
            ("gemini", GEMINI, "/s/proj/chats/session-grow.jsonl"),
            ("qwen", QWEN, "/s/-work/chats/grow.jsonl"),
        ]
    ):
        data = path.read_bytes()
        grower = Grower(tmp_path / f"index-{n}", where, agent)
        cuts = line_cuts(data)
        hot, deltas, fast = grower.grow(data, cuts)
        # Then every appended line took the delta path, a rewritten turn replacing its entry
        assert fast == len(cuts) - 1, agent
        grower.check(data, hot, deltas)


def test_a_turn_rewritten_with_its_tool_calls_replaces_its_entry(tmp_path: Path) -> None:
    done = shell("c1", "ls", "success", "Output: a\nProcess Group PGID: 1")
    lines = [HEADER, user("u1", "list"), model("m1", "looking"), model("m1", "looking", [done])]
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    grower = Grower(tmp_path / "index", "/s/proj/chats/session-up.jsonl", "gemini")
    cuts = line_cuts(data)
    hot, deltas, fast = grower.grow(data, cuts)
    assert fast == len(cuts) - 1
    assert any(v.replaces for d in deltas for v in d.shard.views)
    grower.check(data, hot, deltas)


def test_a_rewind_appended_later_equals_a_whole_build(tmp_path: Path) -> None:
    lines = [
        HEADER,
        user("u1", "keep"),
        model("m1", "kept"),
        user("u2", "retract me"),
        model("m2", calls=[shell("c1", "grep x f", "success", "Output: (empty)\nExit Code: 1")]),
        {"$rewindTo": "u2"},
        user("u3", "again"),
        model("m3", "answer"),
    ]
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    grower = Grower(tmp_path / "index", "/s/proj/chats/session-rw.jsonl", "gemini")
    hot, deltas, _ = grower.grow(data, line_cuts(data))
    grower.check(data, hot, deltas)
