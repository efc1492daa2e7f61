"""Codex: the adapter (shapes, ids, parent threads, fork copies) and the normalizer's rules."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stages.codex.normalize import INJECTED_OPENERS, normalize_codex
from stages.codex.source import FORKED_COPY, read_codex
from stages.lineage import lineage
from stages.parse import parse
from stages.policy import Policy
from stages.source import SourceSession
from store.records import NormalizedEntry
from tests.helpers import codex_object_rollout, codex_said

REAL = Path(__file__).parents[3].parent / "shared" / "fixtures" / "real" / "codex"
TID = "019b64e5-57fa-7463-b644-fba7e456f905"
PATH = f"/h/.codex/sessions/2026/01/02/rollout-2026-01-02T03-04-05-{TID}.jsonl"
TS = "2026-01-02T03:04:05.678Z"


# --- builders --------------------------------------------------------------------------------


def line(kind: str, payload: dict[str, Any], ts: str = TS) -> dict[str, Any]:
    return {"timestamp": ts, "type": kind, "payload": payload}


def meta(thread: str = TID, **fields: Any) -> dict[str, Any]:
    return line("session_meta", {"id": thread, "timestamp": TS, "cwd": "/repo", **fields})


def item(kind: str, /, **fields: Any) -> dict[str, Any]:
    return line("response_item", {"type": kind, **fields})


def event(kind: str, /, **fields: Any) -> dict[str, Any]:
    return line("event_msg", {"type": kind, **fields})


def said(role: str, *texts: str, **fields: Any) -> dict[str, Any]:
    kind = "output_text" if role == "assistant" else "input_text"
    content = [{"type": kind, "text": t} for t in texts]
    return item("message", role=role, content=content, **fields)


def turn(turn_id: str | None = None, **fields: Any) -> dict[str, Any]:
    payload = {"cwd": "/repo", "model": "gpt", **fields}
    if turn_id is not None:
        payload["turn_id"] = turn_id
    return line("turn_context", payload)


def jsonl(*lines: dict[str, Any]) -> bytes:
    return b"".join(orjson.dumps(x) + b"\n" for x in lines)


def read(*lines: dict[str, Any], path: str = PATH) -> SourceSession:
    return read_codex(parse(jsonl(*lines)), path)


def entries(
    session: SourceSession, branches: str = "active", policy: Policy | None = None
) -> tuple[NormalizedEntry, ...]:
    return normalize_codex(session, lineage(session, branches), policy or Policy()).entries


def roles(found: tuple[NormalizedEntry, ...]) -> list[tuple[str | None, str]]:
    return [(e.role, e.text) for e in found]


# --- shapes, identity, ids -------------------------------------------------------------------


def test_envelope_rollout_identity_ids_and_linear_parents() -> None:
    session = read(
        meta(cli_version="0.77.0", originator="codex_cli_rs"),
        turn(),
        said("user", "hello"),
        said("assistant", "hi"),
    )
    assert (session.agent, session.session_id, session.cwd) == ("codex", TID, "/repo")
    assert session.header is not None and session.header["type"] == "session_meta"
    assert session.extra == {"cli_version": "0.77.0", "originator": "codex_cli_rs"}
    assert [(r.position, r.id, r.parent_id, r.kind) for r in session.records] == [
        (0, "L2", None, "turn_context"),
        (1, "L3", "L2", "response_item"),
        (2, "L4", "L3", "response_item"),
    ]
    assert lineage(session, "active").path_ids == ("L2", "L3", "L4")
    found = entries(session)
    assert [(e.entry_id, e.parent_id, e.role, e.text, e.timestamp, e.agent) for e in found] == [
        ("L3", "L2", "user", "hello", 1767323045678, "codex"),
        ("L4", "L3", "assistant", "hi", 1767323045678, "codex"),
    ]


def test_concatenated_objects_get_suffixed_ids_and_malformed_lines_a_reason() -> None:
    data = jsonl(meta()) + orjson.dumps(said("user", "a")) + orjson.dumps(said("user", "b"))
    data += b"\nnot json\n" + jsonl(said("assistant", "c"))
    session = read_codex(parse(data), PATH)
    assert session.reasons == ("malformed_line",)
    assert [r.id for r in session.records] == ["L2", "L2.1", "L4"]
    assert [e.text for e in entries(session)] == ["a", "b", "c"]


def test_bare_jsonl_of_the_earlier_era_is_read() -> None:
    session = read(
        {"id": TID, "timestamp": TS, "instructions": None, "git": {"branch": "main"}},
        {"record_type": "state", "previous_response_id": "r1"},
        codex_said("user", "fix it"),
        {
            "type": "function_call",
            "name": "shell",
            "arguments": '{"command":["ls"]}',
            "call_id": "c",
        },
        {"type": "function_call_output", "call_id": "c", "output": "a.txt"},
        {
            "type": "message",
            "role": "assistant",
            "content": [{"type": "output_text", "text": "ok"}],
        },
    )
    assert session.session_id == TID and session.cwd == ""
    assert [r.kind for r in session.records] == ["state", *["response_item"] * 4]
    assert [(e.role, e.text, e.timestamp) for e in entries(session)] == [
        ("user", "fix it", None),
        ("assistant", 'Tool: shell({"command":["ls"]})', None),
        ("toolResult", "toolResult(shell): a.txt", None),
        ("assistant", "ok", None),
    ]


def test_without_a_meta_line_the_stem_names_the_session_and_turn_context_the_cwd() -> None:
    session = read(turn(cwd="/elsewhere"), said("user", "x"), path="/s/rollout-x.jsonl")
    assert (session.session_id, session.cwd, session.header) == ("rollout-x", "/elsewhere", None)
    assert [r.id for r in session.records] == ["L1", "L2"]


# --- injected context --------------------------------------------------------------------------


@pytest.mark.parametrize("opener", INJECTED_OPENERS)
def test_each_injected_opener_keeps_an_item_out_of_user_text(opener: str) -> None:
    session = read(meta(), said("user", f"{opener} something"), said("user", f"  {opener}"))
    assert entries(session) == ()


def test_injected_context_kinds_never_become_user_text() -> None:
    session = read(
        meta(),
        said("developer", "<permissions instructions>"),
        said("system", "you are codex"),
        said("user", "# AGENTS.md instructions for /repo\n\n<INSTRUCTIONS>x</INSTRUCTIONS>"),
        said("user", "<environment_context>\n  <cwd>/repo</cwd>\n</environment_context>"),
        said("user", "# Context from my IDE setup:\n\n## Active file: a.py\n"),
        item(
            "message",
            role="user",
            content=[
                {"type": "input_text", "text": "<image name=[Image #1]>"},
                {"type": "input_image", "image_url": "data:image/png;base64,AAAA"},
                {"type": "input_text", "text": "</image>"},
                {"type": "input_text", "text": "what is in this picture?"},
            ],
        ),
        said(
            "user",
            "<environment_context><cwd>/repo</cwd></environment_context>",
            internal_chat_message_metadata_passthrough={
                "content_item_kinds": ["environments.environment_context"]
            },
        ),
        said(
            "user",
            "typed by a person",
            internal_chat_message_metadata_passthrough={"content_item_kinds": ["user.text"]},
        ),
        event("user_message", message="<environment_context>x", images=[]),
        event("user_message", message="instructions", kind="user_instructions"),
    )
    assert roles(entries(session)) == [
        ("user", "what is in this picture?"),
        ("user", "typed by a person"),
    ]


# --- event_msg copies --------------------------------------------------------------------------


def test_event_msg_copies_of_messages_are_not_indexed_twice() -> None:
    session = read(
        meta(),
        event("user_message", message="List the files", images=[]),
        said("user", "List the files"),
        item("reasoning", summary=[{"type": "summary_text", "text": "thinking hard"}]),
        event("agent_reasoning", text="thinking hard"),
        said("assistant", "Found 2 files."),
        event("agent_message", message="Found 2 files."),
        event("task_complete", last_agent_message="Found 2 files."),
    )
    assert roles(entries(session)) == [("user", "List the files"), ("assistant", "Found 2 files.")]
    thinking = entries(session, policy=Policy(index_thinking=True))
    assert [(e.type, e.text) for e in thinking] == [
        ("message", "List the files"),
        ("reasoning", "thinking hard"),
        ("message", "Found 2 files."),
    ]


def test_a_rollout_holding_only_events_still_yields_its_conversation() -> None:
    session = read(
        meta(),
        event("user_message", message="Please sync the docs.", images=[], kind="plain"),
        event("agent_reasoning", text="Reviewing the files."),
        event("agent_message", message="Synced."),
    )
    assert roles(entries(session)) == [("user", "Please sync the docs."), ("assistant", "Synced.")]
    assert [e.type for e in entries(session, policy=Policy(index_thinking=True))] == [
        "message",
        "reasoning",
        "message",
    ]


# --- tools: arguments, call_id pairing, exit codes ----------------------------------------------


def test_calls_parse_their_json_arguments_and_keep_bad_json_raw() -> None:
    patch = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch"
    session = read(
        meta(),
        item("function_call", name="read_file", arguments='{"path":"src/a.py","limit":3}',
             call_id="c1"),
        item("function_call", name="shell", arguments='{"command": ["ls"', call_id="c2"),
        item("custom_tool_call", name="apply_patch", input=patch, call_id="c3"),
        item("local_shell_call", call_id="c4", status="completed",
             action={"type": "exec", "command": ["git", "status"], "working_directory": "/repo"}),
        item("web_search_call", status="completed", action={"type": "search", "query": "orjson"}),
        item("function_call", name="spawn_agent", namespace="multi_agent_v1", arguments="x" * 500,
             call_id="c5"),
    )  # fmt: skip
    found = entries(session)
    assert [(e.tool, e.ref, e.provider, e.action) for e in found] == [
        ("read_file", "codex.read_file", "codex", "read_file"),
        ("shell", "codex.shell", "codex", "shell"),
        ("apply_patch", "codex.apply_patch", "codex", "apply_patch"),
        ("local_shell", "codex.local_shell", "codex", "local_shell"),
        ("web_search", "codex.web_search", "codex", "web_search"),
        ("spawn_agent", "codex.spawn_agent", "codex", "spawn_agent"),
    ]
    assert [e.text for e in found[:5]] == [
        'Tool: read_file({"path":"src/a.py","limit":3})',
        'Tool: shell({"command": ["ls")',
        f"Tool: apply_patch({patch})",
        'Tool: local_shell({"type":"exec","command":["git","status"],"working_directory":"/repo"})',
        'Tool: web_search({"type":"search","query":"orjson"})',
    ]
    assert found[5].text == f"Tool: spawn_agent({'x' * 400}…)"
    assert [e.operation_address for e in found] == [
        "L2/call:c1",
        "L3/call:c2",
        "L4/call:c3",
        "L5/call:c4",
        None,
        "L7/call:c5",
    ]
    # "working_directory" is not a path key under the typed-key rule /(?:file|path)s?$/i.
    assert [e.files_touched for e in found] == [("src/a.py",), (), (), (), (), ()]
    assert all(e.role == "assistant" and not e.is_error and e.outcome is None for e in found)


def test_absent_arguments_summarize_as_nothing_and_null_as_null() -> None:
    session = read(
        meta(),
        item("web_search_call", status="completed"),
        item("function_call", name="ping", call_id="c1"),
        item("function_call", name="ping", arguments=None, call_id="c2"),
    )
    assert [e.text for e in entries(session)] == [
        "Tool: web_search()",
        "Tool: ping()",
        "Tool: ping(null)",
    ]


def test_outputs_pair_by_call_id_and_exit_codes_give_outcomes() -> None:
    legacy = '{"output":"boom","metadata":{"exit_code":1,"duration_seconds":0.1}}'
    freeform = "Exit code: 0\nWall time: 1 seconds\nOutput:\nok"
    unified = (
        "Chunk ID: 9\nWall time: 0.2\nProcess exited with code 2\nOriginal token count: 5\n"
        "Output:\nProcess exited with code 0"
    )
    calls = [
        item("function_call", name=f"tool{n}", arguments="{}", call_id=f"c{n}") for n in range(8)
    ]
    session = read(
        meta(),
        *calls,
        item("function_call_output", call_id="c0", output=legacy),
        item("function_call_output", call_id="c1", output=freeform),
        item("function_call_output", call_id="c2", output=unified),
        item("function_call_output", call_id="c3", output="no header here"),
        item("function_call_output", call_id="c4", output="Exit code: 0\nOutput:\n"),
        event("exec_command_end", call_id="c4", exit_code=127, aggregated_output=""),
        item("custom_tool_call_output", call_id="c5",
             output=[{"type": "input_text", "text": "Success."}, {"type": "input_image"}]),
        event("patch_apply_end", call_id="c5", success=False),
        item("function_call_output", call_id="c6", output={"type": "input_text", "text": "odd"}),
        item("function_call_output", call_id="missing", output="orphan"),
    )  # fmt: skip
    results = [e for e in entries(session) if e.role == "toolResult"]
    assert [(e.tool, e.outcome, e.is_error, e.text) for e in results] == [
        ("tool0", "failed", True, "toolResult(tool0) [error]: boom"),
        ("tool1", "succeeded", False, f"toolResult(tool1): {freeform}"),
        ("tool2", "failed", True, f"toolResult(tool2) [error]: {unified}"),
        ("tool3", None, False, "toolResult(tool3): no header here"),
        ("tool4", "failed", True, "toolResult(tool4) [error]: Exit code: 0\nOutput:\n"),
        ("tool5", "failed", True, "toolResult(tool5) [error]: Success."),
        ("tool6", None, False, "toolResult(tool6): odd"),
        (None, None, False, "toolResult: orphan"),
    ]  # fmt: skip
    assert [e.ref for e in results][-2:] == ["codex.tool6", None]
    assert all(e.operation_address is None for e in results)
    quiet = [e.text for e in entries(session, policy=Policy(index_tool_output=False))]
    assert quiet[8:10] == ["toolResult(tool0) [error]", "toolResult(tool1)"]


# --- reasoning and compaction -------------------------------------------------------------------


def test_reasoning_follows_index_thinking_and_encrypted_reasoning_has_no_text() -> None:
    session = read(
        meta(),
        item(
            "reasoning",
            summary=[{"type": "summary_text", "text": "**Plan**"}],
            content=[{"type": "reasoning_text", "text": "step one"}],
            encrypted_content="gAAAA",
        ),
        item("reasoning", summary=[], content=None, encrypted_content="gAAAA"),
    )
    assert entries(session) == ()
    found = entries(session, policy=Policy(index_thinking=True))
    assert [(e.type, e.role, e.text) for e in found] == [
        ("reasoning", "assistant", "**Plan**\nstep one"),
        ("reasoning", "assistant", ""),
    ]


def test_compacted_items_become_compaction_summaries() -> None:
    session = read(
        meta(),
        line("compacted", {"message": "We fixed the parser."}),
        line("compacted", {"message": "", "replacement_history": [said("user", "old")["payload"]]}),
        event("context_compacted"),
    )
    assert [(e.type, e.role, e.text) for e in entries(session)] == [
        ("compaction", "compactionSummary", "compaction: We fixed the parser."),
    ]


# --- parent threads, subagents, forks ---------------------------------------------------------

CHILD = "019f0000-0000-7000-8000-00000000c0de"  # UUIDv7 minted at 0x019f00000000 ms
PARENT = "019e0000-0000-7000-8000-0000000000aa"
OLD_TURN = "019e0000-0001-7000-8000-000000000001"  # minted before the child
NEW_TURN = "019f0000-0001-7000-8000-000000000002"  # minted after the child


def test_a_subagent_rollout_links_to_its_parent_thread_and_is_a_sidechain() -> None:
    spawn = {"subagent": {"thread_spawn": {"parent_thread_id": PARENT, "depth": 1}}}
    session = read(
        meta(CHILD, session_id=PARENT, source=spawn, agent_nickname="scout"),
        meta(PARENT),  # a subagent repeats its parent's meta without copying history
        turn(NEW_TURN),
        said("user", "find the bug"),
        said("assistant", "in parse.py"),
    )
    assert (session.session_id, session.parent_session, session.sidechain) == (CHILD, PARENT, True)
    assert session.extra["parent_thread_id"] == PARENT
    assert FORKED_COPY not in {r.kind for r in session.records}
    assert [(e.role, e.sidechain) for e in entries(session)] == [
        ("user", True),
        ("assistant", True),
    ]
    # Through the dispatcher every entry names the subagent: its own thread, as the parent knows it
    from stages.normalize import normalize

    found = normalize(session, lineage(session, "active"), Policy()).entries
    assert {(e.sidechain, e.agent_id, e.parent_call_id) for e in found} == {(True, CHILD, None)}


def test_era_d_parent_thread_id_is_the_link_when_no_spawn_source_names_one() -> None:
    session = read(meta(CHILD, parent_thread_id=PARENT, thread_source="subagent"))
    assert (session.parent_session, session.sidechain) == (PARENT, True)


def forked(*own: dict[str, Any]) -> SourceSession:
    return read(
        meta(CHILD, forked_from_id=PARENT),
        meta(PARENT),
        event("task_started", turn_id=OLD_TURN, started_at=1),
        turn(OLD_TURN),
        said("user", "parent question"),
        said("assistant", "parent answer"),
        event("task_complete", turn_id=OLD_TURN),
        *own,
    )


def test_a_fork_does_not_index_the_history_it_copied_from_its_parent() -> None:
    session = forked(
        event("task_started", turn_id=NEW_TURN),
        turn(NEW_TURN),
        said("user", "child question"),
        said("assistant", "child answer"),
    )
    assert session.parent_session == PARENT and not session.sidechain
    assert session.extra == {"forked_from_id": PARENT, "forked_copies": 6}
    kinds = [r.kind for r in session.records]
    assert kinds[:6] == [FORKED_COPY] * 6 and FORKED_COPY not in kinds[6:]
    assert not any(r.leaf_candidate for r in session.records[:6])
    assert lineage(session, "active").path_ids == ("L8", "L9", "L10", "L11")
    assert session.records[6].parent_id is None
    for branches in ("active", "all"):
        assert roles(entries(session, branches)) == [
            ("user", "child question"),
            ("assistant", "child answer"),
        ]


def test_an_empty_fork_has_no_entries_of_its_own() -> None:
    session = forked()
    assert lineage(session, "active").path_ids == ()
    assert entries(session, "all") == ()


def test_non_v7_turn_ids_fall_back_to_started_at_then_end_the_copy() -> None:
    legacy_old = "6f9619ff-8b86-4011-b42d-00c04fc964ff"
    session = read(
        meta(CHILD, forked_from_id=PARENT),
        meta(PARENT),
        event("task_started", turn_id=legacy_old, started_at=1_000),  # long before the child
        turn(legacy_old),  # same turn: decided by its task_started
        said("user", "copied"),
        turn(),  # no evidence at all: the copy ends rather than hide the child's turns
        said("user", "mine"),
    )
    assert [r.kind for r in session.records][:4] == [FORKED_COPY] * 4
    assert roles(entries(session)) == [("user", "mine")]


def test_a_fork_without_a_usable_creation_time_copies_nothing() -> None:
    child = meta("not-a-uuid", forked_from_id=PARENT)
    del child["payload"]["timestamp"]
    del child["timestamp"]
    session = read(child, meta(PARENT), said("user", "kept"))
    assert roles(entries(session)) == [("user", "kept")]


# --- property: arbitrary input never raises ---------------------------------------------------

_KEYS = st.sampled_from(
    ["type", "payload", "timestamp", "id", "role", "content", "text", "name", "arguments",
     "input", "call_id", "output", "message", "kind", "turn_id", "started_at", "forked_from_id",
     "source", "subagent", "record_type", "summary", "exit_code", "success", "action"]
)  # fmt: skip
_SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**63), max_value=2**63 - 1),
    st.floats(allow_nan=True),
    st.sampled_from(["session_meta", "response_item", "event_msg", "turn_context", "message",
                     "user", "assistant", "function_call", "function_call_output", "reasoning",
                     "user_message", "task_started", CHILD, PARENT, OLD_TURN, NEW_TURN, "c1",
                     '{"path":"a"}', "Exit code: 1\nOutput:\n", "<environment_context>", TS]),
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
def test_codex_shaped_garbage_never_raises(lines: list[dict[str, Any]], flag: bool) -> None:
    session = read_codex(parse(jsonl(*lines)), PATH)
    policy = Policy(index_thinking=flag, index_tool_output=flag)
    for branches in ("active", "all"):
        normalize_codex(session, lineage(session, branches), policy)


@settings(max_examples=100)
@given(st.binary(max_size=300))
def test_arbitrary_bytes_never_raise(data: bytes) -> None:
    session = read_codex(parse(data), PATH)
    for branches in ("active", "all"):
        normalize_codex(session, lineage(session, branches), Policy())


# --- real files (read in place from ../shared; skipped when it is absent) ----------------------

# name: (session id, records, forked copies, [(role, tool, outcome, text prefix)] in both modes)
REAL_FACTS: dict[str, tuple[str, int, int, list[tuple[str, str | None, str | None, str]]]] = {
    "simonw__claude-code-transcripts__tests__sample_codex_session.jsonl": (
        "019b64e5-57fa-7463-b644-fba7e456f905",
        10,
        0,
        # AGENTS.md and environment_context lines are injected; the user_message event is a copy
        [("user", None, None, "can you analyse the MD files in this directory")],
    ),
    "siteboon__claudecodeui__server__modules__providers__tests__fixtures__"
    "codex-resumed-turn-compaction-failed.rollout.jsonl": (
        "01a0cff3-5219-7b91-ac21-83f1a9fd44e7",
        25,
        0,
        [
            ("user", None, None, "FIX2-1353 A1 first prompt"),
            ("assistant", None, None, "FIX2-REPLY 8"),
            ("user", None, None, "FIX2-1353 A3 control no append"),
            ("assistant", None, None, "FIX2-REPLY 21"),
        ],
    ),
    "lparlett__Codex-Sessions-Tool__tests__fixtures__codex_file_updates.jsonl": (
        "00000000-0000-0000-0000-000000000001",
        7,
        0,
        # only events carry the conversation in this re-serialized sample
        [
            ("user", None, None, "Please ensure the agent and copilot instructions match."),
            ("assistant", "shell_command", None, "Tool: shell_command("),
            ("toolResult", "shell_command", None, "toolResult(shell_command): diff count 1"),
            ("assistant", None, None, "Updated both instruction files to match"),
        ],
    ),
}


def real(name: str) -> Path:
    if not REAL.is_dir():
        pytest.skip(f"real Codex fixtures not found at {REAL} (../shared is absent)")
    return REAL / name


CATALOG = "jazzyalex__agent-sessions__Resources__Fixtures__stage0__agents__codex__small.jsonl"


@pytest.mark.real
def test_every_real_codex_file_is_known_here() -> None:
    if not REAL.is_dir():
        pytest.skip(f"real Codex fixtures not found at {REAL} (../shared is absent)")
    assert sorted(p.name for p in REAL.glob("*.jsonl")) == sorted([*REAL_FACTS, CATALOG])


@pytest.mark.real
@pytest.mark.parametrize("name", sorted(REAL_FACTS))
def test_real_codex_files_normalize_as_read_by_hand(name: str) -> None:
    path = real(name)
    session_id, records, copies, expected = REAL_FACTS[name]
    session = read_codex(parse(path.read_bytes()), str(path))
    assert (session.session_id, len(session.records), session.reasons) == (session_id, records, ())
    assert sum(r.kind == FORKED_COPY for r in session.records) == copies
    for branches in ("active", "all"):
        found = entries(session, branches)
        assert len(found) == len(expected)
        for entry, (role, tool, outcome, prefix) in zip(found, expected, strict=True):
            assert (entry.role, entry.tool, entry.outcome) == (role, tool, outcome)
            assert entry.text.startswith(prefix)
            if entry.role == "user":
                assert not entry.text.lstrip().startswith(INJECTED_OPENERS)


@pytest.mark.real
def test_real_catalog_rollout_normalizes_and_keeps_its_first_turn() -> None:
    # Semi-synthetic (values trimmed); its first turn is real-shaped and checked by hand.
    session = read_codex(parse(real(CATALOG).read_bytes()), CATALOG)
    assert session.session_id == "019fc8be-3658-7ca3-9e29-000000000000"
    for branches in ("active", "all"):
        found = entries(session, branches, Policy(index_thinking=True))
        first_turn = [(e.line, e.role, e.tool, e.text) for e in found if e.line <= 25]
        assert first_turn == [
            (6, "user", None, "List the files"),  # the user_message event on line 4 is a copy
            (7, "assistant", None, "[trimmed for fixture]"),  # reasoning summary
            (9, "assistant", "shell", 'Tool: shell({"command":["ls"]})'),
            (10, "assistant", "shell", 'Tool: shell({"command":["ls"]})'),
            (11, "toolResult", "shell", "toolResult(shell): a.txt\n"),
            (14, "assistant", "web_search", 'Tool: web_search({"type":"search","query":"example",'
             '"queries":["example"],"url":null,"pattern":null})'),
            (21, "toolResult", "shell", "toolResult(shell): a.txt\nb.txt\n"),
            (23, "assistant", None, "Found 2 files."),  # agent_message on line 24 is a copy
        ]  # fmt: skip


# --- rollback ----------------------------------------------------------------------------------


def test_a_rollback_abandons_the_newest_user_turns_on_the_active_path() -> None:
    session = read(
        meta(),
        said("user", "<environment_context>x</environment_context>"),  # not a user turn
        said("user", "one"),
        said("assistant", "reply one"),
        said("user", "two"),
        said("assistant", "reply two"),
        said("user", "three"),
        said("assistant", "reply three"),
        event("thread_rolled_back", num_turns=2),
        said("user", "two again"),
        said("assistant", "reply two again"),
    )
    assert session.extra == {"rolled_back": 4}
    assert lineage(session, "active").path_ids == ("L2", "L3", "L4", "L9", "L10", "L11")
    assert [e.text for e in entries(session)] == [
        "one",
        "reply one",
        "two again",
        "reply two again",
    ]
    assert len(entries(session, "all")) == 8


def test_a_rollback_past_the_first_turn_cuts_at_the_first_and_odd_counts_do_nothing() -> None:
    session = read(
        meta(),
        said("user", "one"),
        event("thread_rolled_back", num_turns=5),
        said("user", "fresh"),
        event("thread_rolled_back", num_turns=0),
        event("thread_rolled_back", num_turns="2"),
        event("thread_rolled_back", num_turns=True),
    )
    assert lineage(session, "active").path_ids == ("L3", "L4", "L5", "L6", "L7")
    assert [e.text for e in entries(session)] == ["fresh"]


# --- era A: the TypeScript CLI's one-object rollout ------------------------------------------

ERA_A_PATH = f"/h/.codex/sessions/rollout-2025-05-01-{TID}.json"


def era_a(items: list[Any], *, indent: bool = True) -> bytes:
    return codex_object_rollout(TID, items, instructions="be brief", indent=indent)


ERA_A_ITEMS: list[dict[str, Any]] = [
    {"type": "message", "role": "user", "content": [{"type": "input_text", "text": "fix it"}]},
    {"type": "function_call", "name": "shell", "arguments": '{"command":["ls"]}', "call_id": "c"},
    {"type": "function_call_output", "call_id": "c", "output": "a.txt"},
    codex_said("assistant", "ok ü"),
]


@pytest.mark.parametrize("indent", [True, False])
def test_an_era_a_object_rollout_reads_like_a_bare_one(indent: bool) -> None:
    from stages.read import read_session

    data = era_a(ERA_A_ITEMS, indent=indent)
    session = read_session(data, ERA_A_PATH, "codex")
    assert (session.session_id, session.cwd, session.reasons) == (TID, "", ())
    assert session.header is not None and session.header["instructions"] == "be brief"
    assert [r.kind for r in session.records] == ["response_item"] * 4
    assert [(e.role, e.text) for e in entries(session)] == [
        ("user", "fix it"),
        ("assistant", 'Tool: shell({"command":["ls"]})'),
        ("toolResult", "toolResult(shell): a.txt"),
        ("assistant", "ok ü"),
    ]
    # each record's line starts where its object does (offset: that line's first byte)
    decoder = json.JSONDecoder()
    for r in session.records:
        assert data.count(b"\n", 0, r.offset) == r.line - 1
        assert r.offset == 0 or data[r.offset - 1 : r.offset] == b"\n"
    if indent:  # pretty-printed: each object opens its own line, so plain ids
        for r in session.records:
            text = data[r.offset :].decode()
            assert decoder.raw_decode(text, text.index("{"))[0] == r.value
        assert [r.id for r in session.records] == [f"L{r.line}" for r in session.records]
    else:  # all on line 1 (after the meta object): told apart like concatenated objects
        assert [r.id for r in session.records] == ["L1.1", "L1.2", "L1.3", "L1.4"]


@pytest.mark.parametrize(
    "data",
    [
        b"",
        b'{"session": {"id": "x", "timestamp": "t"}, "items": [',  # caught mid-save
        b"[1, 2]",
        b'{"items": []}',
    ],
)
def test_a_half_written_or_foreign_object_rollout_reads_nothing_and_says_so(data: bytes) -> None:
    from stages.read import read_session

    session = read_session(data, ERA_A_PATH, "codex")
    assert session.records == () and session.reasons == ("malformed_line",)


def test_a_non_object_item_of_an_era_a_rollout_is_a_malformed_line() -> None:
    from stages.read import read_session

    session = read_session(era_a([*ERA_A_ITEMS[:1], 7]), ERA_A_PATH, "codex")  # type: ignore[list-item]
    assert session.reasons == ("malformed_line",)
    assert [e.text for e in entries(session)] == ["fix it"]


@given(st.binary(max_size=300))
@settings(max_examples=200, suppress_health_check=[HealthCheck.too_slow])
def test_arbitrary_bytes_as_an_era_a_rollout_never_raise(data: bytes) -> None:
    from stages.read import read_session

    entries(read_session(data, ERA_A_PATH, "codex"))


# --- the memo of the in-memory append path ---------------------------------------------------


def test_a_memo_never_changes_what_a_growing_rollout_normalizes_to() -> None:
    from stages.normalize import normalize
    from tests.helpers import grow_with_memo

    lines = [
        meta(),
        turn("t1"),
        event("user_message", message="hello there"),  # echoed by the item written after it
        said("user", "hello there"),
        item("function_call_output", call_id="c9", output="early output"),  # call comes later
        item("function_call", name="shell", call_id="c1", arguments='{"command":["ls"]}'),
        item("function_call_output", call_id="c1", output="a.txt"),
        event("exec_command_end", call_id="c1", exit_code=2),  # its outcome comes last
        item("function_call", name="apply_patch", call_id="c9", arguments="{}"),
        event("agent_message", message="all done"),
        said("assistant", "all done"),
    ]
    raws = parse(jsonl(*lines)).records
    policies = [Policy(), Policy(index_tool_output=False, index_thinking=True)]
    memos, grown = grow_with_memo(raws, read_codex, PATH, policies)
    final = normalize(grown, lineage(grown, "active"), Policy(), memo=memos[0]).entries
    outputs = [(e.tool, e.outcome) for e in final if e.role == "toolResult"]
    assert outputs == [("apply_patch", None), ("shell", "failed")]
    assert [e.text for e in final if e.role == "user"] == ["hello there"]  # the echo dropped


REAL_CODEX = Path(__file__).parents[3].parent / "shared" / "fixtures" / "real" / "codex"


@pytest.mark.real
def test_real_codex_rollouts_pretty_printed_read_as_their_jsonl() -> None:
    if not REAL_CODEX.is_dir():
        pytest.skip(f"real Codex fixtures not found at {REAL_CODEX} (../shared is absent)")
    for path in sorted(REAL_CODEX.glob("*.jsonl")):
        data = path.read_bytes()
        pretty = b"".join(
            orjson.dumps(orjson.loads(x), option=orjson.OPT_INDENT_2) + b"\n"
            for x in data.splitlines()
            if x.strip()
        )
        plain, spread = read_codex(parse(data), str(path)), read_codex(parse(pretty), str(path))
        assert spread.reasons == plain.reasons == (), path.name
        assert [r.value for r in spread.records] == [r.value for r in plain.records], path.name
        assert [e.text for e in entries(spread)] == [e.text for e in entries(plain)], path.name
