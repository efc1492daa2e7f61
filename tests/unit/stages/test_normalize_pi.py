"""The Pi normalizer and the normalize dispatcher: every rule of reference §1.10 plus the
structural identity (ref/provider/action/outcome/operation address) beyond the seed.

Goldens: ``tests/data/pi/normalize_<case>.expected.json`` hold the complete output of each
hand-written session under one policy, for both branch modes. Regenerate them after an intended
change with ``SESSIONDEX_UPDATE_GOLDENS=1 .venv/bin/pytest tests/unit/stages/test_normalize_pi.py``
and read the diff before committing it.
"""

from __future__ import annotations

import dataclasses
import os
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stages.errors import BadInput
from stages.lineage import Lineage, lineage
from stages.normalize import cut_text, normalize
from stages.pi.normalize import normalize_pi, tool_identity
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

DATA = Path(__file__).parents[2] / "data" / "pi"
REAL = Path(__file__).parents[3].parent / "shared" / "fixtures" / "real" / "pi"
UPDATE_GOLDENS = os.environ.get("SESSIONDEX_UPDATE_GOLDENS") == "1"


# ---------------------------------------------------------------------------------------------
# Builders


def session_of(*values: dict[str, Any], agent: str = "pi") -> SourceSession:
    """A session whose records are *values* in order, linked by their own id/parentId."""
    records = tuple(
        SourceRecord(
            position=i,
            line=i + 2,
            offset=100 * (i + 1),
            id=v.get("id") if isinstance(v.get("id"), str) else None,
            parent_id=v.get("parentId") if isinstance(v.get("parentId"), str) else None,
            kind=v["type"] if isinstance(v.get("type"), str) else "unknown",
            value=v,
        )
        for i, v in enumerate(values)
    )
    return SourceSession(
        agent=agent, path="/s.jsonl", session_id="s", cwd="/w", version=3, header=None,
        records=records,
    )  # fmt: skip


def everything(session: SourceSession) -> Lineage:
    positions = tuple(r.position for r in session.records)
    return Lineage(branches="all", leaf_id=None, path_ids=(), selected=positions, fingerprint="f")


def run(*values: dict[str, Any], policy: Policy | None = None) -> list[NormalizedEntry]:
    session = session_of(*values)
    return list(normalize(session, everything(session), policy or Policy()).entries)


def one(value: dict[str, Any], policy: Policy | None = None) -> NormalizedEntry:
    entries = run(value, policy=policy)
    assert len(entries) == 1, entries
    return entries[0]


def msg(role: str, entry_id: str = "e1", **fields: Any) -> dict[str, Any]:
    return {
        "type": "message",
        "id": entry_id,
        "parentId": None,
        "message": {"role": role, **fields},
    }


def call(name: str, call_id: str = "c1", **arguments: Any) -> dict[str, Any]:
    return {"type": "toolCall", "id": call_id, "name": name, "arguments": arguments}


# ---------------------------------------------------------------------------------------------
# Goldens

GOLDENS: dict[str, tuple[str, Policy]] = {
    "basic": ("normalize_basic.jsonl", Policy()),
    "basic_thinking": ("normalize_basic.jsonl", Policy(index_thinking=True)),
    "basic_no_tool_output": ("normalize_basic.jsonl", Policy(index_tool_output=False)),
    "v1": ("normalize_v1.jsonl", Policy()),
    "v2": ("normalize_v2.jsonl", Policy()),
    "fabric": ("normalize_fabric.jsonl", Policy()),
    "fabric_no_tool_output": ("normalize_fabric.jsonl", Policy(index_tool_output=False)),
    "trace": ("normalize_trace.jsonl", Policy()),
    "branch": ("normalize_branch.jsonl", Policy()),
    "branch_no_tool_output": ("normalize_branch.jsonl", Policy(index_tool_output=False)),
    "dupes": ("normalize_dupes.jsonl", Policy()),
}


def as_json(entry: NormalizedEntry) -> dict[str, Any]:
    return {
        f.name: list(v) if isinstance(v := getattr(entry, f.name), tuple) else v
        for f in dataclasses.fields(entry)
    }


def snapshot(name: str, policy: Policy) -> dict[str, Any]:
    """Both branch modes' output; ``all`` is written out only when it selects other records."""
    path = DATA / name
    session = read_session(path.read_bytes(), f"tests/data/pi/{name}", "pi")
    views: list[dict[str, Any]] = []
    for branches in ("active", "all"):
        chosen = lineage(session, branches)
        result = normalize(session, chosen, policy)
        view = {
            "branches": branches,
            "selected": list(chosen.selected),
            "reasons": list(result.reasons),
            "entries": [as_json(e) for e in result.entries],
        }
        if views and view["selected"] == views[0]["selected"]:
            assert view["entries"] == views[0]["entries"]
            view = {"branches": branches, "same_as_active": True}
        views.append(view)
    return {"policy": policy.fingerprint(), "views": views}


