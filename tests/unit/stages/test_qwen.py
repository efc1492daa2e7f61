"""The Qwen Code adapter: Gemini's content shapes in uuid-threaded records.

``tests/data/qwen/real-0.24.4-shell.jsonl`` is what the real Qwen Code 0.24.4 wrote when driven
offline against the conformance suite's scripted model (the same script as Gemini CLI's
fixture: a ``grep`` that matched nothing, an ``ls`` of a missing folder, a final answer).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from stages.agents import adapter
from stages.families import tool_family
from stages.lineage import lineage
from stages.normalize import normalize
from stages.policy import Policy
from stages.source import SourceSession
from store.records import NormalizedEntry
from store.sources import folder_names

REAL = Path(__file__).parents[2] / "data" / "qwen" / "real-0.24.4-shell.jsonl"
PATH = "/h/.qwen/projects/-work-proj/chats/qq-1.jsonl"


def read(data: bytes, path: str = PATH) -> SourceSession:
    qwen = adapter("qwen")
    return qwen.read(qwen.parse(data, path), path)


def entries(session: SourceSession, branches: str = "active") -> list[NormalizedEntry]:
    return list(normalize(session, lineage(session, branches), Policy()).entries)


def record(uuid: str, parent: str | None, kind: str, **more: Any) -> dict[str, Any]:
    return {"uuid": uuid, "parentUuid": parent, "sessionId": "qq-1", "type": kind,
            "timestamp": "2026-12-01T10:00:00.000Z", "cwd": "/work/proj", "version": "0.24.4",
            **more}  # fmt: skip


def jsonl(*lines: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def test_the_real_writer_s_session_reads_with_typed_outcomes() -> None:
    session = read(REAL.read_bytes(), str(REAL))
    assert session.session_id == "6a63ecc6-6a3c-4a3a-bbc8-bd040a4055ad"
    assert session.cwd == "/tmp/gx/qwork" and session.writer_version == "0.24.4"
    assert session.reasons == () and session.unknown == ()
    found = entries(session)
    assert [(e.role, e.tool, e.outcome, e.is_error) for e in found] == [
        ("user", None, None, False),
        ("assistant", "run_shell_command", None, False),
        ("toolResult", "run_shell_command", "succeeded", False),  # grep exit 1: no match
        ("assistant", "run_shell_command", None, False),
        ("toolResult", "run_shell_command", "failed", True),  # ls exit 2, status error
        ("assistant", None, None, False),
    ]
    assert found[2].family == "shell" and found[1].operation_address is not None


def test_a_branch_left_by_a_rewind_is_off_the_active_path() -> None:
    data = jsonl(
        record("u1", None, "user", message={"role": "user", "parts": [{"text": "keep"}]}),
        record("a1", "u1", "assistant", message={"role": "model", "parts": [{"text": "gone"}]}),
        record("r1", "u1", "system", subtype="rewind", systemPayload={"truncatedCount": 1}),
        record("a2", "r1", "assistant", message={"role": "model", "parts": [{"text": "new"}]}),
    )
    session = read(data)
    assert [e.text for e in entries(session)] == ["keep", "new"]
    assert [e.text for e in entries(session, "all")] == ["keep", "gone", "new"]


def test_statuses_sidechains_and_thoughts() -> None:
    call = {"functionCall": {"id": "c1", "name": "grep_search", "args": {"pattern": "x"}}}
    thought = {"text": "pondering", "thought": True}
    response = {"functionResponse": {"id": "c1", "name": "grep_search",
                                     "response": {"output": "stopped"}}}  # fmt: skip
    data = jsonl(
        record("u1", None, "user", message={"role": "user", "parts": [{"text": "find x"}]}),
        record("a1", "u1", "assistant", message={"role": "model", "parts": [thought, call]}),
        record(
            "t1",
            "a1",
            "tool_result",
            message={"role": "user", "parts": [response]},
            toolCallResult={"callId": "c1", "status": "cancelled"},
        ),  # fmt: skip
        record(
            "s1",
            "t1",
            "assistant",
            isSidechain=True,
            agentId="explore-1",
            message={"role": "model", "parts": [{"text": "sub work"}]},
        ),  # fmt: skip
    )
    session = read(data)
    found = entries(session)
    assert found[1].text == 'Tool: grep_search({"pattern":"x"})'  # the thought is not indexed
    assert (found[2].outcome, found[2].family) == ("aborted", "search")
    assert found[3].sidechain and found[3].agent_id == "explore-1"
    shown = normalize(session, lineage(session, "active"), Policy(index_thinking=True))
    assert shown.entries[1].text.startswith("pondering\nTool: grep_search")


def test_unknown_types_subtypes_and_parts_are_drift() -> None:
    data = jsonl(
        record("u1", None, "user", message={"role": "user", "parts": [{"holo": 1}]}),
        record("x1", "u1", "system", subtype="brand_new"),
        record("x2", "x1", "vision", message={"role": "user", "parts": []}),
    )
    session = read(data)
    assert dict(session.unknown) == {"part:holo": 1, "subtype:brand_new": 1, "type:vision": 1}
    assert "unknown_record_type" in session.reasons


def test_the_project_folder_is_the_cwd_with_every_other_character_a_dash() -> None:
    rules = adapter("qwen").folders
    assert folder_names(rules, ["/tmp/gx/qwork"], {}) == {"-tmp-gx-qwork"}
    assert tool_family("qwen", "run_shell_command") == "shell"
    assert tool_family("qwen", "mcp__gh__list") == "mcp"
