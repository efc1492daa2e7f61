"""The Copilot CLI adapter on files its real writer wrote (``tests/data/copilot``: Copilot CLI
1.0.102 driven by the conformance suite against the scripted model, its system prompt cut)."""

from __future__ import annotations

from pathlib import Path

import orjson

from stages.agents import adapter
from stages.lineage import lineage
from stages.normalize import normalize
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceSession
from store.reasons import MISSING_SESSION_HEADER
from store.records import NormalizedEntry

DATA = Path(__file__).parents[2] / "data" / "copilot"


def only(scenario: str) -> Path:
    (path,) = (DATA / scenario).glob("*/events.jsonl")
    return path


def read(path: Path, data: bytes | None = None) -> SourceSession:
    return read_session(path.read_bytes() if data is None else data, str(path), "copilot")


def entries(session: SourceSession, policy: Policy | None = None) -> list[NormalizedEntry]:
    return list(normalize(session, lineage(session, "active"), policy or Policy()).entries)


def test_identity_comes_from_session_start() -> None:
    path = only("shell")
    session = read(path)
    assert session.session_id == path.parent.name
    assert session.cwd.endswith("/work")
    assert session.writer_version == "1.0.102"
    assert session.reasons == () and session.unknown == ()
    files = adapter("copilot").files
    assert files.matches("events.jsonl") and files.matches(f"{path.parent.name}.jsonl")
    assert not files.matches("notes.jsonl")  # an artifact in the session's files/ folder


def test_a_failed_shell_call_is_typed_by_its_exit_code() -> None:
    found = entries(read(only("shell")))
    shown = [(e.role, e.tool, e.outcome) for e in found]
    assert shown == [
        ("user", None, None),
        ("assistant", "view", None),
        ("toolResult", "view", "succeeded"),
        ("assistant", "bash", None),
        ("toolResult", "bash", "failed"),  # success: true, shellExecution.exitCode 3
        ("assistant", None, None),
    ]
    view, bash = found[1], found[3]
    assert view.family == "read" and view.files_touched[0].endswith("/work/notes.txt")
    assert bash.family == "shell" and bash.operation_address is not None
    assert bash.operation_address.endswith("/call:" + bash.operation_address.split(":")[-1])
    assert found[4].is_error and found[4].text.startswith("toolResult(bash) [error]: ")
    assert "SHELLOUTQ7" in found[4].text
    without = entries(read(only("shell")), Policy(index_tool_output=False))
    assert without[4].text == "toolResult(bash) [error]"
    # the system prompt (system.message) is never an entry
    assert not any("system prompt" in e.text for e in found)


def test_mcp_calls_take_the_servers_identity_and_a_failure_flag() -> None:
    found = [e for e in entries(read(only("mcp"))) if e.tool]
    assert {e.tool for e in found} == {"mcp__needle__lookup", "mcp__needle__explode"}
    assert {(e.provider, e.action) for e in found} == {("needle", "lookup"), ("needle", "explode")}
    assert all(e.family == "mcp" for e in found)
    results = {e.tool: e.outcome for e in found if e.role == "toolResult"}
    assert results == {"mcp__needle__lookup": "succeeded", "mcp__needle__explode": "failed"}


def test_a_continued_session_is_one_file_and_one_path() -> None:
    session = read(only("resume"))
    kinds = [r.kind for r in session.records]
    assert "session.resume" in kinds
    texts = [e.text for e in entries(session) if e.role in ("user", "assistant") and not e.tool]
    assert [t.split()[-1] for t in texts] == [
        "PROMPTFIRSTQ7", "FINALFIRSTQ7", "PROMPTSECONDQ7", "FINALSECONDQ7"
    ]  # fmt: skip


def test_a_sub_agents_events_are_sidechain_entries_of_its_task_call() -> None:
    session = read(only("subagent"))
    found = entries(session)
    side = [e for e in found if e.sidechain]
    main = [e for e in found if not e.sidechain]
    assert [(e.role, e.tool) for e in main] == [
        ("user", None), ("assistant", "task"), ("toolResult", "task"), ("assistant", None)
    ]  # fmt: skip
    assert [(e.role, e.tool) for e in side] == [
        ("user", None), ("assistant", "bash"), ("toolResult", "bash"), ("assistant", None)
    ]  # fmt: skip
    task_call = main[1].operation_address
    assert task_call is not None
    assert {e.parent_call_id for e in side} == {task_call.rsplit("call:", 1)[-1]}
    assert len({e.agent_id for e in side}) == 1 and side[0].agent_id
    assert "SUBPROMPTQ7" in side[0].text
    assert not any(r.sidechain for r in session.records if r.kind == "session.shutdown")


def test_the_older_flat_layout_and_a_missing_start() -> None:
    path = only("shell")
    flat = path.parent.parent / f"{path.parent.name}.jsonl"  # session-state/<uuid>.jsonl
    session = read(flat, path.read_bytes())
    assert session.session_id == path.parent.name
    lines = path.read_bytes().splitlines(keepends=True)
    headless = read(path, b"".join(lines[1:]))
    assert MISSING_SESSION_HEADER in headless.reasons
    assert headless.session_id == path.parent.name  # the folder names it
    assert [e.role for e in entries(headless)][:1] == ["user"]


def test_an_event_type_no_release_wrote_is_counted_not_guessed() -> None:
    path = only("shell")
    extra = {"type": "assistant.hologram", "id": "x1", "parentId": None,
             "timestamp": "2026-12-02T10:00:00Z", "data": {"content": "UNSEENQ7"}}  # fmt: skip
    session = read(path, path.read_bytes() + orjson.dumps(extra) + b"\n")
    assert dict(session.unknown) == {"event:assistant.hologram": 1}
    assert not any("UNSEENQ7" in e.text for e in entries(session))


def test_ephemeral_parents_link_to_the_event_before() -> None:
    path = only("shell")
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    lines[5]["parentId"] = "an-ephemeral-delta-never-written"
    data = b"".join(orjson.dumps(x) + b"\n" for x in lines)
    session = read(path, data)
    assert lineage(session, "active").reasons == ()
    assert len(entries(session)) == 6


def test_grep_exiting_1_matched_nothing() -> None:
    path = only("shell")
    lines = [orjson.loads(x) for x in path.read_bytes().splitlines()]
    for line in lines:
        data = line["data"]
        if line["type"] == "tool.execution_start" and data.get("toolName") == "bash":
            data["arguments"]["command"] = "grep -n needle notes.txt"
        for item in data.get("toolRequests", []):
            if item["name"] == "bash":
                item["arguments"]["command"] = "grep -n needle notes.txt"
        if "shellExecution" in data:
            data["shellExecution"]["exitCode"] = 1
    session = read(path, b"".join(orjson.dumps(x) + b"\n" for x in lines))
    (result,) = [e for e in entries(session) if e.role == "toolResult" and e.tool == "bash"]
    assert result.outcome == "succeeded" and not result.is_error