@pytest.mark.parametrize("case", sorted(GOLDENS))
def test_golden(case: str) -> None:
    name, policy = GOLDENS[case]
    actual = snapshot(name, policy)
    expected_path = DATA / f"normalize_{case}.expected.json"
    if UPDATE_GOLDENS:
        expected_path.write_bytes(orjson.dumps(actual, option=orjson.OPT_INDENT_2) + b"\n")
    assert expected_path.exists(), f"run with SESSIONDEX_UPDATE_GOLDENS=1 to create {expected_path}"
    assert actual == orjson.loads(expected_path.read_bytes())


def test_goldens_are_all_listed() -> None:
    on_disk = {p.name.removeprefix("normalize_").removesuffix(".expected.json")
               for p in DATA.glob("normalize_*.expected.json")}  # fmt: skip
    assert on_disk == set(GOLDENS)


# ---------------------------------------------------------------------------------------------
# Kept and skipped record types


def test_only_message_compaction_branch_summary_and_custom_message_become_entries() -> None:
    entries = run(
        {"type": "model_change", "id": "m", "provider": "p", "modelId": "x"},
        {"type": "thinking_level_change", "id": "t", "thinkingLevel": "high"},
        {"type": "label", "id": "l", "targetId": "m", "label": "x"},
        {"type": "custom", "id": "c", "customType": "state", "data": {"text": "hidden"}},
        {"type": "session_info", "id": "i", "name": "named"},
        {"type": "session", "id": "dup-header", "cwd": "/w"},
        {"type": "future_entry", "id": "f", "text": "unknown types are skipped"},
        {"no_type": True, "id": "n"},
        msg("user", "u", content="hello"),
        {"type": "compaction", "id": "p", "summary": "sum", "firstKeptEntryId": "u"},
        {"type": "branch_summary", "id": "b", "fromId": "u", "summary": "prose"},
        {"type": "custom_message", "id": "cm", "customType": "ext", "content": "note"},
    )
    assert [(e.entry_id, e.type, e.role) for e in entries] == [
        ("u", "message", "user"),
        ("p", "compaction", "compaction"),
        ("b", "branch_summary", "branchSummary"),
        ("cm", "custom_message", "custom"),
    ]
    assert [e.index for e in entries] == [0, 1, 2, 3]


def test_an_entry_is_dropped_only_when_its_text_is_blank_and_it_has_no_role() -> None:
    entries = run(
        {"type": "message", "id": "no-message"},
        {"type": "message", "id": "list-message", "message": ["not", "an", "object"]},
        {"type": "message", "id": "no-role", "message": {"content": "text but no role"}},
        {"type": "message", "id": "number-role", "message": {"role": 5, "content": "x"}},
        {"type": "message", "id": "empty-role", "message": {"role": "", "content": "x"}},
        msg("user", "blank-user", content=" \n\t\u3000\ufeff"),
        msg("futureRole", "unknown-role", content="unknown roles keep their entry, without text"),
        {"type": "branch_summary", "id": "bs", "summary": "prose"},
    )
    assert [(e.entry_id, e.role, e.text) for e in entries] == [
        ("blank-user", "user", " \n\t\u3000\ufeff"),
        ("unknown-role", "futureRole", ""),
        ("bs", "branchSummary", ""),
    ]


# ---------------------------------------------------------------------------------------------
# Text per role


def test_user_text_is_the_string_or_its_text_parts_joined_and_images_add_nothing() -> None:
    image = {"type": "image", "data": "aGk=", "mimeType": "image/png"}
    assert one(msg("user", content="plain")).text == "plain"
    parts = [{"type": "text", "text": "a"}, image, {"type": "text", "text": "b"}, "junk", None]
    assert one(msg("user", content=parts)).text == "a\nb"
    image_only = one(msg("user", content=[image]))
    assert (image_only.role, image_only.text) == ("user", "")
    assert one(msg("user", content={"text": "object content"})).text == ""
    assert one(msg("user", content=[{"type": "text", "text": 5}])).text == ""


