"""Claude Code: the adapter's threading rules and the normalizer's text rules, one by one."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stages.claude.normalize import INJECTED_TAGS, normalize_claude
from stages.claude.source import read_claude
from stages.lineage import lineage
from stages.parse import parse
from stages.policy import Policy
from stages.source import SourceSession
from store.records import NormalizedEntry

REAL = Path(__file__).parents[3].parent / "shared" / "fixtures" / "real" / "claude"
SID = "11111111-2222-4333-8444-555555555555"
PATH = f"/h/.claude/projects/-p/{SID}.jsonl"


# --- builders --------------------------------------------------------------------------------


def env(kind: str, uuid: str, parent: str | None, **extra: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": SID,
        "cwd": "/p",
        "isSidechain": False,
        "timestamp": "2026-01-02T03:04:05.678Z",
    }
    line.update(extra)
    return line


def user(uuid: str, parent: str | None, content: object, **extra: Any) -> dict[str, Any]:
    return env("user", uuid, parent, message={"role": "user", "content": content}, **extra)


def reply(uuid: str, parent: str | None, msg: str, *blocks: dict[str, Any], **extra: Any) -> Any:
    message = {"id": msg, "role": "assistant", "content": list(blocks)}
    return env("assistant", uuid, parent, message=message, **extra)


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def call(call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": args}


def result(call_id: str, body: object, error: bool | None = None) -> dict[str, Any]:
    block: dict[str, Any] = {"type": "tool_result", "tool_use_id": call_id, "content": body}
    if error is not None:
        block["is_error"] = error
    return block


def progress(uuid: str, parent: str | None) -> dict[str, Any]:
    return env("progress", uuid, parent, data={"type": "hook_progress"}, toolUseID="t")


def jsonl(*lines: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(line) + b"\n" for line in lines)


def read(*lines: dict[str, Any], path: str = PATH) -> SourceSession:
    return read_claude(parse(jsonl(*lines)), path)


def entries(
    session: SourceSession, branches: str = "active", policy: Policy | None = None
) -> tuple[NormalizedEntry, ...]:
    return normalize_claude(session, lineage(session, branches), policy or Policy()).entries


def active_ids(session: SourceSession) -> list[str]:
    return list(lineage(session, "active").path_ids)


def roles(found: tuple[NormalizedEntry, ...]) -> list[tuple[str | None, str]]:
    return [(e.role, e.text) for e in found]


# --- session identity ------------------------------------------------------------------------


def test_session_id_cwd_and_agent_come_from_the_lines() -> None:
    session = read(
        {"type": "mode", "mode": "normal", "sessionId": SID},
        user("u1", None, "hi", cwd="/first"),
        user("u2", "u1", "again", cwd="/second"),
    )
    assert (session.agent, session.session_id, session.cwd) == ("claude", SID, "/first")
    assert session.header is None and session.parent_session is None
    assert not session.sidechain
    assert [(r.position, r.line, r.kind, r.id) for r in session.records] == [
        (0, 1, "mode", None),
        (1, 2, "user", "u1"),
        (2, 3, "user", "u2"),
    ]


def test_the_file_stem_wins_when_a_line_confirms_it_else_the_lines_session() -> None:
    other = "99999999-2222-4333-8444-555555555555"
    resumed = read(user("u0", None, "old", sessionId=other), user("u1", "u0", "new"))
    assert resumed.session_id == SID
    renamed = read(user("u1", None, "hi"), path="/x/copy-of-transcript.jsonl")
    assert renamed.session_id == SID
    anonymous = read({"type": "summary", "summary": "t"}, path="/x/abc.jsonl")
    assert (anonymous.session_id, anonymous.cwd) == ("abc", "")


def test_malformed_lines_become_a_reason_and_unknown_types_are_skipped_quietly() -> None:
    data = (
        jsonl(user("u1", None, "hi"))
        + b"{not json\n"
        + jsonl(
            env("cost-state", "c1", "u1", totalCostUSD=1.5),
            {"type": "atis-latch", "sessionId": SID},
            reply("a1", "u1", "m1", text("yo")),
        )
    )
    session = read_claude(parse(data), PATH)
    assert session.reasons == ("malformed_line",)
    assert [r.kind for r in session.records] == ["user", "cost-state", "atis-latch", "assistant"]
    assert roles(entries(session)) == [("user", "hi"), ("assistant", "yo")]
    assert not session.records[1].leaf_candidate


# --- lineage: split replies, progress, compaction, dangling parents --------------------------


def test_split_reply_lines_merge_into_one_entry_without_double_counting() -> None:
    session = read(
        user("u1", None, "list and read"),
        reply("a1", "u1", "m1", {"type": "thinking", "thinking": "plan it", "signature": "s"}),
        reply("a2", "a1", "m1", text("Sure.")),
        reply("a3", "a2", "m1", call("t1", "Glob", pattern="*.py", path="/p/src")),
        reply("a4", "a3", "m1", call("t2", "Read", file_path="/p/a.py")),
        reply("a4", "a3", "m1", call("t2", "Read", file_path="/p/a.py")),  # repeated line
        reply("a5", "a4", "m1", call("t2", "Read", file_path="/p/a.py")),  # repeated call
    )
    for branches in ("active", "all"):
        (first, merged) = entries(session, branches)
        assert first.role == "user"
        assert merged.entry_id == "a1" and merged.parent_id == "u1" and merged.line == 2
        assert merged.text == (
            'Sure.\nTool: Glob({"pattern":"*.py","path":"/p/src"})\n'
            'Tool: Read({"file_path":"/p/a.py"})'
        )
        assert (merged.tool, merged.ref, merged.provider, merged.action) == (
            "Glob",
            "claude.Glob",
            "claude",
            "Glob",
        )
        assert merged.operation_address == "a1/call:t1"
        assert merged.files_touched == ("/p/src", "/p/a.py")
        assert merged.timestamp == 1767323045678
        assert merged.agent == "claude" and merged.outcome is None
    (_, thinking) = entries(session, policy=Policy(index_thinking=True))
    assert thinking.text.startswith("plan it\nSure.\n")


def test_parallel_tool_results_hanging_off_split_lines_stay_on_the_active_path() -> None:
    # anthropics/claude-code#37779: the first call's result is a sibling of the second call.
    session = read(
        user("u1", None, "write two files"),
        reply("a1", "u1", "m1", call("t1", "Write", file_path="/p/a", content="A")),
        reply("a2", "a1", "m1", call("t2", "Write", file_path="/p/b", content="B")),
        user("r1", "a1", [result("t1", "wrote a")], toolUseResult={}),
        user("r2", "a2", [result("t2", "wrote b")], toolUseResult={}),
        reply("a3", "r2", "m2", text("Both written.")),
    )
    assert active_ids(session) == ["u1", "a1", "a2", "r1", "r2", "a3"]
    found = entries(session)
    assert [(e.role, e.tool, e.outcome) for e in found] == [
        ("user", None, None),
        ("assistant", "Write", None),
        ("toolResult", "Write", "succeeded"),
        ("toolResult", "Write", "succeeded"),
        ("assistant", None, None),
    ]
    assert found[2].text == "toolResult(Write): wrote a"


def test_sibling_reply_lines_with_one_message_id_are_recovered_together() -> None:
    # Claude Code's recoverOrphanedParallelToolResults: both lines hang off the user line.
    session = read(
        user("u1", None, "go"),
        reply("a1", "u1", "m1", call("t1", "Bash", command="ls")),
        reply("a2", "u1", "m1", call("t2", "Bash", command="pwd")),
        user("r1", "a1", [result("t1", "x")]),
        user("r2", "a2", [result("t2", "/p")]),
        reply("a3", "r2", "m2", text("done")),
    )
    assert sorted(active_ids(session)) == ["a1", "a2", "a3", "r1", "r2", "u1"]
    assert [e.role for e in entries(session)] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]


def test_lines_between_two_calls_of_one_reply_stay_on_the_path() -> None:
    # A hook attachment between two calls; the first result hangs off the attachment and is
    # recognised by its tool_use_id; the second call hangs off the attachment too.
    session = read(
        user("u1", None, "go"),
        reply("a1", "u1", "m1", call("t1", "Read", file_path="/p/a")),
        env("attachment", "h1", "a1", attachment={"type": "hook_success"}),
        user("r1", "h1", [result("t1", "contents of a")]),
        reply("a2", "h1", "m1", call("t2", "Read", file_path="/p/b")),
        user("r2", "a2", [result("t2", "contents of b")]),
        reply("a3", "r2", "m2", text("read both")),
    )
    assert active_ids(session) == ["u1", "a1", "h1", "r1", "a2", "r2", "a3"]
    assert [e.role for e in entries(session)] == [
        "user",
        "assistant",
        "toolResult",
        "toolResult",
        "assistant",
    ]


def test_progress_lines_beside_tool_results_never_abandon_the_conversation() -> None:
    session = read(
        progress("p0", None),  # a hook before the first prompt: the prompt hangs off it
        user("u1", "p0", "run it"),
        reply("a1", "u1", "m1", call("t1", "Bash", command="make")),
        progress("p1", "a1"),  # sibling of the tool result (apanloco sample shape)
        user("r1", "a1", [result("t1", "ok")]),
        progress("p2", "a1"),  # another sibling: the continuation hangs off it (#35024 shape)
        reply("a2", "p2", "m2", text("built")),
        env("system", "s1", "a2", subtype="stop_hook_summary"),
        progress("p3", "s1"),  # progress written last must not become the leaf
    )
    result_ = lineage(session, "active")
    assert result_.leaf_id == "s1"
    assert list(result_.path_ids) == ["u1", "a1", "r1", "a2", "s1"]
    assert [r.parent_id for r in session.records if r.kind == "progress"] == [
        None,
        "a1",
        "a1",
        "s1",
    ]
    assert not any(r.leaf_candidate for r in session.records if r.kind == "progress")
    assert roles(entries(session)) == [
        ("user", "run it"),
        ("assistant", 'Tool: Bash({"command":"make"})'),
        ("toolResult", "toolResult(Bash): ok"),
        ("assistant", "built"),
    ]
    assert len(lineage(session, "all").selected) == 9
    assert len(entries(session, "all")) == 4


def test_compaction_boundary_continues_through_logical_parent() -> None:
    session = read(
        user("u1", None, "before compaction"),
        reply("a1", "u1", "m1", text("old answer")),
        env(
            "system",
            "b1",
            None,
            subtype="compact_boundary",
            logicalParentUuid="a1",
            content="Conversation compacted",
        ),
        user(
            "c1",
            "b1",
            "This session is being continued from a previous conversation. Summary: X",
            isCompactSummary=True,
            isVisibleInTranscriptOnly=True,
        ),
        user("u2", "c1", "after compaction"),
    )
    assert active_ids(session) == ["u1", "a1", "b1", "c1", "u2"]
    found = entries(session)
    assert [(e.type, e.role) for e in found] == [
        ("message", "user"),
        ("message", "assistant"),
        ("compaction", "compactionSummary"),
        ("message", "user"),
    ]
    assert found[2].text.startswith("compaction: This session is being continued")


def test_a_parent_missing_from_the_file_is_bridged_to_the_previous_main_line() -> None:
    session = read(
        user("u1", None, "first"),
        reply("a1", "gone-1", "m1", text("answer")),  # trimmed / never persisted parent
        progress("p1", "gone-2"),
        user("u2", "a1", "second"),
        reply("a2", "gone-3", "m2", text("again")),
    )
    assert active_ids(session) == ["u1", "a1", "u2", "a2"]
    assert session.extra["bridged_parents"] == 3
    assert session.records[1].value["parentUuid"] == "gone-1"  # raw fields stay as written
    assert session.reasons == ("bridged_parent",)
    assert lineage(session, "active").reasons == ()


def test_threading_that_would_close_a_cycle_falls_back_to_the_raw_links() -> None:
    # message.id reused around another line: clustering would make a1 → n → a2 → a1.
    session = read(
        reply("a1", "n", "m1", text("one")),
        user("n", "a2", "between"),
        reply("a2", None, "m1", text("two")),
    )
    assert [r.parent_id for r in session.records] == ["n", "a2", None]
    assert lineage(session, "active").reasons == ()


# --- sidechains ------------------------------------------------------------------------------


def test_inline_sidechain_lines_are_marked_and_searchable_under_the_active_branch() -> None:
    session = read(
        user("u1", None, "delegate"),
        reply("a1", "u1", "m1", call("t1", "Task", description="d", prompt="look")),
        user("s1", None, "look", isSidechain=True),
        reply("s2", "s1", "m9", text("found it"), isSidechain=True),
        user("r1", "a1", [result("t1", "found it")]),
        reply("a2", "r1", "m2", text("the agent found it")),
        reply("s3", "s2", "m10", text("late sidechain line"), isSidechain=True),
    )
    # The main path is still the parent's conversation; the subagent's lines ride along.
    assert lineage(session, "active").path_ids == ("u1", "a1", "r1", "a2")
    selected = lineage(session, "active").selected
    assert [session.records[p].id for p in selected] == ["u1", "a1", "s1", "s2", "r1", "a2", "s3"]
    assert [r.sidechain for r in session.records] == [False, False, True, True, False, False, True]
    marked = [(e.entry_id, e.sidechain) for e in entries(session) if e.sidechain]
    assert marked == [("s1", True), ("s2", True), ("s3", True)]
    assert entries(session) == entries(session, "all")


@pytest.mark.parametrize(
    ("path", "session_id"),
    [
        (f"/h/.claude/projects/-p/{SID}/subagents/agent-a1b2c3.jsonl", f"{SID}/agent-a1b2c3"),
        ("/h/.claude/projects/-p/agent-a1b2c3.jsonl", f"{SID}/agent-a1b2c3"),
    ],
)
def test_a_subagent_file_is_a_sidechain_session_linked_to_its_parent(
    path: str, session_id: str
) -> None:
    session = read(
        user("s1", None, "look for the bug", isSidechain=True, agentId="a1b2c3"),
        reply("s2", "s1", "m1", text("it is in parse.py"), isSidechain=True, agentId="a1b2c3"),
        path=path,
    )
    assert session.sidechain
    assert (session.session_id, session.parent_session) == (session_id, SID)
    assert not any(r.sidechain for r in session.records)
    assert active_ids(session) == ["s1", "s2"]
    assert [(e.role, e.sidechain) for e in entries(session)] == [
        ("user", True),
        ("assistant", True),
    ]


def test_a_subagent_file_without_session_ids_falls_back_to_its_folder() -> None:
    line = user("s1", None, "x", isSidechain=True)
    del line["sessionId"]
    session = read(line, path="/h/.claude/projects/-p/parent-id/subagents/agent-z.jsonl")
    assert (session.session_id, session.parent_session) == ("parent-id/agent-z", "parent-id")


# --- injected context never becomes user text -------------------------------------------------


@pytest.mark.parametrize("tag", INJECTED_TAGS)
def test_each_markup_tag_marks_injected_context(tag: str) -> None:
    session = read(
        user("u1", None, f"<{tag}>/init</{tag}>\nmore"),
        user("u2", "u1", [text(f"  <{tag}>x</{tag}>")]),
    )
    assert entries(session) == ()


def test_typed_markers_keep_injected_lines_out_of_user_text() -> None:
    session = read(
        user("m1", None, "Caveat: the messages below were generated by the user", isMeta=True),
        user("m2", "m1", [text("expanded /init prompt")], isMeta=True),
        user("t1", "m2", "Error: rejected", toolUseResult="Error: rejected"),
        user("h1", "t1", [text("<system-reminder>be brief</system-reminder>"), text("real ask")]),
        user("h2", "h1", "prose mentioning <command-name> later is human"),
        user("i1", "h2", [{"type": "image", "source": {"type": "base64", "data": "AAAA"}}]),
        user("x1", "i1", [{"type": "tool_reference", "tool_name": "Read"}]),
    )
    assert roles(entries(session)) == [
        ("user", "real ask"),
        ("user", "prose mentioning <command-name> later is human"),
        ("user", ""),
    ]


# --- tool results, errors and the policy ------------------------------------------------------


def test_tool_results_pair_names_and_map_errors_to_outcomes() -> None:
    session = read(
        user("u1", None, "edit"),
        reply("a1", "u1", "m1", call("t1", "Edit", file_path="/p/a", old_string="x")),
        reply("a2", "a1", "m1", call("t2", "NotebookEdit", notebook_path="/p/n.ipynb")),
        user(
            "r1",
            "a2",
            [
                result("t1", [text("no such line"), {"type": "image"}], True),
                result("t2", "ok", False),
            ],
        ),
        user("r2", "r1", [result("t-unknown", "orphan")]),
    )
    found = entries(session)
    assert found[1].files_touched == ("/p/a", "/p/n.ipynb")
    assert [(e.entry_id, e.tool, e.is_error, e.outcome, e.ref, e.text) for e in found[2:]] == [
        ("r1", "Edit", True, "failed", "claude.Edit", "toolResult(Edit) [error]: no such line"),
        ("r1/result:t2", "NotebookEdit", False, "succeeded", "claude.NotebookEdit",
         "toolResult(NotebookEdit): ok"),
        ("r2", None, False, "succeeded", None, "toolResult: orphan"),
    ]  # fmt: skip
    assert all(e.operation_address is None for e in found[2:])
    quiet = entries(session, policy=Policy(index_tool_output=False))
    assert [e.text for e in quiet[2:]] == [
        "toolResult(Edit) [error]",
        "toolResult(NotebookEdit)",
        "toolResult",
    ]


def test_thinking_follows_the_policy_and_api_errors_are_errors() -> None:
    session = read(
        user("u1", None, "q"),
        reply("a1", "u1", "m1", {"type": "thinking", "thinking": "", "signature": "sig"}),
        reply("a2", "a1", "m1", {"type": "thinking", "thinking": "deep"}, text("answer")),
        reply("a3", "a2", "m2", text("API Error: 529"), isApiErrorMessage=True),
    )
    assert [e.text for e in entries(session)][1:] == ["answer", "API Error: 529"]
    assert [e.text for e in entries(session, policy=Policy(index_thinking=True))][1:] == [
        "deep\nanswer",
        "API Error: 529",
    ]
    assert [e.is_error for e in entries(session)] == [False, False, True]


def test_system_attachment_and_metadata_lines_give_no_entries() -> None:
    session = read(
        user("u1", None, "q"),
        env("system", "s1", "u1", subtype="local_command", content="<local-command-stdout>x"),
        env("attachment", "t1", "s1", attachment={"type": "hook_success"}),
        {"type": "summary", "summary": "Title", "leafUuid": "t1"},
        {"type": "file-history-snapshot", "messageId": "u1", "snapshot": {}},
        {"type": "last-prompt", "lastPrompt": "q", "leafUuid": "t1", "sessionId": SID},
    )
    assert roles(entries(session, "all")) == [("user", "q")]
    assert lineage(session, "active").leaf_id == "t1"


# --- property: arbitrary input never raises ---------------------------------------------------

_KEYS = st.sampled_from(
    [
        "type",
        "uuid",
        "parentUuid",
        "logicalParentUuid",
        "message",
        "isSidechain",
        "isMeta",
        "isCompactSummary",
        "toolUseResult",
        "sessionId",
        "timestamp",
        "cwd",
        "content",
        "id",
        "name",
        "input",
        "tool_use_id",
        "is_error",
        "text",
        "thinking",
        "isApiErrorMessage",
    ]
)
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.sampled_from(["u1", "u2", "m1", "user", "assistant", "progress", "tool_use", "tool_result",
                     "text", "thinking", "system", "2026-01-01T00:00:00Z", "<command-name>", ""]),
    st.text(st.characters(blacklist_categories=("Cs",)), max_size=8),
)  # fmt: skip
_VALUES = st.recursive(
    _SCALARS,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(_KEYS, inner, max_size=6),
    max_leaves=20,
)


@pytest.mark.slow
@settings(max_examples=150, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(st.dictionaries(_KEYS, _VALUES, max_size=8), max_size=8), st.booleans())
def test_claude_shaped_garbage_never_raises(lines: list[dict[str, Any]], flag: bool) -> None:
    for path in (PATH, f"/p/{SID}/subagents/agent-x.jsonl"):
        session = read_claude(parse(jsonl(*lines)), path)
        for branches in ("active", "all"):
            normalize_claude(
                session,
                lineage(session, branches),
                Policy(index_thinking=flag, index_tool_output=flag),
            )


@settings(max_examples=100)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    session = read_claude(parse(data), PATH)
    for branches in ("active", "all"):
        normalize_claude(session, lineage(session, branches), Policy())


# --- real files (read in place from ../shared; skipped when it is absent) ----------------------

# name: (user, assistant, toolResult, errors) in both modes, tool-result tool names in order,
# records on the active path
REAL_FACTS: dict[str, tuple[tuple[int, int, int, int], tuple[str, ...], int]] = {
    "apanloco__random__session.jsonl": (
        (11, 22, 12, 0),
        ("Bash", "Write", "Read", "Edit", "Edit", "Edit", "Write", "Bash", "Bash", "Bash",
         "Glob", "Bash"),
        67,  # every uuid line but the 18 progress lines
    ),
    "d-kimuson__claude-code-viewer__mock-global-claude-dir__projects__sample-project__"
    "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl": (
        (0, 7, 12, 1),  # /init markup line and the isMeta expansion are not user text
        ("TodoWrite", "Glob", "Glob", "Bash", "Glob", "Glob", "Glob", "Glob", "Bash", "TodoWrite",
         "Write", "TodoWrite"),
        29,
    ),
    "frederick-douglas-pearce__claude-code-sessions__fixtures__sanitized__"
    "hook-trace-stop-hook-error.jsonl": (
        (1, 2, 1, 0),
        ("Bash",),
        7,  # three parents were trimmed away: bridged, the path still spans the session
    ),
}  # fmt: skip


def real(name: str) -> Path:
    if not REAL.is_dir():
        pytest.skip(f"real Claude Code fixtures not found at {REAL} (../shared is absent)")
    return REAL / name


@pytest.mark.real
def test_every_real_claude_file_is_known_here() -> None:
    if not REAL.is_dir():
        pytest.skip(f"real Claude Code fixtures not found at {REAL} (../shared is absent)")
    assert sorted(p.name for p in REAL.glob("*.jsonl")) == sorted(REAL_FACTS)


@pytest.mark.real
@pytest.mark.parametrize("name", sorted(REAL_FACTS))
def test_real_claude_files_normalize_as_read_by_hand(name: str) -> None:
    path = real(name)
    counts, tools, active_records = REAL_FACTS[name]
    raw = [orjson.loads(line) for line in path.read_bytes().splitlines()]
    session = read_claude(parse(path.read_bytes()), str(path))
    bridged = session.extra["bridged_parents"]
    assert session.reasons == (("bridged_parent",) if bridged else ())
    assert session.session_id == raw[-1].get("sessionId", raw[0].get("sessionId"))
    assert len(lineage(session, "active").selected) == active_records
    for branches in ("active", "all"):
        found = entries(session, branches)
        got = tuple(sum(e.role == r for e in found) for r in ("user", "assistant", "toolResult"))
        assert (*got, sum(e.is_error for e in found)) == counts
        assert tuple(e.tool for e in found if e.role == "toolResult") == tools
        injected = {
            line["uuid"]
            for line in raw
            if line.get("isMeta") or line.get("isCompactSummary") or "toolUseResult" in line
        }
        for entry in found:
            if entry.role == "user":
                assert entry.entry_id not in injected
                assert not entry.text.lstrip().startswith(tuple(f"<{t}>" for t in INJECTED_TAGS))


@pytest.mark.real
def test_real_split_reply_merges_its_lines() -> None:
    path = real(
        "d-kimuson__claude-code-viewer__mock-global-claude-dir__projects__sample-project__"
        "1af7fc5e-8455-4414-9ccd-011d40f70b2a.jsonl"
    )
    found = entries(read_claude(parse(path.read_bytes()), str(path)))
    five = next(e for e in found if e.line == 6)  # msg_018mu…: five tool_use lines, 6–10
    assert five.text.count("Tool: ") == 5
    assert five.text.startswith('Tool: Bash({"command":"find . -name')
    assert (
        five.operation_address
        == "a1bdced2-6cf5-4c3a-b700-d5e13eb64d9d/call:toolu_01UwiR8tuGvGJN2J7BW4KbPx"
    )
    write = next(e for e in found if e.tool == "Write" and e.role == "assistant")
    assert write.files_touched == ("/path/to/Demo/CLAUDE.md",)


# --- the memo of the in-memory append path ---------------------------------------------------


def test_a_memo_never_changes_what_a_growing_session_normalizes_to() -> None:
    from stages.normalize import normalize
    from tests.helpers import grow_with_memo

    lines = [
        user("u1", None, "first"),
        user("u2", "u1", [result("t9", "early result")]),  # its call is written later
        reply("a1", "u2", "m1", text("looking"), call("t1", "Bash", command="ls")),
        reply("a2", "a1", "m1", text("more of the same reply")),
        user("u3", "a2", [result("t1", "listing", error=True)]),
        reply("a3", "u3", "m2", call("t9", "Read", file_path="/x")),  # names u2's result
        reply("a4", "a3", "m2", text("done")),
        user("u4", "a4", "thanks"),
    ]
    raws = parse(jsonl(*lines)).records
    memos, grown = grow_with_memo(
        raws, read_claude, PATH, [Policy(), Policy(index_tool_output=False)]
    )
    assert all(len(memo) > 0 for memo in memos)
    final = normalize(grown, lineage(grown, "all"), Policy(), memo=memos[0]).entries
    named = [e.tool for e in final if e.role == "toolResult"]
    assert named == ["Read", "Bash"]  # the early result took its name from a later call
