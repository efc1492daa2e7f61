"""Drift and edits along the pipeline: unknown record types reach the state and `pipeline
status`, appends keep the counts a whole build gives, and a Pi context_edit is exact."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from pipeline.status import collect_status, render_status
from tests.helpers import header, iso, message, user
from tests.unit.query.kit import CWD, T0, Kit
from tests.unit.stages.test_append import Grower

CLAUDE = "c0ffee00-0000-4000-8000-0000000000bb"


def _lines(*values: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(v) + b"\n" for v in values)


def _claude_line(kind: str, uuid: str, **fields: Any) -> dict[str, Any]:
    return {"type": kind, "uuid": uuid, "parentUuid": None, "sessionId": CLAUDE, "cwd": CWD,
            "version": "2.1.999", "timestamp": iso(T0), **fields}  # fmt: skip


def test_status_lists_unknown_record_types_per_agent_and_writer_version(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "k")
    try:
        kit.session(
            "pi-s",
            [
                header("pi-s", CWD),
                user("u", None, "hello", T0),
                {"type": "future_entry", "id": "f", "parentId": "u", "content": "maybe text"},
            ],
        )
        folder = kit.pi.base / "claude" / "-work-proj"
        folder.mkdir(parents=True)
        (folder / f"{CLAUDE}.jsonl").write_bytes(
            _lines(
                _claude_line("user", "u1", message={"role": "user", "content": "hi"}),
                _claude_line("hologram-state", "h1", level=3),
                _claude_line("hologram-state", "h2", level=4),
            )
        )
        kit.build()
        status = collect_status(kit.config)
        found = status.as_dict()["unknownRecordTypes"]
        assert found == [
            {"agent": "claude", "writerVersion": "2.1.999", "type": "line:hologram-state",
             "records": 2, "sessions": 1},
            {"agent": "pi", "writerVersion": "3", "type": "line:future_entry",
             "records": 1, "sessions": 1},
        ]  # fmt: skip
        text = render_status(status)
        assert "unknown     claude 2.1.999: line:hologram-state in 2 records of 1 sessions" in text
        # a text-bearing unknown entry names the session's coverage; a bare one does not
        incomplete = {s["agent"]: s["reasons"] for s in status.as_dict()["incompleteSessions"]}
        assert incomplete == {"pi": ["unknown_record_type"]}
    finally:
        kit.close()


def _pi(*records: dict[str, Any]) -> bytes:
    return _lines(header("grow", "/work"), *records)


def test_a_pi_append_counts_unknown_types_as_a_whole_build_does(tmp_path: Path) -> None:
    grower = Grower(tmp_path / "index")
    data = _pi(
        user("u1", None, "first", T0),
        {"type": "odd", "id": "o1", "parentId": "u1"},
        user("u2", "o1", "second", T0 + 1),
        {"type": "odd", "id": "o2", "parentId": "u2"},
    )
    cut = data.index(b'{"type":"message","id":"u2"')
    hot, deltas, fast = grower.grow(data, [cut])
    assert fast == 1  # the tail path took it
    assert hot.state.unknown_records == (("3", "line:odd", 2),)
    assert hot.state.unknown_records == grower.build(data).state.unknown_records
    grower.check(data, hot, deltas)


def test_an_appended_context_edit_is_indexed_whole_and_marks_its_target(tmp_path: Path) -> None:
    grower = Grower(tmp_path / "index")
    data = _pi(
        user("u1", None, "drop me from context", T0),
        message("a1", "u1", "assistant", T0 + 1, content=[{"type": "text", "text": "ok"}]),
        {
            "type": "context_edit",
            "id": "e1",
            "parentId": "a1",
            "timestamp": iso(T0 + 2),
            "targetId": "u1",
            "replacement": None,
        },  # fmt: skip
    )
    cut = data.index(b'{"type":"context_edit"')
    hot, deltas, fast = grower.grow(data, [cut])
    assert fast == 0 and deltas == []  # declined: the edit changes an entry already stored
    entries = grower.entries(hot.state.entries_record).view("active").entries
    assert [(e.entry_id, e.text, e.context_edited) for e in entries] == [
        ("u1", "drop me from context", "omitted"),
        ("a1", "ok", None),
    ]


def test_a_session_of_metadata_only_is_no_entries_and_an_append_with_entries_clears_it(
    tmp_path: Path,
) -> None:
    grower = Grower(tmp_path / "index")
    data = _pi(
        {"type": "model_change", "id": "m", "parentId": None, "provider": "p", "modelId": "x"},
        user("u1", "m", "now there is something", T0),
    )
    cut = data.index(b'{"type":"message"')
    base = grower.build(data[:cut])
    assert all("no_entries" in v.reasons for v in base.state.views)
    hot, deltas, fast = grower.grow(data, [cut])
    assert fast == 1
    assert all("no_entries" not in v.reasons for v in hot.state.views)
    grower.check(data, hot, deltas)


def test_a_codex_append_keeps_its_unknown_counts_in_memory_too(tmp_path: Path) -> None:
    tid = "01a233a5-7ca9-7a02-814c-3e8a48ccea89"
    path = f"/s/2026/12/01/rollout-2026-12-01T22-06-53-{tid}.jsonl"
    grower = Grower(tmp_path / "index", path=path, agent="codex")

    def line(kind: str, payload: dict[str, Any]) -> dict[str, Any]:
        return {"timestamp": iso(T0), "type": kind, "payload": payload}

    said = {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "q"}]}
    data = _lines(
        line("session_meta", {"id": tid, "cwd": "/w", "cli_version": "0.171.0"}),
        line("response_item", said),
        line("future_line", {"n": 1}),
        line("response_item", said),
        line("future_line", {"n": 2}),
    )
    cut = data.index(b'{"timestamp"', data.index(b"future_line"))
    hot, deltas, fast = grower.grow(data, [cut])
    assert fast == 1
    assert hot.state.unknown_records == (("0.171.0", "line:future_line", 2),)
    grower.check(data, hot, deltas)