def test_assistant_text_thinking_tool_calls_and_error_in_block_order() -> None:
    content = [
        {"type": "thinking", "thinking": "private chain", "thinkingSignature": "U0lHTkFUVVJF"},
        {"type": "text", "text": "Reading."},
        call("read", path="src/a.ts"),
        {"type": "thinking", "thinking": "", "redacted": True, "thinkingSignature": "UkVEQUNURUQ="},
        {"type": "text", "text": "Done."},
    ]
    value = msg("assistant", content=content, errorMessage="Request timed out.")
    hidden = one(value)
    assert (
        hidden.text == 'Reading.\nTool: read({"path":"src/a.ts"})\nDone.\nError: Request timed out.'
    )
    shown = one(value, Policy(index_thinking=True))
    assert shown.text == (
        "private chain\nReading.\n"
        'Tool: read({"path":"src/a.ts"})\n\nDone.\nError: Request timed out.'
    )
    assert "U0lHTkFUVVJF" not in shown.text and "UkVEQUNURUQ=" not in shown.text


def test_assistant_with_empty_content_keeps_its_error_message() -> None:
    entry = one(
        msg("assistant", content=[], stopReason="aborted", errorMessage="Request was aborted.")
    )
    assert (entry.role, entry.text, entry.tool, entry.is_error) == (
        "assistant", "Error: Request was aborted.", None, False
    )  # fmt: skip


def test_tool_call_arguments_are_compact_json_cut_to_400_scalars_with_an_ellipsis() -> None:
    def text(arguments: Any) -> str:
        block = {"type": "toolCall", "id": "c", "name": "bash", "arguments": arguments}
        return one(msg("assistant", content=[block])).text

    assert (
        text({"b": 1.0, "a": [True, None], "ü": "é"})
        == 'Tool: bash({"b":1,"a":[true,null],"ü":"é"})'
    )
    exact = {"c": "x" * (400 - len('{"c":""}'))}
    assert text(exact) == f"Tool: bash({orjson.dumps(exact).decode()})"
    long = {"command": "😀" * 500}
    body = text(long).removeprefix("Tool: bash(").removesuffix(")")
    assert body.endswith("…") and len(body) == 401
    assert body[:-1] == ('{"command":"' + "😀" * 500)[:400]
    assert text(None) == "Tool: bash(null)"
    no_args = {"type": "toolCall", "id": "c", "name": "ls"}
    assert one(msg("assistant", content=[no_args])).text == "Tool: ls()"
    nameless = {"type": "toolCall", "id": "c", "arguments": {}}
    assert one(msg("assistant", content=[nameless])).text == "Tool: ({})"


def test_tool_result_text_prefix_error_suffix_and_body_policy() -> None:
    body = [
        {"type": "text", "text": "line 1"},
        {"type": "image", "data": "x"},
        {"type": "text", "text": "line 2"},
    ]
    ok = msg("toolResult", toolName="read", content=body, isError=False)
    assert one(ok).text == "toolResult(read): line 1\nline 2"
    assert one(ok, Policy(index_tool_output=False)).text == "toolResult(read)"
    failed = msg(
        "toolResult", toolName="bash", content=[{"type": "text", "text": "boom"}], isError=True
    )
    assert one(failed).text == "toolResult(bash) [error]: boom"
    assert one(failed, Policy(index_tool_output=False)).text == "toolResult(bash) [error]"
    assert one(msg("toolResult", toolName="read", content="string body")).text == (
        "toolResult(read): string body"
    )
    assert one(msg("toolResult", content=[])).text == "toolResult"
    assert one(msg("toolResult", isError=True, content=[])).text == "toolResult [error]"


def test_tool_result_reads_the_old_output_string_shape() -> None:
    old = msg("toolResult", toolCallId="t", toolName="bash", output="README.md\nsrc", isError=False)
    assert one(old).text == "toolResult(bash): README.md\nsrc"
    assert one(old, Policy(index_tool_output=False)).text == "toolResult(bash)"


def test_bash_execution_text_exit_code_and_output_policy() -> None:
    def text(policy: Policy | None = None, **fields: Any) -> str:
        return one(msg("bashExecution", command="make", **fields), policy).text

    assert text(output="built", exitCode=0) == "bash$ make [exit 0]\nbuilt"
    assert text(output="built", exitCode=2) == "bash$ make [exit 2]\nbuilt"
    assert text(output="built", exitCode=2.0) == "bash$ make [exit 2]\nbuilt"
    assert text(output="", exitCode=1) == "bash$ make [exit 1]"
    assert text(output="partial") == "bash$ make\npartial"
    assert text(output="built", exitCode=True) == "bash$ make\nbuilt"
    assert (
        text(Policy(index_tool_output=False), output="secret", exitCode=0) == "bash$ make [exit 0]"
    )


def test_custom_hook_message_and_custom_message_text() -> None:
    custom = one(msg("custom", customType="status", content="restored", display=True))
    assert (custom.role, custom.text) == ("custom", "[status] restored")
    hook = one(msg("hookMessage", customType="status", content=[{"type": "text", "text": "v2"}]))
    assert (hook.role, hook.text) == ("custom", "[status] v2")
    untyped = one(msg("custom", content="no type"))
    assert untyped.text == "no type"
    content = [{"type": "text", "text": "pnpm"}]
    record = {"type": "custom_message", "id": "cm", "customType": "ctx", "content": content}
    assert (one(record).role, one(record).text) == ("custom", "[ctx] pnpm")


