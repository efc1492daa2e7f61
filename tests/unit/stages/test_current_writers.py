"""What Pi 1.6.0, Claude Code 2.1.332 and Codex 0.171.0 write, read right (issue 15).

Every line here is small and synthetic, modelled on the files the real CLIs wrote in the
conformance suite (shapes, field names, ids); the real files themselves are checked, when
present, by ``test_real_writers_capture`` below.
"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import orjson
import pytest

from stages.lineage import lineage
from stages.normalize import normalize
from stages.parse import parse
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceSession
from store.records import NormalizedEntry
from tests.helpers import claude_line, header, iso, message

T0 = 1_796_162_813_000
TID = "01a233a5-7ca9-7a02-814c-3e8a48ccea89"
CODEX_PATH = f"/h/.codex/sessions/2026/12/01/rollout-2026-12-01T22-06-53-{TID}.jsonl"
CLAUDE_SESSION = "b4d5b3f8-734a-4e5e-9edd-f88f7a7e0d09"
CLAUDE_PATH = f"/h/.claude/projects/-work/{CLAUDE_SESSION}.jsonl"
PI_PATH = "/h/.pi/agent/sessions/--work--/2026-12-01T22-06-32-130Z_s.jsonl"


def jsonl(*lines: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def read(agent: str, path: str, *lines: dict[str, Any]) -> SourceSession:
    return read_session(jsonl(*lines), path, agent)


def entries(
    session: SourceSession, branches: str = "active", policy: Policy | None = None
) -> tuple[NormalizedEntry, ...]:
    return normalize(session, lineage(session, branches), policy or Policy()).entries


def reasons(session: SourceSession, branches: str = "active") -> tuple[str, ...]:
    return normalize(session, lineage(session, branches), Policy()).reasons


def tools(found: tuple[NormalizedEntry, ...]) -> list[tuple[Any, ...]]:
    return [
        (e.role, e.tool, e.ref, e.provider, e.action, e.family, e.outcome)
        for e in found
        if e.tool is not None
    ]


LOOKUP = ("mcp__needle__lookup", "needle.lookup", "needle", "lookup", "mcp")
EXPLODE = ("mcp__needle__explode", "needle.explode", "needle", "explode", "mcp")
EXEC = ("exec_command", "codex.exec_command", "codex", "exec_command", "shell")
SEARCH = ("ToolSearch", "claude.ToolSearch", "claude", "ToolSearch", "other")


# --- Codex 0.171.0 ---------------------------------------------------------------------------


def cx(kind: str, payload: dict[str, Any], ordinal: int = 0) -> dict[str, Any]:
    return {"timestamp": iso(T0 + ordinal), "ordinal": ordinal, "type": kind, "payload": payload}


def cx_meta() -> dict[str, Any]:
    return cx(
        "session_meta",
        {"id": TID, "session_id": TID, "timestamp": iso(T0), "cwd": "/w", "cli_version": "0.171.0"},
    )


def cx_completed(item: dict[str, Any], ordinal: int = 0) -> dict[str, Any]:
    return cx("event_msg", {"type": "item_completed", "thread_id": TID, "item": item}, ordinal)


def cx_prompt(text: str) -> list[dict[str, Any]]:
    return [
        cx(
            "response_item",
            {
                "type": "message",
                "role": "user",
                "content": [{"type": "input_text", "text": text}],
                "internal_chat_message_metadata_passthrough": {"content_item_kinds": ["user.text"]},
            },
        ),
        cx_completed(
            {"type": "UserMessage", "id": "u1", "content": [{"type": "text", "text": text}]}
        ),
    ]


def cx_answer(text: str) -> list[dict[str, Any]]:
    return [
        cx_completed(
            {"type": "AgentMessage", "id": "m1", "content": [{"type": "Text", "text": text}]}
        ),
        cx(
            "response_item",
            {
                "type": "message",
                "role": "assistant",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            },
        ),
    ]


def cx_mcp(call_id: str, tool: str, status: str, *, error: bool) -> list[dict[str, Any]]:
    result: dict[str, Any] = {"content": [{"type": "text", "text": f"{tool} said"}]}
    if error:
        result["isError"] = True
    return [
        cx(
            "response_item",
            {
                "type": "function_call",
                "name": tool,
                "namespace": "mcp__needle",
                "arguments": '{"word": "haystack"}',
                "call_id": call_id,
            },
        ),
        cx_completed(
            {
                "type": "McpToolCall",
                "id": call_id,
                "server": "needle",
                "tool": tool,
                "status": status,
                "result": result,
            }
        ),
        cx(
            "response_item",
            {
                "type": "function_call_output",
                "call_id": call_id,
                "output": [
                    {"type": "input_text", "text": "Wall time: 0.0090 seconds\nOutput:"},
                    {"type": "input_text", "text": f"{tool} said"},
                ],
            },
        ),
    ]


def test_codex_mcp_calls_have_the_one_mcp_name_and_their_outcome_from_item_completed() -> None:
    session = read(
        "codex",
        CODEX_PATH,
        cx_meta(),
        *cx_prompt("Look up haystack"),
        *cx_mcp("call_ok", "lookup", "completed", error=False),
        *cx_mcp("call_bad", "explode", "failed", error=True),
        *cx_answer("Lookup worked"),
    )
    found = entries(session)
    assert tools(found) == [
        ("assistant", *LOOKUP, None),
        ("toolResult", *LOOKUP, "succeeded"),
        ("assistant", *EXPLODE, None),
        ("toolResult", *EXPLODE, "failed"),
    ]
    assert found[2].text.startswith("toolResult(mcp__needle__lookup): Wall time")
    assert found[4].is_error and "[error]" in found[4].text
    # the prompt and the answer once each, though item_completed repeats both
    assert [(e.role, e.text) for e in found if e.tool is None] == [
        ("user", "Look up haystack"),
        ("assistant", "Lookup worked"),
    ]


def test_an_mcp_failure_stated_only_by_error_or_is_error_is_a_failure() -> None:
    call = cx_mcp("c1", "explode", "completed", error=True)  # isError, status "completed"
    denied = cx_mcp("c2", "explode", "completed", error=False)
    completed = denied[1]["payload"]["item"]
    completed["error"] = {"message": "requires approval, but approval policy is never"}
    del completed["result"]
    session = read("codex", CODEX_PATH, cx_meta(), *call, *denied)
    assert [e.outcome for e in entries(session) if e.role == "toolResult"] == ["failed", "failed"]


def test_codex_shell_outcome_comes_from_command_execution_exit_code() -> None:
    session = read(
        "codex",
        CODEX_PATH,
        cx_meta(),
        cx(
            "response_item",
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": '{"cmd":"echo OUT; exit 3"}',
                "call_id": "call_sh",
            },
        ),
        cx_completed(
            {
                "type": "CommandExecution",
                "id": "call_sh",
                "command": ["/bin/bash", "-lc", "echo OUT; exit 3"],
                "status": "failed",
                "aggregated_output": "OUT\n",
                "exit_code": 3,
            }
        ),
        # an output whose text states no exit code: only the completed item knows
        cx(
            "response_item", {"type": "function_call_output", "call_id": "call_sh", "output": "OUT"}
        ),
    )
    assert tools(entries(session)) == [("assistant", *EXEC, None), ("toolResult", *EXEC, "failed")]


def test_a_completed_item_without_a_matching_id_pairs_with_the_latest_open_call() -> None:
    session = read(
        "codex",
        CODEX_PATH,
        cx_meta(),
        cx(
            "response_item",
            {"type": "function_call", "name": "shell", "arguments": "{}", "call_id": "c9"},
        ),
        cx_completed({"type": "CommandExecution", "id": "other", "exit_code": 0}),
        cx("response_item", {"type": "function_call_output", "call_id": "c9", "output": "ok"}),
    )
    assert [e.outcome for e in entries(session) if e.role == "toolResult"] == ["succeeded"]


def test_completed_items_alone_still_give_the_prompt_and_answer() -> None:
    session = read(
        "codex",
        CODEX_PATH,
        cx_meta(),
        cx_prompt("typed prompt")[1],
        cx_answer("final answer")[0],
    )
    assert [(e.role, e.text) for e in entries(session)] == [
        ("user", "typed prompt"),
        ("assistant", "final answer"),
    ]


def test_codex_new_line_types_are_known_and_give_no_entry() -> None:
    session = read(
        "codex",
        CODEX_PATH,
        cx_meta(),
        cx("world_state", {"full": True, "state": {"agents_md": {"text": "SYSMARK rules"}}}),
        cx("token_usage_record", {"thread_id": TID, "usage": {"input_tokens": 100}}),
        *cx_prompt("hello"),
    )
    assert session.writer_version == "0.171.0"
    assert session.unknown == () and session.reasons == ()
    assert [e.text for e in entries(session)] == ["hello"]


def test_codex_unknown_types_are_counted_and_text_bearing_ones_named() -> None:
    quiet = read("codex", CODEX_PATH, cx_meta(), cx("brand_new_line", {"n": 1}), *cx_prompt("x"))
    assert quiet.unknown == (("line:brand_new_line", 1),)
    assert quiet.reasons == ()  # no field conversation text could live in
    loud = read(
        "codex",
        CODEX_PATH,
        cx_meta(),
        cx("response_item", {"type": "future_item", "content": [{"type": "x", "text": "t"}]}),
        cx("event_msg", {"type": "future_event"}),
        cx_completed({"type": "FutureItem"}),
        cx(
            "response_item",
            {"type": "message", "role": "user", "content": [{"type": "input_video", "url": "u"}]},
        ),
    )
    assert loud.unknown == (
        ("block:input_video", 1),
        ("completed:FutureItem", 1),
        ("event:future_event", 1),
        ("item:future_item", 1),
    )
    assert loud.reasons == ("unknown_record_type",)


# --- Claude Code 2.1.332 ---------------------------------------------------------------------


def cl(kind: str, uuid: str | None, parent: str | None, **fields: Any) -> dict[str, Any]:
    line: dict[str, Any] = {
        "type": kind,
        "sessionId": CLAUDE_SESSION,
        "cwd": "/w",
        "version": "2.1.332",
        "timestamp": iso(T0),
        **fields,
    }
    if uuid is not None:
        line["uuid"], line["parentUuid"], line["isSidechain"] = uuid, parent, False
    return line


def claude_turns() -> list[dict[str, Any]]:
    use = [{"type": "tool_use", "id": "toolu_1", "name": "ToolSearch",
            "input": {"query": "select:mcp__needle__lookup"}}]  # fmt: skip
    lookup = [{"type": "tool_use", "id": "toolu_2", "name": "mcp__needle__lookup",
               "input": {"word": "haystack"}}]  # fmt: skip
    return [
        claude_line("user", "u1", None, T0, "Look up haystack", session=CLAUDE_SESSION),
        claude_line("assistant", "a1", "u1", T0, use, message_id="msg_1", session=CLAUDE_SESSION),
        claude_line(
            "user", "r1", "a1", T0,
            [{"type": "tool_result", "tool_use_id": "toolu_1",
              "content": [{"type": "tool_reference", "tool_name": "mcp__needle__lookup"}]}],
            session=CLAUDE_SESSION,
        ),
        claude_line(
            "assistant", "a2", "r1", T0, lookup, message_id="msg_2", session=CLAUDE_SESSION
        ),
        claude_line(
            "user", "r2", "a2", T0,
            [{"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
              "content": "The user doesn't want to proceed with this tool use."}],
            session=CLAUDE_SESSION,
        ),
    ]  # fmt: skip


def claude_noise() -> list[dict[str, Any]]:
    """Non-turn lines as 2.1.332 writes them, each holding text that must never be searched."""
    return [
        cl("queue-operation", None, None, operation="enqueue", content="NOISE queued prompt"),
        cl(
            "attachment", "t1", "u1", attachment={"type": "prompt_snapshot", "content": "NOISE sys"}
        ),
        cl("attachment", "t2", "t1", attachment={"type": "skill_listing", "content": "NOISE s"}),
        cl("attachment", "t3", "t2", attachment={"type": "environment", "text": "NOISE env"}),
        cl("api-request-shape", None, None, shape={"system": "NOISE"}),
        cl("api-request-blob", None, None, message={"role": "user", "content": "NOISE repeat"}),
        cl("api-request-blob", None, None, message={"role": "system", "content": "NOISE sys"}),
        cl("api-request", None, None, requestId="req_1", model="claude"),
        cl("tools-used", None, None, tools=["Bash"]),
        cl("atis-latch", None, None, latch=True),
        cl("last-prompt", None, None, lastPrompt="NOISE last", leafUuid="u1"),
        cl("cost-state", None, None, totalCostUSD=0),
    ]


def test_claude_non_turn_lines_never_become_entries_or_text() -> None:
    session = read("claude", CLAUDE_PATH, *claude_noise(), *claude_turns())
    found = entries(session)
    assert session.unknown == () and session.reasons == ()
    assert session.writer_version == "2.1.332"
    assert all("NOISE" not in e.text for e in found)
    assert [e.role for e in found] == ["user", "assistant", "toolResult", "assistant", "toolResult"]


def test_claude_tool_search_is_an_ordinary_call_and_a_denial_fails() -> None:
    lines = claude_turns()
    lines[4]["toolUseResult"] = "User rejected tool use"
    lines[4]["toolDenialKind"] = "user-rejected"
    found = entries(read("claude", CLAUDE_PATH, *lines))
    assert tools(found) == [
        ("assistant", *SEARCH, None),
        ("toolResult", *SEARCH, "succeeded"),
        ("assistant", *LOOKUP, None),
        ("toolResult", *LOOKUP, "failed"),
    ]
    assert found[1].text == 'Tool: ToolSearch({"query":"select:mcp__needle__lookup"})'


def test_claude_unknown_lines_and_blocks_are_counted() -> None:
    session = read(
        "claude",
        CLAUDE_PATH,
        cl("brand-new", None, None, value=1),
        claude_line("user", "u1", None, T0, [{"type": "hologram", "data": "x"}]),
    )
    assert session.unknown == (("block:hologram", 1), ("line:brand-new", 1))
    assert session.reasons == ("unknown_record_type",)


# --- Pi 1.6.0 --------------------------------------------------------------------------------


def pi_system(entry_id: str, parent: str | None) -> dict[str, Any]:
    return message(
        entry_id, parent, "system", T0, content="",
        sections={"preamble": "You are pi SYSMARKPIQ7", "tools": "<tools>- read</tools>"},
        toolsAdded=[{"name": "read", "description": "SYSMARKPIQ7 reads", "parameters": {}}],
    )  # fmt: skip


def pi_user(entry_id: str, parent: str | None, text: str) -> dict[str, Any]:
    return message(entry_id, parent, "user", T0, content=[{"type": "text", "text": text}])


def pi_call(entry_id: str, parent: str, call_id: str, name: str, **args: Any) -> dict[str, Any]:
    return message(
        entry_id, parent, "assistant", T0,
        content=[{"type": "toolCall", "id": call_id, "name": name, "arguments": args}],
        api="openai-completions", provider="fake", model="fake-1", stopReason="toolUse",
    )  # fmt: skip


def pi_result(entry_id: str, parent: str, call_id: str, name: str, **fields: Any) -> dict[str, Any]:
    fields.setdefault("content", [{"type": "text", "text": f"{name} output"}])
    fields.setdefault("isError", False)
    return message(entry_id, parent, "toolResult", T0, toolCallId=call_id, toolName=name, **fields)


def pi_read(*lines: dict[str, Any]) -> SourceSession:
    return read("pi", PI_PATH, header("s", "/w"), *lines)


def test_pi_system_messages_and_usage_entries_give_no_entry_and_no_text() -> None:
    session = pi_read(
        pi_system("sy", None),
        pi_user("u1", "sy", "hello"),
        {"type": "usage", "id": "us", "parentId": "u1", "timestamp": iso(T0), "kind": "cache_warm",
         "provider": "fake", "model": "fake-1", "usage": {"input": 0, "totalTokens": 5}},
        {"type": "compaction", "id": "cp", "parentId": "us", "timestamp": iso(T0),
         "summary": "we said hello", "firstKeptEntryId": "u1", "tokensBefore": 10,
         "systemMessage": {"role": "system", "content": "SYSMARKPIQ7 checkpoint", "timestamp": T0}},
    )  # fmt: skip
    found = entries(session)
    assert [(e.role, e.text) for e in found] == [
        ("user", "hello"),
        ("compaction", "compaction: we said hello"),
    ]
    assert session.writer_version == "3" and session.unknown == () and session.reasons == ()


def test_pi_context_edits_mark_their_targets_and_keep_the_raw_text() -> None:
    def edit(entry_id: str, parent: str, target: str, replacement: object) -> dict[str, Any]:
        return {"type": "context_edit", "id": entry_id, "parentId": parent, "timestamp": iso(T0),
                "targetId": target, "replacement": replacement}  # fmt: skip

    session = pi_read(
        pi_user("u1", None, "omit me"),
        pi_user("u2", "u1", "replace me"),
        pi_user("u3", "u2", "edited twice"),
        edit("e1", "u3", "u1", None),
        edit("e2", "e1", "u2", [{"type": "text", "text": "shorter"}]),
        edit("e3", "e2", "u3", None),
        edit("e4", "e3", "u3", "kept after all, in new words"),
    )
    assert [(e.entry_id, e.text, e.context_edited) for e in entries(session)] == [
        ("u1", "omit me", "omitted"),
        ("u2", "replace me", "replaced"),
        ("u3", "edited twice", "replaced"),  # the latest edit wins
    ]


def test_pi_context_edits_count_only_on_the_active_branch() -> None:
    session = pi_read(
        pi_user("u1", None, "root"),
        pi_user("ab", "u1", "abandoned"),
        {"type": "context_edit", "id": "e1", "parentId": "ab", "timestamp": iso(T0),
         "targetId": "u1", "replacement": None},
        pi_user("u2", "u1", "active"),
    )  # fmt: skip
    assert [(e.entry_id, e.context_edited) for e in entries(session)] == [
        ("u1", None),
        ("u2", None),
    ]


def codemode_result() -> dict[str, Any]:
    return pi_result(
        "r1", "a1", "call_cm", "codemode",
        content=[{"type": "text", "text": "Script completed\nWall time 0.8 seconds\nOutput:\n"}],
        details={"calls": [
            {"id": "call_cm/1", "name": "bash", "args": '{"command":"echo OUT"}', "status": "ok",
             "durationMs": 119.2},
            {"id": "call_cm/2", "name": "mcp__needle__explode", "args": '{"why":"x"}',
             "status": "error", "durationMs": 3.1, "error": "explode failed"},
            {"id": "call_cm/classify/1", "name": "classify", "args": "fake/model",
             "status": "cancelled", "durationMs": 4},
        ]},
        nestedCalls={"complete": True, "calls": [
            {"id": "call_cm/1", "name": "bash", "status": "ok",
             "arguments": {"command": "echo OUT"}, "durationMs": 119},
            {"id": "call_cm/2", "name": "mcp__needle__explode", "status": "error",
             "arguments": {"why": "x"}, "durationMs": 3, "error": "explode failed"},
            {"id": "call_cm/3", "name": "read", "status": "unfinished",
             "arguments": {"path": "src/a.py"}},
        ]},
    )  # fmt: skip


def test_pi_codemode_nested_calls_become_child_entries() -> None:
    session = pi_read(
        pi_user("u1", None, "Run a codemode script"),
        pi_call("a1", "u1", "call_cm", "codemode", code="await tools.bash({command: 'echo'})"),
        codemode_result(),
    )
    found = entries(session)
    assert [e.index for e in found] == list(range(len(found)))
    children = [e for e in found if e.parent_entry_id == "r1"]
    assert [
        (c.entry_id, c.tool, c.ref, c.family, c.outcome, c.is_error, c.files_touched)
        for c in children
    ] == [
        ("r1/call:call_cm/1", "bash", "pi.bash", "shell", "succeeded", False, ()),
        ("r1/call:call_cm/2", "mcp__needle__explode", "needle.explode", "mcp", "failed", True, ()),
        ("r1/call:call_cm/3", "read", "pi.read", "read", "aborted", False, ("src/a.py",)),
        ("r1/call:call_cm/classify/1", "classify", "pi.classify", "other", "aborted", False, ()),
    ]
    bash, explode = children[0], children[1]
    assert bash.text == 'Tool: bash({"command":"echo OUT"})' and bash.role == "toolResult"
    assert bash.operation_address == bash.entry_id and bash.type == "nested_tool_call"
    assert bash.operation is not None and bash.operation["durationMs"] == 119
    assert explode.text.endswith("\nError: explode failed")
    assert children[3].operation is not None and children[3].operation["args"] == "fake/model"
    carrier = found[2]
    assert (carrier.tool, carrier.family, carrier.outcome) == ("codemode", "other", "succeeded")


def test_pi_mcp_results_take_their_identity_from_details() -> None:
    session = pi_read(
        pi_user("u1", None, "look"),
        pi_call("a1", "u1", "c1", "mcp__my__srv__lookup", word="x"),
        pi_result(
            "r1",
            "a1",
            "c1",
            "mcp__my__srv__lookup",
            details={"server": "my__srv", "tool": "lookup"},
        ),  # fmt: skip
    )
    result = entries(session)[-1]
    assert (result.ref, result.provider, result.action, result.family) == (
        "my__srv.lookup", "my__srv", "lookup", "mcp",
    )  # fmt: skip


def test_pi_unknown_types_roles_and_blocks_are_counted() -> None:
    session = pi_read(
        {"type": "future_entry", "id": "f", "parentId": None, "data": 1},
        message("m1", "f", "oracle", T0, content="who knows"),
        message("m2", "m1", "user", T0, content=[{"type": "hologram"}]),
    )
    assert session.unknown == (("block:hologram", 1), ("line:future_entry", 1), ("role:oracle", 1))
    assert session.reasons == ("unknown_record_type",)


# --- no silent empty sessions ------------------------------------------------------------------


@pytest.mark.parametrize(
    ("agent", "path", "lines"),
    [
        ("pi", PI_PATH, [header("s", "/w"), {"type": "model_change", "id": "m", "parentId": None}]),
        ("claude", CLAUDE_PATH, [cl("last-prompt", None, None, lastPrompt="x")]),
        ("codex", CODEX_PATH, [cx_meta(), cx("token_usage_record", {"usage": {}})]),
    ],
)
def test_records_without_any_entry_are_named_no_entries(
    agent: str, path: str, lines: list[dict[str, Any]]
) -> None:
    session = read(agent, path, *lines)
    assert reasons(session) == ("no_entries",)
    assert reasons(session, "all") == ("no_entries",)


@pytest.mark.parametrize(
    ("agent", "path", "line"),
    [("pi", PI_PATH, header("s", "/w")), ("codex", CODEX_PATH, cx_meta())],
)
def test_a_header_alone_is_no_entries(agent: str, path: str, line: dict[str, Any]) -> None:
    session = read(agent, path, line)
    assert session.records == () and reasons(session) == ("no_entries",)


def test_an_empty_file_is_not_no_entries() -> None:
    session = read_session(b"", CODEX_PATH, "codex")
    assert normalize(session, lineage(session, "active"), Policy()).reasons == ()
    assert read_session(b"\n\n", CLAUDE_PATH, "claude").records == ()


def test_drift_counts_never_depend_on_prose() -> None:
    # the same shapes with other words: the same counts
    a = read("codex", CODEX_PATH, cx_meta(), cx("x_line", {"text": "hello"}))
    b = read("codex", CODEX_PATH, cx_meta(), cx("x_line", {"text": "<environment_context>"}))
    assert a.unknown == b.unknown and a.reasons == b.reasons == ("unknown_record_type",)


# --- the real writers' files (optional) ------------------------------------------------------

REAL = Path(os.environ.get("SESSIONDEX_REALWRITER", "/work/realwriter"))


def _real(agent: str, scenario: str) -> list[Path]:
    folder = REAL / agent / scenario
    if not folder.is_dir():
        pytest.skip(f"no capture of the real writers at {folder}")
    return sorted(folder.rglob("*.jsonl"))


@pytest.mark.real
@pytest.mark.parametrize("agent", ["pi", "claude", "codex"])
def test_real_writers_capture(agent: str) -> None:
    """The files the real CLIs wrote: MCP names, outcomes, and no system prompt as text."""
    for path in _real(agent, "mcp"):
        session = read_session(path.read_bytes(), str(path), agent)
        found = entries(session)
        heads = {(e.tool, e.ref, e.family, e.outcome) for e in found if e.role == "toolResult"}
        assert ("mcp__needle__lookup", "needle.lookup", "mcp", "succeeded") in heads
        assert ("mcp__needle__explode", "needle.explode", "mcp", "failed") in heads
        assert session.unknown == ()
    for scenario in ("shell", "resume", "mcp"):
        for path in _real(agent, scenario):
            found = entries(read_session(path.read_bytes(), str(path), agent))
            assert all("SYSMARK" not in e.text for e in found if e.role in ("user", "assistant"))
            prompts = [e.text for e in found if e.role == "user"]
            assert len(prompts) == len(set(prompts)) and all("PROMPT" in p for p in prompts)


@pytest.mark.real
def test_real_pi_codemode_children() -> None:
    for path in _real("pi", "codemode"):
        found = entries(read_session(path.read_bytes(), str(path), "pi"))
        children = [(e.tool, e.outcome) for e in found if e.type == "nested_tool_call"]
        assert ("bash", "succeeded") in children
        assert ("mcp__needle__lookup", "succeeded") in children


def test_parse_of_a_real_like_codex_line_keeps_the_ordinal_out_of_the_way() -> None:
    parsed = parse(jsonl(cx_meta(), *cx_prompt("p")))
    assert [r.value["ordinal"] for r in parsed.records] == [0, 0, 0]


def test_codex_entries_are_the_same_with_the_normalizer_memo_line_by_line() -> None:
    from stages.codex.source import read_codex
    from tests.helpers import grow_with_memo

    data = jsonl(
        cx_meta(),
        *cx_prompt("Look up haystack"),
        *cx_mcp("call_ok", "lookup", "completed", error=False),
        *cx_mcp("call_bad", "explode", "failed", error=True),
        *cx_answer("Lookup worked"),
    )
    raws = list(parse(data).records)
    grow_with_memo(raws, read_codex, CODEX_PATH, [Policy(), Policy(index_tool_output=False)])
