"""A hot session grown by delta records answers exactly as its clean rebuild does."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from pipeline.catchup import catch_up
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from query.engine import Engine
from store.codec import decode
from store.layout import IndexLayout
from store.reader import open_snapshot
from store.records import HotShard
from tests.doubles import FakeClock
from tests.helpers import PiRoot, assistant, claude_line, elsewhere, header, jsonl, user

T0 = 1_700_000_000_000
SETTINGS = RunSettings(workers=1, reconcile_s=3600.0)


def line(i: int, parent: str | None) -> dict[str, Any]:
    if i % 2:
        return assistant(f"e{i}", parent, f"reply {i} shared word{i % 3}", T0 + i)
    return user(f"e{i}", parent, f"question {i} shared word{i % 4} " + "pad " * i, T0 + i)


def test_base_plus_deltas_answers_like_a_clean_build(tmp_path: Path) -> None:
    pi = PiRoot(tmp_path)
    config = pi.write_config(hotSessions=2)
    path = pi.session(
        "a", [header("a", "/work/proj"), *(line(i, f"e{i - 1}" if i else None) for i in range(4))]
    )
    pi.session("b", [header("b", "/work/proj"), user("u", None, "shared other", T0)], mtime_s=10)
    with InlineRunner(config, SETTINGS, clock=FakeClock()) as runner:
        runner.run_until_idle()
        for i in range(4, 11):
            with path.open("ab") as f:
                f.write(jsonl([line(i, f"e{i - 1}")]))
            runner.notice(str(path))
            runner.run_until_idle()
    state = open_snapshot(config.index_dir).session(str(path))
    assert state is not None and len(state.index_deltas) >= 2
    clean = elsewhere(config, tmp_path / "clean")
    catch_up(clean)
    assert not open_snapshot(clean.index_dir).session(str(path)).index_deltas  # type: ignore[union-attr]
    requests: list[tuple[str, dict[str, Any]]] = [
        ("recall", {"query": "shared word1", "scope": "project"}),
        ("recall", {"query": "pad question", "scope": "project", "queryMatch": "all"}),
        ("recall", {"query": "reply 9", "scope": "project", "queryMode": "phrase"}),
        ("recall", {"query": "word2", "scope": f"session:{path}"}),
        ("recall", {"scope": "project", "role": "assistant", "pageSize": 50}),
        ("expand", {"session": str(path), "entryRange": {"first": 2, "last": 9}}),
        ("sessions", {"scope": "project"}),
    ]
    with Engine(config) as live, Engine(clean) as rebuilt:
        for action, args in requests:
            a = getattr(live, action)(args, cwd="/work/proj")
            b = getattr(rebuilt, action)(args, cwd="/work/proj")
            assert a == b, (action, args)
        page = live.recall({"query": "word1", "scope": "project"}, cwd="/work/proj")
        assert any(h["index"] >= 4 for h in page["hits"])  # hits inside the deltas


def test_claude_lines_that_change_stored_entries_answer_like_a_clean_build(
    tmp_path: Path,
) -> None:
    # A reply streamed one content block per line, a tool call whose result comes later:
    # each such line changes an entry already stored, and its delta replaces that entry.
    pi = PiRoot(tmp_path)
    config = pi.write_config(hotSessions=2)
    folder = tmp_path / "claude" / "-work-proj"
    folder.mkdir(parents=True)
    path = folder / "c0ffee00-0000-4000-8000-000000000001.jsonl"
    call = {"type": "tool_use", "id": "t1", "name": "Bash", "input": {"command": "ls charlie"}}
    done = {"type": "tool_result", "tool_use_id": "t1", "content": "echo output", "is_error": True}
    lines = [
        claude_line("user", "u1", None, T0, "first question about alpha"),
        claude_line("assistant", "a1", "u1", T0 + 1, [{"type": "text", "text": "bravo"}],
                    message_id="m1"),
        claude_line("assistant", "a2", "a1", T0 + 2, [call], message_id="m1"),
        claude_line("user", "u2", "a2", T0 + 3, [done]),
        claude_line("assistant", "a3", "u2", T0 + 4, [{"type": "text", "text": "foxtrot"}],
                    message_id="m2"),
        claude_line("assistant", "a4", "a3", T0 + 5, [{"type": "text", "text": "golf said"}],
                    message_id="m2"),
        claude_line("user", "u3", "a4", T0 + 6, "thanks hotel"),
    ]  # fmt: skip
    path.write_bytes(jsonl(lines[:2]))
    with InlineRunner(config, SETTINGS, clock=FakeClock()) as runner:
        runner.run_until_idle()
        for line_ in lines[2:]:
            with path.open("ab") as f:
                f.write(jsonl([line_]))
            runner.notice(str(path))
            runner.run_until_idle()
    state = open_snapshot(config.index_dir).session(str(path))
    assert state is not None and len(state.index_deltas) == len(lines) - 2  # no whole rebuild
    layout = IndexLayout(config.index_dir)
    shards = [
        decode(layout.record_path(n).read_bytes(), expect=HotShard) for n in state.index_deltas
    ]
    assert sum(1 for d in shards if d.view("active").replaces) >= 2
    clean = elsewhere(config, tmp_path / "clean")
    catch_up(clean)
    requests: list[tuple[str, dict[str, Any]]] = [
        *(("recall", {"query": q, "scope": "project"}) for q in (
            "alpha", "bravo", "charlie", "echo", "foxtrot", "golf", "hotel", "said bravo",
        )),
        ("recall", {"scope": "project", "tool": "Bash", "outcome": "failed"}),
        ("recall", {"query": "golf foxtrot", "scope": "project", "queryMatch": "all"}),
        ("expand", {"session": str(path), "entryRange": {"first": 0, "last": 4}}),
        ("sessions", {"scope": "project"}),
    ]  # fmt: skip
    with Engine(config) as live, Engine(clean) as rebuilt:
        for action, args in requests:
            a = getattr(live, action)(args, cwd="/work/proj")
            b = getattr(rebuilt, action)(args, cwd="/work/proj")
            assert a == b, (action, args)
        failed = live.recall(
            {"scope": "project", "tool": "Bash", "outcome": "failed"}, cwd="/work/proj"
        )
        assert failed["total"] == 1 and failed["hits"][0]["role"] == "toolResult"