def test_compaction_and_branch_summary_text() -> None:
    v2 = one(
        {
            "type": "compaction",
            "id": "p",
            "summary": "S",
            "firstKeptEntryId": "x",
            "tokensBefore": 3,
        }
    )
    v1 = one({"type": "compaction", "summary": "S1", "firstKeptEntryIndex": 4, "tokensBefore": 3})
    assert (v2.role, v2.text, v1.text, v1.entry_id) == (
        "compaction",
        "compaction: S",
        "compaction: S1",
        None,
    )
    in_memory = one(msg("compactionSummary", summary="mem", tokensBefore=1))
    assert (in_memory.role, in_memory.text) == ("compactionSummary", "compaction: mem")
    branch = one({"type": "branch_summary", "id": "b", "fromId": "x", "summary": "never indexed"})
    assert (branch.role, branch.text) == ("branchSummary", "")
    in_memory_branch = one(msg("branchSummary", summary="never indexed", fromId="x"))
    assert (in_memory_branch.role, in_memory_branch.text) == ("branchSummary", "")


# ---------------------------------------------------------------------------------------------
# Roles, tools, structural identity, outcomes


def test_assistant_tool_is_its_first_tool_call_and_carries_its_operation_address() -> None:
    entry = one(msg("assistant", "a1", content=[
        {"type": "text", "text": "x"},
        {"type": "toolCall", "id": "c0", "name": 7, "arguments": {}},
        call("grep", "toolu_1", pattern="x"),
        call("read", "toolu_2", path="a"),
    ]))  # fmt: skip
    assert (entry.tool, entry.ref, entry.provider, entry.action) == (
        "grep",
        "pi.grep",
        "pi",
        "grep",
    )
    assert (entry.operation_address, entry.outcome, entry.parent_entry_id) == (
        "a1/call:toolu_1", None, None
    )  # fmt: skip


def test_assistant_without_a_call_id_or_entry_id_has_no_operation_address() -> None:
    no_call_id = one(msg("assistant", "a1", content=[{"type": "toolCall", "name": "ls"}]))
    assert (no_call_id.tool, no_call_id.ref, no_call_id.operation_address) == ("ls", "pi.ls", None)
    value = msg("assistant", content=[call("ls", "c9")])
    del value["id"]
    assert one(value).operation_address is None
    plain = one(msg("assistant", content=[{"type": "text", "text": "no tools"}]))
    assert (plain.tool, plain.ref, plain.provider, plain.action) == (None, None, None, None)


def test_tool_result_identity_outcome_and_no_operation_address() -> None:
    ok = one(msg("toolResult", "r1", toolName="edit", content=[], isError=False))
    assert (ok.tool, ok.ref, ok.provider, ok.action, ok.outcome, ok.is_error) == (
        "edit", "pi.edit", "pi", "edit", "succeeded", False
    )  # fmt: skip
    assert ok.operation_address is None
    failed = one(msg("toolResult", toolName="bash", content=[], isError=True))
    assert (failed.outcome, failed.is_error) == ("failed", True)
    # isError is read with JavaScript truthiness; only `true` itself prints " [error]".
    truthy = one(msg("toolResult", toolName="bash", content=[], isError="yes"))
    assert (truthy.outcome, truthy.is_error, truthy.text) == ("failed", True, "toolResult(bash)")
    nameless = one(msg("toolResult", content=[]))
    assert (nameless.tool, nameless.ref, nameless.outcome) == (None, None, "succeeded")


def test_fabric_exec_is_fabric_itself_not_a_pi_tool() -> None:
    assert tool_identity("fabric_exec") == ("fabric_exec", None, None)
    assert tool_identity("web_search") == ("pi.web_search", "pi", "web_search")
    entry = one(msg("assistant", "a1", content=[call("fabric_exec", "fx", code="1")]))
    assert (entry.ref, entry.provider, entry.action, entry.operation_address) == (
        "fabric_exec", None, None, "a1/call:fx"
    )  # fmt: skip


