"""A hot session grown by delta records answers exactly as its clean rebuild does."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import Any

from pipeline.indexer import build_index
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from pipeline.testing import FakeClock
from query.engine import Engine
from store.reader import open_snapshot
from tests.helpers import PiRoot, assistant, header, jsonl, user

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
    clean = replace(config, memory=replace(config.memory, index_dir=tmp_path / "clean"))
    build_index(clean)
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
