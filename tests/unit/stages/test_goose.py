"""The Goose adapter on ``sessions.db`` files the tests build with Goose's own schema
(``tests.goose_db``; built from Goose's source, no running writer): typed outcomes, extension
tool names, MCP names, files touched, titles, subagent sessions, hidden messages."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from stages.goose.adapter import DATABASE
from stages.lineage import lineage
from stages.normalize import normalize
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceSession
from store.dbsource import read_member
from store.reasons import MALFORMED_LINE, UNKNOWN_RECORD_TYPE
from store.records import NormalizedEntry
from tests.goose_db import GooseDb, request, response, text


def read(db: GooseDb, sid: str) -> SourceSession:
    data, _ = read_member(str(db.path), sid, DATABASE)
    return read_session(data, f"{db.path}#{sid}", "goose")


def entries(session: SourceSession, policy: Policy | None = None) -> list[NormalizedEntry]:
    return list(normalize(session, lineage(session, "active"), policy or Policy()).entries)


def _db(tmp: Path) -> GooseDb:
    db = GooseDb(tmp / "sessions.db")
    db.session("20260101_1", "Parser work", working_dir="/work/app")
    db.message("20260101_1", "user", text("fix the parser"))
    db.message(
        "20260101_1",
        "assistant",
        text("Let me look."),
        {"type": "thinking", "thinking": "hmm", "signature": "s"},
        request("c1", "developer__shell", {"command": "make test"}),
        request("c2", "developer__text_editor", {"command": "view", "path": "/work/app/p.py"}),
        request("c3", "needle__lookup", {"key": "k"}),
    )
    db.message(
        "20260101_1",
        "user",
        response("c1", error="Shell output has too many characters"),
        response("c2", "def parse(): ..."),
        response("c3", "no such key", is_error=True),
    )
    db.message(
        "20260101_1",
        "user",
        text("summarize for yourself"),
        meta={"userVisible": False, "agentVisible": True},
    )
    return db


def test_identity_and_entries(tmp_path: Path) -> None:
    session = read(_db(tmp_path), "20260101_1")
    assert (session.session_id, session.cwd, session.title) == (
        "20260101_1",
        "/work/app",
        "Parser work",
    )
    assert session.reasons == () and session.unknown == () and not session.sidechain
    found = entries(session, Policy(index_thinking=True))
    assert [(e.role, e.type, e.tool, e.outcome) for e in found] == [
        ("user", "message", None, None),
        ("assistant", "message", None, None),
        ("assistant", "reasoning", None, None),
        ("assistant", "message", "developer__shell", None),
        ("assistant", "message", "developer__text_editor", None),
        ("assistant", "message", "needle__lookup", None),
        ("toolResult", "message", "developer__shell", "failed"),  # status: error
        ("toolResult", "message", "developer__text_editor", "succeeded"),
        ("toolResult", "message", "needle__lookup", "failed"),  # isError
    ]  # the message only the model saw gives none
    shell, editor, mcp = found[3], found[4], found[5]
    assert (shell.family, editor.family, mcp.family) == ("shell", "edit", "mcp")
    assert (mcp.provider, mcp.action, mcp.ref) == ("needle", "lookup", "needle.lookup")
    assert editor.files_touched == ("/work/app/p.py",)
    assert found[0].timestamp == 1_767_000_001_000
    assert (
        found[6].text
        == "toolResult(developer__shell) [error]: Shell output has too many characters"
    )
    assert len({e.entry_id for e in found}) == len(found)


def test_subagent_sessions_and_odd_rows(tmp_path: Path) -> None:
    db = GooseDb(tmp_path / "sessions.db")
    db.session("20260101_2", "sub", kind="sub_agent")
    db.message("20260101_2", "user", text("explore"), {"type": "hologram", "text": "x"})
    session = read(db, "20260101_2")
    assert session.sidechain
    assert all(e.sidechain for e in entries(session))
    assert UNKNOWN_RECORD_TYPE in session.reasons and ("block:hologram", 1) in session.unknown
    db._write("UPDATE messages SET content_json = 'nope'", ())
    assert MALFORMED_LINE in read(db, "20260101_2").reasons


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
CONTENT = JSON | st.fixed_dictionaries(
    {"type": st.sampled_from(["text", "toolRequest", "toolResponse", "thinking"]) | JSON},
    optional={"id": JSON, "text": JSON, "thinking": JSON,
              "toolCall": JSON | st.fixed_dictionaries({"status": JSON, "value": JSON}),
              "toolResult": JSON | st.fixed_dictionaries({"status": JSON, "value": JSON,
                                                          "error": JSON})},
)  # fmt: skip
SHAPED = st.fixed_dictionaries(
    {"$table": st.sampled_from(["sessions", "messages"]) | JSON},
    optional={"id": JSON, "role": JSON, "name": JSON, "user_set_name": JSON,
              "session_type": JSON, "working_dir": JSON, "created_timestamp": JSON,
              "metadata_json": JSON, "content_json": JSON | st.lists(CONTENT, max_size=4)},
)  # fmt: skip


@given(st.lists(SHAPED, max_size=8))
def test_garbage_rows_never_raise(rows: list[dict[str, object]]) -> None:
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    session = read_session(data, "/x/sessions.db#20260101_1", "goose")
    for policy in (Policy(), Policy(index_thinking=True, index_tool_output=False)):
        entries(session, policy)