@pytest.mark.parametrize(
    ("fields", "outcome", "is_error"),
    [
        ({"exitCode": 0}, "succeeded", False),
        ({"exitCode": 1}, "failed", True),
        ({"exitCode": -9}, "failed", True),
        ({"exitCode": 137, "cancelled": True}, "aborted", False),
        ({"cancelled": True}, "aborted", False),
        ({}, None, False),
        ({"exitCode": None}, None, False),
        ({"exitCode": "1"}, None, False),
        ({"cancelled": "true"}, None, False),
    ],
)
def test_bash_execution_outcome_from_typed_fields(
    fields: dict[str, Any], outcome: str | None, is_error: bool
) -> None:
    entry = one(msg("bashExecution", "x1", command="make", output="", **fields))
    assert (entry.outcome, entry.is_error) == (outcome, is_error)
    assert (entry.tool, entry.ref, entry.provider, entry.action) == (
        "bash",
        "pi.bash",
        "pi",
        "bash",
    )
    assert entry.operation_address == "x1/bash"


def test_is_error_is_the_message_flag_with_javascript_truthiness() -> None:
    def flag(value: Any) -> bool:
        return one(msg("user", content="x", isError=value)).is_error

    assert [flag(v) for v in (True, 1, "x", [], {})] == [True] * 5
    assert [flag(v) for v in (False, 0, 0.0, "", None)] == [False] * 5
    compaction = one({"type": "compaction", "id": "p", "summary": "s", "isError": True})
    assert compaction.is_error is False


# ---------------------------------------------------------------------------------------------
# filesTouched


def test_files_touched_come_from_path_keys_of_tool_call_arguments_recursively() -> None:
    entry = one(msg("assistant", content=[
        {"type": "text", "text": "I will edit src/prose.ts now"},
        call("edit", "c1", file_path=" src/a.ts ", oldText="src/not-a-path.ts", newText="x"),
        call("grep", "c2", pattern="x", paths=["src/", "src/a.ts", ""], options={
            "includeFile": "*.ts", "PATH": "/abs", "profile": "dev", "pathx": "no",
            "files": [1, None],
        }),
        call("write", "c3", path="src/a.ts", content="body mentions src/b.ts"),
        call("ls", "c4", dir="src/only-dir-is-not-a-path-key"),
    ]))  # fmt: skip
    assert entry.files_touched == ("src/a.ts", "src/", "*.ts", "/abs", "dev")


def test_files_touched_ignores_top_level_strings_and_non_assistant_records() -> None:
    bare = {"type": "toolCall", "id": "c", "name": "read", "arguments": "path"}
    assert one(msg("assistant", content=[bare])).files_touched == ()
    result = msg("toolResult", toolName="read", content=[], details={"path": "src/a.ts"})
    assert one(result).files_touched == ()
    user = msg("user", content=[{"type": "toolCall", "name": "read", "arguments": {"path": "a"}}])
    assert one(user).files_touched == ()


# ---------------------------------------------------------------------------------------------
# Timestamps, ids, location


@pytest.mark.parametrize(
    ("record_ts", "message_ts", "expected"),
    [
        ("2025-02-01T00:00:03.000Z", None, 1738368003000),
        ("2025-02-01T00:00:03.5Z", None, 1738368003500),
        ("2025-02-01T01:00:03+01:00", None, 1738368003000),
        ("2025-02-01T00:00:03", None, 1738368003000),
        (1738368003000, None, 1738368003000),
        (1738368003000.9, None, 1738368003000),
        ("garbage", 1738368004000, 1738368004000),
        (None, 1738368004000, 1738368004000),
        (None, "2025-02-01T00:00:04Z", 1738368004000),
        (True, 1738368004000, 1738368004000),
        ("garbage", "garbage", None),
        (None, None, None),
        (1e300, None, None),
        (-8_640_000_000_000_001, None, None),
    ],
)
def test_timestamp_is_the_record_time_else_the_message_time_in_epoch_ms(
    record_ts: Any, message_ts: Any, expected: int | None
) -> None:
    value = msg("user", content="x")
    if record_ts is not None:
        value["timestamp"] = record_ts
    if message_ts is not None:
        value["message"]["timestamp"] = message_ts
    assert one(value).timestamp == expected


def test_entry_and_parent_ids_and_location_come_from_the_source_record() -> None:
    first = msg("user", "u1", content="a")
    second = {**msg("assistant", "a1", content=[]), "parentId": "u1"}
    entries = run(first, second)
    assert [(e.entry_id, e.parent_id, e.line, e.offset, e.agent) for e in entries] == [
        ("u1", None, 2, 100, "pi"),
        ("a1", "u1", 3, 200, "pi"),
    ]
    assert all(e.truncated is False for e in entries)


def test_v1_records_get_the_adapters_derived_ids() -> None:
    path = DATA / "normalize_v1.jsonl"
    session = read_session(path.read_bytes(), str(path), "pi")
    result = normalize(session, lineage(session, "active"), Policy())
    ids = [r.id for r in session.records]
    assert all(isinstance(i, str) for i in ids)
    kept = [r for r in session.records if r.kind != "thinking_level_change"]
    assert [e.entry_id for e in result.entries] == [r.id for r in kept]
    assert [e.parent_id for e in result.entries] == [r.parent_id for r in kept]
    bash = next(e for e in result.entries if e.role == "bashExecution")
    assert bash.operation_address == f"{bash.entry_id}/bash"


