"""The Gemini CLI adapter: the writer's JSONL replayed as its own loader reads it.

``tests/data/gemini/real-0.61.0-shell.jsonl`` is what the real Gemini CLI 0.61.0 wrote when
driven offline against the conformance suite's scripted model (a ``grep`` that matched
nothing, an ``ls`` of a missing folder, a final answer). The other sessions are built here
after ``ChatRecordingService`` (upserts, ``$rewindTo``, ``$set`` checkpoints, subagents, the
legacy one-object file).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import orjson

from stages.agents import adapter
from stages.families import tool_family, tool_identity
from stages.gemini.parts import envelope_exit_code
from stages.gemini.source import REWIND
from stages.lineage import lineage
from stages.normalize import normalize
from stages.policy import Policy
from stages.source import SourceSession
from store.reasons import NO_ENTRIES
from store.records import NormalizedEntry

REAL = Path(__file__).parents[2] / "data" / "gemini" / "real-0.61.0-shell.jsonl"
CHATS = "/h/.gemini/tmp/proj/chats"
PATH = f"{CHATS}/session-2026-12-01T10-00-aaaa0001.jsonl"
HEADER = {
    "sessionId": "aaaa0001-0000-4000-8000-000000000001",
    "projectHash": "f" * 64,
    "startTime": "2026-12-01T10:00:00.000Z",
    "lastUpdated": "2026-12-01T10:00:00.000Z",
    "kind": "main",
}


def jsonl(*lines: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def read(data: bytes, path: str = PATH) -> SourceSession:
    gemini = adapter("gemini")
    return gemini.read(gemini.parse(data, path), path)


def entries(
    session: SourceSession, branches: str = "active", policy: Policy | None = None
) -> list[NormalizedEntry]:
    return list(normalize(session, lineage(session, branches), policy or Policy()).entries)


def user(mid: str, text: str, **more: Any) -> dict[str, Any]:
    return {"id": mid, "timestamp": "2026-12-01T10:00:01.000Z", "type": "user",
            "content": [{"text": text}], **more}  # fmt: skip


def model(mid: str, text: str = "", calls: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    turn: dict[str, Any] = {"id": mid, "timestamp": "2026-12-01T10:00:02.000Z", "type": "gemini",
                            "content": text, "thoughts": [], "model": "gemini-3"}  # fmt: skip
    if calls is not None:
        turn["toolCalls"] = calls
    return turn


def shell(call_id: str, command: str, status: str, output: str) -> dict[str, Any]:
    response = {"functionResponse": {"id": call_id, "name": "run_shell_command",
                                     "response": {"output": output}}}  # fmt: skip
    return {"id": call_id, "name": "run_shell_command", "args": {"command": command},
            "result": [response], "status": status,
            "timestamp": "2026-12-01T10:00:03.000Z"}  # fmt: skip


def test_the_real_writer_s_session_reads_with_typed_outcomes() -> None:
    session = read(REAL.read_bytes(), str(REAL))
    assert session.session_id == "0a78efbe-3283-4f5b-b1b9-5ba5f9abe164"
    assert session.reasons == () and session.unknown == ()
    assert not session.sidechain and session.parent_session is None
    found = entries(session)
    # The injected <session_context> turn and the functionResponse echoes are not user text;
    # each model turn written twice (before and after its tool ran) is one entry, as last written
    assert [(e.role, e.tool, e.outcome) for e in found] == [
        ("user", None, None),
        ("assistant", "run_shell_command", None),
        ("toolResult", "run_shell_command", "succeeded"),  # grep exit 1: no match
        ("assistant", "run_shell_command", None),
        ("toolResult", "run_shell_command", "failed"),  # ls exit 2
        ("assistant", None, None),
    ]
    assert found[0].text == "check the hostname for zzqqxx"
    assert found[1].text == 'Tool: run_shell_command({"command":"grep zzqqxx /etc/hostname"})'
    assert found[1].family == "shell" and found[1].operation_address is not None
    assert found[4].is_error
    assert found[4].text.startswith("toolResult(run_shell_command) [error]: <untrusted_context>")
    assert "glimmerquartz" in found[5].text
    # Earlier versions and metadata lines are no records: "all" is "active" (one stored view)
    assert len(session.records) == 7
    assert lineage(session, "all").selected == lineage(session, "active").selected


def test_a_rewritten_turn_keeps_its_place_and_its_last_version_wins() -> None:
    data = jsonl(
        HEADER,
        user("u1", "first question"),
        model("m1", "thinking about it"),
        user("u2", "second question"),
        model("m1", "final answer for the first", calls=[]),
    )
    session = read(data)
    found = entries(session)
    # Entries follow the file, as on every agent: the rewrite is listed where it was written
    assert [(e.entry_id, e.text) for e in found] == [
        ("u1", "first question"),
        ("u2", "second question"),
        ("m1", "final answer for the first"),
    ]
    # u2 hangs under m1 (the rewrite took m1's place, not a new one)
    by_id = {r.id: r for r in session.records if r.id}
    assert by_id["u2"].parent_id == "m1" and by_id["m1"].parent_id == "u1"


def test_a_rewind_retracts_the_turns_from_the_active_path_but_not_from_all() -> None:
    data = jsonl(
        HEADER,
        user("u1", "keep this"),
        model("m1", "kept answer"),
        user("u2", "retracted zebraword"),
        model("m2", "retracted answer"),
        {"$rewindTo": "u2"},
        {"$set": {"lastUpdated": "2026-12-01T10:05:00.000Z"}},
        user("u3", "the new question"),
        model("m3", "the new answer"),
    )
    session = read(data)
    assert session.extra["retracted"] == 2
    active = [e.text for e in entries(session)]
    assert active == ["keep this", "kept answer", "the new question", "the new answer"]
    every = [e.text for e in entries(session, "all")]
    assert "retracted zebraword" in every and "retracted answer" in every
    # A session that ends on its rewind has the survivor as its active leaf
    ended = read(jsonl(HEADER, user("u1", "keep"), model("m1", "ok"), user("u2", "gone"),
                       {"$rewindTo": "u2"}))  # fmt: skip
    chosen = lineage(ended, "active")
    assert [e.text for e in entries(ended)] == ["keep", "ok"]
    assert chosen.path_ids[-2] == "m1" and ended.records[-1].kind == REWIND


def test_a_rewind_to_an_unknown_id_clears_everything_as_the_writer_does() -> None:
    session = read(jsonl(HEADER, user("u1", "gone"), {"$rewindTo": "nope"}, user("u2", "kept")))
    assert [e.text for e in entries(session)] == ["kept"]


def test_a_checkpoint_orders_the_conversation_and_its_copies_are_no_versions() -> None:
    data = jsonl(
        HEADER,
        user("u1", "original prompt"),
        model("m1", "long answer"),
        user("u9", "dropped by the checkpoint"),
        {
            "$set": {
                "messages": [
                    user("u1", "original prompt"),
                    model("m1", "masked answer"),
                    user("s1", "a summary turn"),
                ],
                "lastUpdated": "2026-12-01T10:09:00.000Z",
            }
        },  # fmt: skip
        user("u2", "after the checkpoint"),
    )
    session = read(data)
    # A copy of a written message is no new version (the text stays what was written); a
    # message only the checkpoint holds is a record of its line; what it leaves out is off
    # the active path
    assert [e.text for e in entries(session)] == [
        "original prompt",
        "long answer",
        "a summary turn",
        "after the checkpoint",
    ]
    assert "dropped by the checkpoint" in [e.text for e in entries(session, "all")]
    line_of = {r.id: r.line for r in session.records if r.id}
    assert line_of["m1"] == 3 and line_of["s1"] == 5 and line_of["u2"] == 6


def test_a_resumed_session_keeps_its_tool_calls() -> None:
    # Gemini CLI 0.61.0 on --resume: a second header, then checkpoints re-serializing the
    # history without toolCalls and with function responses under the turns' own ids
    path = REAL.with_name("real-0.61.0-resume.jsonl")
    session = read(path.read_bytes(), str(path))
    found = entries(session)
    assert [(e.role, e.tool, e.outcome) for e in found] == [
        ("user", None, None),
        ("assistant", "read_file", None),
        ("toolResult", "read_file", "succeeded"),
        ("assistant", "run_shell_command", None),
        ("toolResult", "run_shell_command", "failed"),
        ("assistant", None, None),
        ("user", None, None),
        ("assistant", None, None),
    ]
    assert found[1].files_touched == ("/tmp/gx/work/notes.txt",)
    # The function-response turns only the checkpoint holds (``<id>_response``) hang beside
    # the written chain: in "all", giving no entry
    every = entries(session, "all")
    assert [e.entry_id for e in every] == [e.entry_id for e in found]


def test_a_resume_in_a_later_minute_leaves_a_file_with_no_conversation() -> None:
    # Gemini CLI 0.61.0 on --resume first opens a new recording named by the current minute
    # and the resumed session's id (a header and the injected session context), then goes
    # on in the resumed file: a resume in another minute than the session's file name leaves
    # this second file behind (captured from the real writer). It is no conversation.
    path = REAL.with_name("real-0.61.0-resume-next-minute.jsonl")
    session = read(path.read_bytes(), str(path))
    assert session.session_id == "0be03ebd-d8ea-48cc-806c-0e0bcb23ecf5"
    result = normalize(session, lineage(session, "active"), Policy())
    assert result.entries == ()
    assert NO_ENTRIES in result.reasons


def test_tool_statuses_are_outcomes_and_an_unfinished_call_has_none() -> None:
    failed = shell("c1", "make test", "error", "boom")
    failed["result"][0]["functionResponse"]["response"] = {"error": "boom"}
    cancelled = shell("c2", "sleep 100", "cancelled", "")
    running = {"id": "c3", "name": "read_file", "args": {"file_path": "/w/a.py"},
               "status": "executing", "timestamp": "2026-12-01T10:00:03.000Z"}  # fmt: skip
    nonzero = shell("c4", "rg needle src", "success", "Output: (empty)\nExit Code: 2")
    session = read(jsonl(HEADER, model("m1", calls=[failed, cancelled, running, nonzero])))
    found = entries(session, policy=Policy(index_tool_output=True))
    turn = found[0]
    assert turn.tool == "run_shell_command" and turn.files_touched == ("/w/a.py",)
    assert turn.operation_address == "m1/call:c1"
    assert [(e.entry_id, e.outcome, e.is_error) for e in found[1:]] == [
        ("m1/result:c1", "failed", True),
        ("m1/result:c2", "aborted", False),
        ("m1/result:c4", "failed", True),  # rg's 2 is an error, unlike its 1
    ]
    assert found[1].text == "toolResult(run_shell_command) [error]: boom"


def test_thoughts_are_indexed_only_when_asked() -> None:
    turn = model("m1", "the answer")
    turn["thoughts"] = [{"subject": "Planning", "description": "look at the tests",
                         "timestamp": "2026-12-01T10:00:02.000Z"}]  # fmt: skip
    session = read(jsonl(HEADER, turn))
    assert [e.text for e in entries(session)] == ["the answer"]
    shown = entries(session, policy=Policy(index_thinking=True))
    assert shown[0].text == "Planning: look at the tests\nthe answer"


def test_display_content_is_what_the_person_typed() -> None:
    typed = user("u1", "--- Content from referenced files ---\nbig file", displayContent=[
        {"text": "explain @a.py"}])  # fmt: skip
    hook = user("u2", "<hook_context>injected</hook_context>")
    session = read(jsonl(HEADER, typed, hook))
    assert [e.text for e in entries(session)] == ["explain @a.py"]


def test_a_subagent_is_a_sidechain_of_the_session_its_folder_names() -> None:
    parent = "aaaa0001-0000-4000-8000-000000000001"
    path = f"{CHATS}/{parent}/sub-7.jsonl"
    header = {**HEADER, "sessionId": "sub-7", "kind": "subagent", "directories": ["/work/proj"]}
    session = read(jsonl(header, user("s1", "investigate"), model("s2", "found it")), path)
    assert session.sidechain and session.parent_session == parent
    assert session.cwd == "/work/proj"
    found = entries(session)
    assert all(e.sidechain and e.agent_id == "sub-7" for e in found)


def test_the_legacy_one_object_file_reads_like_the_jsonl() -> None:
    legacy = {**HEADER, "messages": [user("u1", "legacy prompt"), model("m1", "legacy answer")]}
    data = orjson.dumps(legacy, option=orjson.OPT_INDENT_2)
    path = f"{CHATS}/session-2025-09-01T10-00-aaaa0001.json"
    gemini = adapter("gemini")
    assert gemini.files.read_whole(path) and gemini.files.matches("session-x.json")
    assert not gemini.files.matches("logs.json") and not gemini.files.matches("checkpoint-a.json")
    session = read(data, path)
    assert session.session_id == HEADER["sessionId"] and session.reasons == ()
    found = entries(session)
    assert [e.text for e in found] == ["legacy prompt", "legacy answer"]
    text = data.decode()
    for entry in found:  # each record points at the line its message starts on
        assert text.split("\n")[entry.line - 1].strip() == "{"
        assert data[entry.offset :].startswith(text.split("\n")[entry.line - 1].encode())
    # A half-written file is malformed, not an error
    broken = read(data[:40], path)
    assert broken.records == () and "malformed_line" in broken.reasons


def test_unknown_types_and_parts_are_drift() -> None:
    odd = {"id": "x1", "timestamp": "2026-12-01T10:00:01.000Z", "type": "hologram",
           "content": "?"}  # fmt: skip
    part = user("u1", "hi")
    part["content"].append({"telepathy": {"x": 1}})
    session = read(jsonl(HEADER, odd, part, {"strange": 1}))
    assert dict(session.unknown) == {"line:strange": 1, "part:telepathy": 1, "type:hologram": 1}
    assert "unknown_record_type" in session.reasons
    headless = read(jsonl(user("u1", "hi")))
    assert "missing_session_header" in headless.reasons


def test_mcp_tools_have_their_server_s_identity() -> None:
    assert tool_identity("gemini", "mcp_github_create_issue") == (
        "github.create_issue",
        "github",
        "create_issue",
    )
    assert tool_family("gemini", "mcp_github_create_issue") == "mcp"
    assert tool_family("gemini", "grep_search") == "search"
    assert tool_family("gemini", "mcp_") == "other"


def test_the_exit_code_comes_from_the_envelope_never_from_the_output() -> None:
    assert envelope_exit_code("<untrusted_context>\nOutput: x\nExit Code: 3\n"
                              "Process Group PGID: 9\n</untrusted_context>") == 3  # fmt: skip
    assert envelope_exit_code("Output: Exit Code: 5\nProcess Group PGID: 9") is None
    assert envelope_exit_code("Output: fine\nProcess Group PGID: 9") is None
    assert envelope_exit_code("Command: ls\nExit Code: 2\nSignal: (none)\n"
                              "Process Group PGID: (none)") == 2  # fmt: skip


def test_only_files_under_chats_are_sessions() -> None:
    """The devtools activity log ``<project>/logs/session-*.jsonl`` has a session's name but
    is no session; a chat and a subagent's chat (``chats/<parent id>/``) are."""
    files = adapter("gemini").files
    assert files.holds(PATH) and files.holds(f"{CHATS}/0a78efbe/sub-7.jsonl")
    assert files.holds(f"{CHATS}/session-2025-09-01T10-00-aaaa0001.json")
    assert not files.holds("/h/.gemini/tmp/proj/logs/session-x.jsonl")
    assert not files.holds("/h/.gemini/tmp/proj/session-x.jsonl")
    qwen = adapter("qwen").files
    assert qwen.holds("/h/.qwen/projects/-work-proj/chats/qq-1.jsonl")
    assert not qwen.holds("/h/.qwen/projects/-work-proj/logs/qq-1.jsonl")


