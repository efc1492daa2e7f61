"""The Cursor adapter on transcripts built from third-party evidence (``tests/data/cursor``:
the line shapes Einsia/agent-git and agitHQ/agit observed in real Cursor transcripts; see
docs/writers.md), and on the shapes it must count rather than guess at."""

from __future__ import annotations

from pathlib import Path

import orjson

from stages.agents import adapter
from stages.lineage import lineage
from stages.normalize import normalize
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceSession
from store.reasons import UNKNOWN_RECORD_TYPE
from store.records import NormalizedEntry
from store.sources import folder_names

DATA = Path(__file__).parents[2] / "data" / "cursor" / "Users-alex-Projects-demo"
TRANSCRIPTS = DATA / "agent-transcripts"
SID = "3b6c1f0e-8d2a-4c5b-9e7f-1a2b3c4d5e6f"
SUB = "7d9e0a1b-2c3d-4e5f-8a9b-0c1d2e3f4a5b"
FLAT = "c4e5f6a7-b8c9-4d0e-9f1a-2b3c4d5e6f70"
MAIN = TRANSCRIPTS / SID / f"{SID}.jsonl"


def read(path: Path = MAIN, data: bytes | None = None) -> SourceSession:
    return read_session(path.read_bytes() if data is None else data, str(path), "cursor")


def entries(session: SourceSession) -> list[NormalizedEntry]:
    return list(normalize(session, lineage(session, "active"), Policy()).entries)


def lines(*values: object) -> bytes:
    return b"".join(orjson.dumps(v) + b"\n" for v in values)


def test_transcripts_are_found_only_where_cursor_keeps_them() -> None:
    files = adapter("cursor").files
    assert files.holds(f"slug/agent-transcripts/{SID}/{SID}.jsonl")
    assert files.holds(f"slug/agent-transcripts/{FLAT}.jsonl")
    assert files.holds(f"slug/agent-transcripts/{SID}/subagents/{SUB}.jsonl")
    assert not files.holds("slug/mcps/state.jsonl")
    assert not files.holds(f"slug/agent-transcripts/{SID}.txt")
    assert adapter("cursor").default_root == "~/.cursor/projects"
    # the query side finds a cwd's folder forward (the slug cannot be read back)
    names = folder_names(adapter("cursor").folders, ["/Users/alex/Projects/demo"], {})
    assert "Users-alex-Projects-demo" in names


def test_a_session_is_its_file_name_with_no_cwd_and_lines_in_file_order() -> None:
    session = read()
    assert (session.session_id, session.cwd, session.title) == (SID, "", None)
    assert session.parent_session is None and not session.sidechain
    assert session.reasons == () and session.unknown == ()
    assert [r.parent_id for r in session.records[1:]] == [r.id for r in session.records[:-1]]
    assert [r.kind for r in session.records].count("turn_ended") == 3


def test_prompts_replies_and_calls_are_typed_entries_without_an_outcome() -> None:
    found = entries(read())
    assert [(e.role, e.tool) for e in found] == [
        ("user", None), ("assistant", None), ("assistant", "Glob"), ("assistant", "Read"),
        ("assistant", "Shell"), ("assistant", "StrReplace"), ("assistant", None),
        ("user", None), ("assistant", "Shell"), ("assistant", None),
        ("user", None), ("assistant", None),
    ]  # fmt: skip
    assert len({e.entry_id for e in found}) == len(found)
    assert "<user_query>" in found[0].text  # kept as written: an injected prompt looks alike
    shell = found[4]
    assert (shell.family, shell.ref, shell.outcome, shell.is_error) == (
        "shell",
        "cursor.Shell",
        None,
        False,
    )
    assert shell.text.startswith("Tool: Shell(") and "wc -l q1.csv q2.csv" in shell.text
    assert shell.timestamp is None and shell.operation_address == f"{shell.entry_id}/call:0"
    # two calls on one line: one entry, a line each, the first names it; ApplyPatch's input
    # is patch text, which names no typed path
    both = found[5]
    assert both.text.split("\n")[0].startswith("Tool: StrReplace(")
    assert both.text.split("\n")[1].startswith("Tool: ApplyPatch(")
    assert both.files_touched == ("/Users/alex/Projects/demo/summary.md",)
    assert found[3].family == "read" and found[2].family == "search"
    # a turn that ended in error is the turn's status, not a call's: nothing is failed
    assert all(e.outcome is None for e in found)


def test_a_subagent_file_is_a_sidechain_session_of_its_parent() -> None:
    session = read(TRANSCRIPTS / SID / "subagents" / f"{SUB}.jsonl")
    assert (session.session_id, session.parent_session, session.sidechain) == (SUB, SID, True)
    found = entries(session)
    assert all(e.sidechain for e in found)
    assert [e.tool for e in found if e.tool] == ["ReadFile"]


def test_the_flat_layout_and_string_content_are_read() -> None:
    session = read(TRANSCRIPTS / f"{FLAT}.jsonl")
    assert session.session_id == FLAT and session.parent_session is None
    assert [(e.role, e.text) for e in entries(session)] == [
        ("user", "FLATCURSORQ7 what does the build script do?"),
        ("assistant", "It runs the linters, then the tests."),
    ]


def test_shapes_no_sample_shows_are_counted_not_guessed() -> None:
    data = lines(
        {"role": "user", "message": {"content": [{"type": "text", "text": "hi"}]}},
        {"role": "assistant", "message": {"content": [
            {"type": "thinking", "thinking": "secret plan"},
            {"type": "tool_use", "name": "Shell", "input": {"command": "false"}},
        ]}},
        {"role": "user", "message": {"content": [
            {"type": "tool_result", "content": "boom", "is_error": True},
        ]}},
        {"role": "system", "message": {"content": "prompt"}},
        {"type": "checkpoint", "text": "x"},
    )  # fmt: skip
    session = read(MAIN, data)
    assert UNKNOWN_RECORD_TYPE in session.reasons
    assert dict(session.unknown) == {
        "block:thinking": 1,
        "block:tool_result": 1,
        "role:system": 1,
        "line:checkpoint": 1,
    }
    found = entries(session)
    assert [(e.role, e.tool, e.outcome) for e in found] == [
        ("user", None, None),
        ("assistant", "Shell", None),
    ]
    assert "secret plan" not in found[1].text and "boom" not in found[0].text


def test_garbage_lines_never_raise() -> None:
    data = lines(
        {"role": 3, "message": "x"},
        {"role": "assistant", "message": {"content": [1, None, {"type": "tool_use"}]}},
        {"role": "assistant", "message": {"content": [{"type": "tool_use", "name": 5}]}},
        {"role": "user", "message": None},
        {"type": None},
        {},
    )
    found = entries(read(MAIN, data))
    assert [(e.role, e.tool, e.text) for e in found] == [
        ("assistant", None, "Tool: ()"),
        ("assistant", None, "Tool: ()"),
    ]
    assert [e.family for e in found] == [None, None]