def test_only_selected_records_are_normalized_in_file_order() -> None:
    session = session_of(*(msg("user", f"u{i}", content=f"text {i}") for i in range(5)))
    chosen = Lineage(branches="active", leaf_id="u3", path_ids=("u0", "u3"), selected=(0, 3),
                     fingerprint="f")  # fmt: skip
    result = normalize(session, chosen, Policy())
    assert [(e.index, e.entry_id) for e in result.entries] == [(0, "u0"), (1, "u3")]


def test_the_active_branch_excludes_an_abandoned_sibling() -> None:
    path = DATA / "normalize_v2.jsonl"
    session = read_session(path.read_bytes(), str(path), "pi")
    active = normalize(session, lineage(session, "active"), Policy())
    everything_ = normalize(session, lineage(session, "all"), Policy())
    assert [e.entry_id for e in active.entries] == ["u1", "a1", "bs", "h1", "u3"]
    assert [e.entry_id for e in everything_.entries] == [
        "u1",
        "a1",
        "u2",
        "a2",
        "r2",
        "bs",
        "h1",
        "u3",
    ]


# ---------------------------------------------------------------------------------------------
# The dispatcher: dense indices, duplicates, agents


def test_duplicate_entry_ids_mark_coverage_incomplete() -> None:
    session = session_of(msg("user", "u1", content="a"), msg("user", "u1", content="b"))
    result = normalize(session, everything(session), Policy())
    assert result.reasons == ("duplicate_entry_id",)
    assert [e.index for e in result.entries] == [0, 1]


def test_duplicate_operation_addresses_mark_coverage_incomplete() -> None:
    session = session_of(
        msg("bashExecution", "x1", command="a", exitCode=0),
        msg("assistant", "a1", content=[call("read", "c1", path="x")]),
        {"type": "message", "id": "x1", "message": {"role": "bashExecution", "command": "b"}},
    )
    result = normalize(session, everything(session), Policy())
    assert result.reasons == ("duplicate_entry_id", "duplicate_operation_address")


def test_entries_without_ids_are_never_duplicates() -> None:
    records = [{"type": "compaction", "summary": f"s{i}"} for i in range(3)]
    session = session_of(*records)
    assert normalize(session, everything(session), Policy()).reasons == ()


def test_the_dispatcher_renumbers_an_agent_normalizers_entries_densely() -> None:
    session = session_of(msg("user", "u1", content="a"), msg("user", "u2", content="b"))
    raw = normalize_pi(session, everything(session), Policy())
    assert [e.index for e in raw.entries] == [0, 1]
    assert [e.index for e in normalize(session, everything(session), Policy()).entries] == [0, 1]


def test_unknown_agent_is_a_caller_error() -> None:
    session = session_of(msg("user", content="x"), agent="msn")
    with pytest.raises(BadInput, match="msn"):
        normalize(session, everything(session), Policy())


# ---------------------------------------------------------------------------------------------
# Unicode: cut_text and lone surrogates


def test_cut_text_counts_unicode_scalars() -> None:
    assert cut_text("héllo😀", 6) == ("héllo😀", False)
    assert cut_text("héllo😀x", 6) == ("héllo😀", True)
    assert cut_text("abc", 0) == ("", True)
    assert cut_text("", 0) == ("", False)
    assert cut_text("abc", -1) == ("", True)


def test_cut_text_never_leaves_a_lone_surrogate() -> None:
    pair_as_two_code_points = "a\ud83d\ude00b"
    text, cut = cut_text(pair_as_two_code_points, 2)
    assert (text, cut) == ("a😀", True)
    lone, _ = cut_text("x\ud83dy", 10)
    assert lone == "x\ufffdy"
    lone.encode("utf-8")


def test_lone_surrogates_become_replacement_characters_in_every_stored_string() -> None:
    entry = one(msg("assistant", "a\ud800", content=[
        {"type": "text", "text": "bad \udc00 text"},
        call("re\ud83dad", "c\udfff", path="src/\ud83d.ts"),
    ]))  # fmt: skip
    assert entry.text == 'bad \ufffd text\nTool: re\ufffdad({"path":"src/\ufffd.ts"})'
    assert entry.entry_id == "a\ufffd"
    assert entry.tool == "re\ufffdad"
    assert entry.operation_address == "a\ufffd/call:c\ufffd"
    assert entry.files_touched == ("src/\ufffd.ts",)