def test_a_main_session_s_cwd_is_its_project_folder_s_typed_root(tmp_path: Path) -> None:
    # Gemini CLI's ProjectRegistry names ``tmp/<project>/`` and writes the project's root into
    # ``<project>/.project_root`` (plain text); the session file itself names only a hash
    from pipeline.discovery import subagent_meta

    gemini = adapter("gemini")
    chats = tmp_path / "tmp" / "proj" / "chats"
    chats.mkdir(parents=True)
    main = chats / "session-2026-12-01T10-00-aaaa0001.jsonl"
    main.write_bytes(jsonl(HEADER))
    sub = chats / HEADER["sessionId"] / "bbbb0002.jsonl"
    sub.parent.mkdir()
    sub.write_bytes(jsonl({**HEADER, "kind": "subagent", "directories": ["/w/sub"]}))
    assert gemini.sidecar(str(main)) == str(tmp_path / "tmp" / "proj" / ".project_root")
    assert gemini.sidecar(str(sub)) == gemini.sidecar(str(main))
    assert subagent_meta(str(main), "gemini") is None  # no marker: the cwd stays unknown
    assert read(jsonl(HEADER), str(main)).cwd == ""

    (tmp_path / "tmp" / "proj" / ".project_root").write_text("/home/a/proj\n")
    marker = subagent_meta(str(main), "gemini")
    assert marker is not None
    session = gemini.read(gemini.parse(jsonl(HEADER), str(main)), str(main), marker)
    assert session.cwd == "/home/a/proj"
    # a subagent's own ``directories`` come first
    data = sub.read_bytes()
    assert gemini.read(gemini.parse(data, str(sub)), str(sub), marker).cwd == "/w/sub"
    # a marker that is no one path is no cwd
    for bad in (b"", b"  \n", b"/a\n/b", b"\xff\xfe"):
        (tmp_path / "tmp" / "proj" / ".project_root").write_bytes(bad)
        assert subagent_meta(str(main), "gemini") is None, bad
