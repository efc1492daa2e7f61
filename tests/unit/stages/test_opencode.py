"""The OpenCode adapter on sessions serialized from databases the tests build with OpenCode's
own tables (``tests.opencode_db``): typed outcomes, tool families, MCP names, files touched,
subagent sessions, titles, drift."""

from __future__ import annotations

from pathlib import Path

import orjson
from hypothesis import given
from hypothesis import strategies as st

from stages.agents import adapter
from stages.lineage import lineage
from stages.normalize import normalize
from stages.opencode.adapter import DATABASE
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceSession
from store.dbsource import read_member
from store.reasons import MALFORMED_LINE, MISSING_SESSION_HEADER, UNKNOWN_RECORD_TYPE
from store.records import NormalizedEntry
from tests.opencode_db import OpenCodeDb, text, tool
from tests.opencode_storage import Storage


def read(db: OpenCodeDb, sid: str) -> SourceSession:
    data, _ = read_member(str(db.path), sid, DATABASE)
    return read_session(data, f"{db.path}#{sid}", "opencode")


def entries(session: SourceSession, policy: Policy | None = None) -> list[NormalizedEntry]:
    return list(normalize(session, lineage(session, "active"), policy or Policy()).entries)


def test_identity_title_and_entries(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    db.session("ses_1", "Parser   fixes", directory="/work/app")
    db.message(
        "ses_1",
        {"role": "user"},
        [
            {"type": "text", "text": "fix the parser"},
            {"type": "text", "text": "Called the Read tool: <file>", "synthetic": True},
        ],
    )
    db.assistant(
        "ses_1",
        {"type": "reasoning", "text": "thinking hard", "time": {"start": 1}},
        text("On it."),
        tool("edit", {"filePath": "/work/app/p.py", "oldString": "a", "newString": "b"}),
        {"type": "step-finish", "reason": "stop", "cost": 0, "tokens": {}},
    )
    session = read(db, "ses_1")
    assert (session.session_id, session.cwd, session.title) == (
        "ses_1",
        "/work/app",
        "Parser fixes",
    )
    assert session.writer_version == "1.2.27" and not session.sidechain
    assert session.reasons == () and session.unknown == ()
    found = entries(session, Policy(index_thinking=True))
    assert [(e.role, e.type, e.tool, e.outcome, e.text) for e in found] == [
        ("user", "message", None, None, "fix the parser"),  # the synthetic part is not typed
        ("assistant", "reasoning", None, None, "thinking hard"),
        ("assistant", "message", None, None, "On it."),
        ("assistant", "message", "edit", None, found[3].text),
        ("toolResult", "message", "edit", "succeeded", "toolResult(edit)"),
    ]
    call = found[3]
    assert call.family == "edit" and call.files_touched == ("/work/app/p.py",)
    assert call.operation_address is not None and call.operation_address.endswith("/call:call_1")
    assert len({e.entry_id for e in found}) == len(found)  # one id per part
    assert [e.type for e in entries(session)] == ["message"] * 4  # no thinking by default


def test_outcomes_are_typed(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    db.session("ses_1", "t")
    db.assistant(
        "ses_1",
        tool("bash", {"command": "make"}, output="boom", exit=2, call="a"),
        tool("bash", {"command": "grep -r needle ."}, output="", exit=1, call="b"),
        tool("bash", {"command": "ls"}, output="x", exit=0, call="c"),
        tool("read", {"filePath": "/nope"}, error="File not found: /nope", call="d"),
        {"type": "tool", "callID": "e", "tool": "bash", "state": {"status": "running",
         "input": {"command": "sleep 9"}, "time": {"start": 1}}},
    )  # fmt: skip
    results = [e for e in entries(read(db, "ses_1")) if e.role == "toolResult"]
    assert [(e.tool, e.outcome, e.is_error) for e in results] == [
        ("bash", "failed", True),
        ("bash", "succeeded", False),  # grep exiting 1: nothing matched
        ("bash", "succeeded", False),
        ("read", "failed", True),  # status: error
    ]  # the running call has no result yet
    assert results[3].text == "toolResult(read) [error]: File not found: /nope"
    assert results[0].text == "toolResult(bash) [error]: boom"
    hidden = entries(read(db, "ses_1"), Policy(index_tool_output=False))
    assert [e.text for e in hidden if e.role == "toolResult"][0] == "toolResult(bash) [error]"


def test_mcp_tools_are_named_server_underscore_tool(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    db.session("ses_1", "t")
    db.assistant(
        "ses_1",
        tool("needle_lookup", {"key": "k"}, output="found", call="a"),
        tool("needle_explode", {}, error="MCP error: exploded", call="b"),
        tool("todowrite", {"todos": []}, output="[]", call="c"),
        tool("webfetch", {"url": "https://example.com"}, output="<html>", call="d"),
    )
    calls = [e for e in entries(read(db, "ses_1")) if e.role == "assistant"]
    assert [(e.tool, e.ref, e.provider, e.action, e.family) for e in calls] == [
        ("needle_lookup", "needle.lookup", "needle", "lookup", "mcp"),
        ("needle_explode", "needle.explode", "needle", "explode", "mcp"),
        ("todowrite", "opencode.todowrite", "opencode", "todowrite", "other"),
        ("webfetch", "opencode.webfetch", "opencode", "webfetch", "web"),
    ]
    assert adapter("opencode").tools["task"] == "subagent"


def test_a_child_session_is_a_sidechain_of_its_parent(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    db.session("ses_parent", "parent")
    db.session("ses_child", "explore (@general subagent)", parent="ses_parent")
    db.user("ses_child", "look around")
    db.assistant("ses_child", text("found it"))
    child = read(db, "ses_child")
    assert child.sidechain and child.parent_session == "ses_parent"
    found = entries(child)
    assert found and all(e.sidechain and e.agent_id == "ses_child" for e in found)


def test_odd_rows_are_named_never_raised(tmp_path: Path) -> None:
    db = OpenCodeDb(tmp_path / "opencode.db")
    db.session("ses_1", "t")
    db.user("ses_1", "hello")
    db.assistant("ses_1", {"type": "hologram", "text": "from the future"})
    with db.connect() as conn:
        conn.execute(
            "UPDATE message SET data = 'not json' WHERE id = (SELECT min(id) FROM message)"
        )
    session = read(db, "ses_1")
    assert MALFORMED_LINE in session.reasons and UNKNOWN_RECORD_TYPE in session.reasons
    assert ("part:hologram", 1) in session.unknown
    without = read_session(
        b'{"$table":"message","id":"m","data":{"role":"user"}}\n', "x.db#s", "opencode"
    )
    assert MISSING_SESSION_HEADER in without.reasons and without.session_id == "s"


JSON = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.text(max_size=5),
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3)
    ),
    max_leaves=8,
)
STATE = st.fixed_dictionaries(
    {},
    optional={"status": st.sampled_from(["completed", "error"]) | JSON, "input": JSON,
              "output": JSON, "error": JSON, "metadata": JSON},
)  # fmt: skip
SHAPED = st.fixed_dictionaries(
    {"$table": st.sampled_from(["session", "message", "part", "todo"]) | JSON},
    optional={
        "id": JSON, "message_id": JSON, "parent_id": JSON, "title": JSON, "directory": JSON,
        "data": JSON | st.fixed_dictionaries(
            {}, optional={"role": st.sampled_from(["user", "assistant"]) | JSON,
                          "type": st.sampled_from(["text", "tool", "reasoning"]) | JSON,
                          "text": JSON, "tool": JSON, "callID": JSON, "summary": JSON,
                          "time": JSON, "synthetic": JSON,
                          "state": JSON | STATE}),
    },
)  # fmt: skip


@given(st.lists(SHAPED, max_size=8))
def test_garbage_rows_never_raise(rows: list[dict[str, object]]) -> None:
    data = b"".join(orjson.dumps(r) + b"\n" for r in rows)
    session = read_session(data, "/x/opencode.db#ses_1", "opencode")
    for policy in (Policy(), Policy(index_thinking=True, index_tool_output=False)):
        entries(session, policy)


def _same_session(db: OpenCodeDb | Storage) -> None:
    db.session("ses_1", "Parser fixes")
    db.session("ses_kid", "subagent", parent="ses_1")
    db.user("ses_1", "fix the parser")
    db.assistant(
        "ses_1",
        {"type": "reasoning", "text": "thinking hard"},
        text("On it."),
        tool("bash", {"command": "pytest"}, output="1 failed", exit=1, call="c1"),
        tool("read", {"filePath": "/work/proj/p.py"}, error="no such file", call="c2"),
    )
    db.user("ses_kid", "look around")


def test_a_legacy_storage_session_reads_as_its_migrated_rows(tmp_path: Path) -> None:
    """The same session in OpenCode < 1.2's ``storage/`` tree and in ``opencode.db`` gives the
    same identity and entries (ids aside: the two test writers number them apart)."""
    db = OpenCodeDb(tmp_path / "new" / "opencode.db")  # apart: beside it, it supersedes
    tree = Storage(tmp_path / "old" / "storage")
    _same_session(db)
    _same_session(tree)
    policy = Policy(index_thinking=True)
    for sid in ("ses_1", "ses_kid"):
        old = read_session(
            read_member(str(tree.root), sid, DATABASE)[0], f"{tree.root}#{sid}", "opencode"
        )
        new = read(db, sid)
        assert old.reasons == new.reasons == ()
        assert (old.session_id, old.cwd, old.title, old.parent_session, old.sidechain) == (
            new.session_id, new.cwd, new.title, new.parent_session, new.sidechain,
        )  # fmt: skip
        assert old.writer_version == "1.1.40" and new.writer_version == "1.2.27"

        def shape(s: SourceSession) -> list[tuple[object, ...]]:
            return [
                (e.role, e.type, e.text, e.tool, e.outcome, e.family, e.is_error, e.sidechain)
                for e in entries(s, policy)
            ]

        assert shape(old) == shape(new) and shape(old)


def test_a_legacy_session_file_that_is_no_json_is_malformed(tmp_path: Path) -> None:
    tree = Storage(tmp_path / "storage")
    tree.session("ses_1", "t")
    tree.user("ses_1", "hello")
    (tree.root / "session" / "prj_1" / "ses_1.json").write_bytes(b"{oops")
    session = read_session(
        read_member(str(tree.root), "ses_1", DATABASE)[0], f"{tree.root}#ses_1", "opencode"
    )
    assert MALFORMED_LINE in session.reasons and session.session_id == "ses_1"
    assert [e.text for e in entries(session)] == ["hello"]