# ---------------------------------------------------------------------------------------------
# Real sessions (../shared/fixtures/real/pi)

# Counts read off the files independently of this code: kept record types, roles, the tool of
# each entry (first toolCall / toolName / bash), and errors (isError, or bash exit ≠ 0).
REAL_COUNTS: dict[str, tuple[int, dict[str, int], dict[str, int], int]] = {
    "badlogic__pi-mono__packages__coding-agent__test__fixtures__large-session.jsonl": (
        914,
        {"assistant": 453, "toolResult": 373, "user": 88},
        {"bash": 383, "edit": 257, "read": 96, "write": 6},
        19,
    ),
    "badlogic__pi-mono__session.jsonl": (
        455,
        {"assistant": 220, "bashExecution": 1, "compaction": 1, "toolResult": 189, "user": 44},
        {"bash": 225, "edit": 86, "read": 55, "write": 2},
        12,
    ),
    "castai__kimchi-dev__session.jsonl": (
        134,
        {"assistant": 56, "custom": 12, "toolResult": 60, "user": 6},
        {"bash": 16, "edit": 2, "grep": 38, "ls": 6, "read": 30, "set_phase": 16, "web_search": 2},
        2,
    ),
    "jazzyalex__agent-sessions__Resources__Fixtures__stage0__agents__pi__small.jsonl": (
        6,
        {"assistant": 2, "compaction": 2, "user": 2},
        {},
        0,
    ),
    (
        "kir-gadjello__pi-session-manager__.pi__messenger__crew__artifacts__"
        "873fc059_crew-planner_0.jsonl"
    ): (
        0,
        {},
        {},
        0,
    ),
    # line 44 (a bash result with an invalid ``\\*`` escape) is repaired: 150, not 149
    "pinion05__agent-complex-task__sessions__04-awesome-agent-ide__session.jsonl": (
        150,
        {"assistant": 60, "custom": 6, "toolResult": 78, "user": 6},
        {
            "bash": 32,
            "edit": 14,
            "read": 29,
            "search": 8,
            "search_tool_bm25": 4,
            "subagent": 10,
            "task": 4,
            "web_search": 16,
            "write": 15,
        },  # fmt: skip
        5,
    ),
}


def real_files() -> list[Path]:
    if not REAL.is_dir():
        pytest.skip(f"real Pi fixtures not found at {REAL} (../shared is absent)")
    return sorted(REAL.glob("*.jsonl"))


@pytest.mark.real
def test_every_real_pi_file_normalizes_in_both_branch_modes() -> None:
    files = real_files()
    assert {p.name for p in files} == set(REAL_COUNTS)
    for path in files:
        session = read_session(path.read_bytes(), str(path), "pi")
        for branches in ("active", "all"):
            for policy in (Policy(), Policy(index_thinking=True, index_tool_output=False)):
                result = normalize(session, lineage(session, branches), policy)
                for entry in result.entries:
                    entry.text.encode("utf-8")
                    orjson.dumps(entry.to_wire())


@pytest.mark.real
@pytest.mark.parametrize("name", sorted(REAL_COUNTS))
def test_real_pi_file_counts(name: str) -> None:
    real_files()
    path = REAL / name
    session = read_session(path.read_bytes(), str(path), "pi")
    result = normalize(session, lineage(session, "all"), Policy())
    count, roles, tools, errors = REAL_COUNTS[name]
    assert len(result.entries) == count
    assert dict(Counter(e.role for e in result.entries)) == roles
    assert dict(Counter(e.tool for e in result.entries if e.tool)) == tools
    assert sum(e.is_error for e in result.entries) == errors
    # a header-only file holds a line but nothing to search: never a clean empty session
    assert result.reasons == (("no_entries",) if count == 0 else ())
    active = normalize(session, lineage(session, "active"), Policy())
    assert len(active.entries) <= count


@pytest.mark.real
def test_real_thinking_is_indexed_only_when_asked() -> None:
    real_files()
    path = REAL / "badlogic__pi-mono__session.jsonl"
    session = read_session(path.read_bytes(), str(path), "pi")
    chosen = lineage(session, "all")
    without = sum(len(e.text) for e in normalize(session, chosen, Policy()).entries)
    with_thinking = normalize(session, chosen, Policy(index_thinking=True)).entries
    assert sum(len(e.text) for e in with_thinking) > without
    signatures = [
        block["thinkingSignature"]
        for r in session.records
        if isinstance(m := r.value.get("message"), dict) and m.get("role") == "assistant"
        for block in m.get("content") or []
        if isinstance(block, dict) and block.get("thinkingSignature")
    ]
    texts = "\n".join(e.text for e in with_thinking)
    assert all(sig not in texts for sig in signatures[:20])


# ---------------------------------------------------------------------------------------------
# Hypothesis: arbitrary JSON-ish records never make the normalizer raise

_strings = st.one_of(
    st.text(max_size=12),
    st.sampled_from([
        "", " ", "message", "compaction", "branch_summary", "custom_message", "toolResult",
        "assistant", "user", "bashExecution", "custom", "hookMessage", "branchSummary",
        "compactionSummary", "toolCall", "text", "thinking", "image", "fabric_exec", "pi.read",
        "call", "path", "file", "dir", "succeeded", "failed", "\ud83d", "a\udc00b", "x1/user",
        "2025-02-01T00:00:03Z", "pi-fabric.execution", "pi-fabric.branch-summary",
    ]),
)  # fmt: skip
_keys = st.one_of(
    _strings,
    st.sampled_from([
        "type", "id", "parentId", "timestamp", "message", "role", "content", "toolName",
        "isError", "arguments", "name", "details", "trace", "kind", "version", "operations",
        "sequence", "ref", "args", "outcome", "counts", "phases", "facts", "entryId",
        "subordinal", "address", "exitCode", "cancelled", "output", "command", "summary",
        "customType", "fromId", "errorMessage", "filePath",
    ]),
)  # fmt: skip
_scalars = st.one_of(
    st.none(), st.booleans(), st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True), _strings,
)  # fmt: skip
_json = st.recursive(
    _scalars,
    lambda inner: st.one_of(st.lists(inner, max_size=4), st.dictionaries(_keys, inner, max_size=5)),
    max_leaves=25,
)


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(
    records=st.lists(st.dictionaries(_keys, _json, max_size=6), max_size=6),
    thinking=st.booleans(),
    tool_output=st.booleans(),
)
def test_arbitrary_records_never_raise(
    records: list[dict[str, Any]], thinking: bool, tool_output: bool
) -> None:
    session = session_of(*records)
    policy = Policy(index_thinking=thinking, index_tool_output=tool_output)
    result = normalize(session, everything(session), policy)
    assert [e.index for e in result.entries] == list(range(len(result.entries)))
    for entry in result.entries:
        entry.text.encode("utf-8")
        orjson.dumps(entry.to_wire())


_message_like = st.fixed_dictionaries(
    {"type": st.just("message"), "id": _strings, "message": st.fixed_dictionaries(
        {"role": st.sampled_from(["user", "assistant", "toolResult", "bashExecution", "custom",
                                  "branchSummary"]),
         "content": _json, "toolName": _strings, "details": _json, "isError": _scalars,
         "exitCode": _scalars, "output": _json, "command": _json},
    )},
)  # fmt: skip


@pytest.mark.slow
@settings(max_examples=300, suppress_health_check=[HealthCheck.too_slow], deadline=None)
@given(records=st.lists(_message_like, max_size=5))
def test_arbitrary_messages_never_raise(records: list[dict[str, Any]]) -> None:
    session = session_of(*records)
    result = normalize(session, everything(session), Policy(index_thinking=True))
    for entry in result.entries:
        entry.text.encode("utf-8")
        orjson.dumps(entry.to_wire())


# ---------------------------------------------------------------------------------------------
# Shared helpers (stages.common) other agents' normalizers rely on


def test_json_value_prints_numbers_as_javascript_does_and_stays_serializable() -> None:
    from stages.common import json_compact

    assert json_compact([1.0, -0.0, 0.5, 1e21, float("nan"), float("inf")]) == (
        "[1,0,0.5,1e+21,null,null]"
    )
    assert json_compact([2**64 - 1, 2**64, -(2**63) - 1, 10**400]) == (
        "[18446744073709551615,1.8446744073709552e+19,-9.223372036854776e+18,null]"
    )
    assert json_compact({"k\ud800": ("t", "\udfff")}) == '{"k\ufffd":["t","\ufffd"]}'


def test_path_key_rule_is_a_suffix_rule_over_keys_with_ascii_case_folding() -> None:
    from stages.common import is_path_key

    assert [is_path_key(k) for k in ("path", "filePath", "FILES", "paths", "profile")] == [True] * 5
    assert [is_path_key(k) for k in ("pathx", "dir", "pathname", "fıle", "")] == [False] * 5


def test_js_trim_and_truthiness_follow_javascript() -> None:
    from stages.common import js_trim, js_truthy

    assert js_trim("\ufeff\u2028 a \u3000\xa0") == "a"
    assert js_trim("\x1c a \x1f") == "\x1c a \x1f"
    assert [js_truthy(v) for v in ([], {}, "0", -1, float("inf"))] == [True] * 5
    assert [js_truthy(v) for v in (None, False, 0, float("nan"), "")] == [False] * 5
