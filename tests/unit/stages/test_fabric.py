"""Fabric execution traces (``stages.pi.fabric``) and branch-summary envelopes
(``stages.pi.branch_details``), reference §2: validation rules, child records, dedup, and the
exact output the reference shows in §2.4."""

from __future__ import annotations

import copy
from collections import Counter
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from stages.common import json_size
from stages.lineage import lineage
from stages.normalize import normalize
from stages.pi.branch_details import BRANCH_SUMMARY_MAX_BYTES, branch_children, read_branch_details
from stages.pi.fabric import OPERATION_MAX_BYTES, TRACE_MAX_BYTES, read_trace, trace_children
from stages.policy import Policy
from stages.read import read_session
from stages.source import SourceRecord, SourceSession
from store.records import NormalizedEntry

DATA = Path(__file__).parents[2] / "data" / "pi"


def carrier(entry_id: str | None = "r1", parent_id: str | None = "a1") -> NormalizedEntry:
    return NormalizedEntry(
        index=2, entry_id=entry_id, parent_id=parent_id, type="message", role="toolResult",
        tool="fabric_exec", text="", timestamp=1738368003000, is_error=True, truncated=False,
        line=4, offset=720,
    )  # fmt: skip


COUNTS = {"droppedValues": 0, "truncatedValues": 0, "redactedValues": 0, "droppedOperations": 0}
WITNESS = {
    "version": 1, "baseSchemaDigest": "0" * 64, "beforeShape": "a" * 64, "afterShape": "f" * 64,
    "rules": [{"kind": "enum-form", "key": "mode"}],
}  # fmt: skip


def operation(sequence: int = 0, ref: str = "pi.read", **fields: Any) -> dict[str, Any]:
    op: dict[str, Any] = {"type": "call", "sequence": sequence, "ref": ref}
    op["args"] = fields.pop("args", {"path": "src/a.ts"})
    op["outcome"] = fields.pop("outcome", "succeeded")
    op.update(fields)
    return op


def trace(*operations: dict[str, Any], **fields: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "kind": "pi-fabric.execution", "version": 1, "outcome": "succeeded", "phases": [],
        "operations": list(operations) or [operation()], "counts": dict(COUNTS),
    }  # fmt: skip
    value.update(fields)
    return value


def nest(depth: int) -> dict[str, Any]:
    """A chain of objects whose innermost one sits at *depth* below the outermost."""
    value: dict[str, Any] = {}
    for _ in range(depth):
        value = {"a": value}
    return value


# ---------------------------------------------------------------------------------------------
# The reference example (§2.2–§2.4), end to end through read → lineage → normalize


@pytest.fixture(scope="module")
def example() -> list[NormalizedEntry]:
    path = DATA / "normalize_fabric.jsonl"
    session = read_session(path.read_bytes(), str(path), "pi")
    result = normalize(session, lineage(session, "active"), Policy())
    assert result.reasons == ()
    return list(result.entries)


def test_trace_operation_child_matches_the_reference_json_exactly(
    example: list[NormalizedEntry],
) -> None:
    child = example[4]
    # §2.4, field for field (camelCase names mapped to ours).
    assert (child.index, child.entry_id, child.parent_id) == (4, "r1/1", "a1")
    assert (child.type, child.role, child.tool) == ("fabric_operation", "fabricOperation", "bash")
    assert child.text == (
        "Fabric operation pi.bash\n"
        '{"address":"r1/1","parentEntryId":"r1","sequence":1,"tool":"bash","ref":"pi.bash",'
        '"provider":"pi","action":"bash","args":{"command":"pnpm test","timeout":30},'
        '"outcome":"failed","error":"Call failed during invoke: exit 1"}'
    )
    assert (child.timestamp, child.is_error, child.truncated) == (1738368003000, True, False)
    assert (child.parent_entry_id, child.operation_address) == ("r1", "r1/1")
    assert (child.ref, child.provider, child.action, child.outcome) == (
        "pi.bash", "pi", "bash", "failed"
    )  # fmt: skip
    assert child.operation is not None
    assert list(child.operation) == [
        "address", "parentEntryId", "sequence", "tool", "ref", "provider", "action", "args",
        "outcome", "error",
    ]  # fmt: skip
    assert child.operation["args"] == {"command": "pnpm test", "timeout": 30}
    assert child.files_touched == ()  # bash is not one of the file refs
    assert (child.line, child.offset) == (example[2].line, example[2].offset)


def test_trace_children_follow_their_carrier_and_read_ops_touch_files(
    example: list[NormalizedEntry],
) -> None:
    assert [e.entry_id for e in example[2:5]] == ["r1", "r1/0", "r1/1"]
    read = example[3]
    assert read.files_touched == ("src/parser.ts",)
    assert read.operation == {
        "address": "r1/0", "parentEntryId": "r1", "sequence": 0, "tool": "read",
        "ref": "pi.read", "provider": "pi", "action": "read", "args": {"path": "src/parser.ts"},
        "outcome": "succeeded", "result": {"bytes": 120},
    }  # fmt: skip
    assert read.text.endswith(',"outcome":"succeeded","result":{"bytes":120}}')
    assert read.is_error is False


def test_digest_addresses_and_tool_histogram_match_the_reference_run(
    example: list[NormalizedEntry],
) -> None:
    def address(e: NormalizedEntry) -> list[Any]:
        return [e.index, e.entry_id, e.operation_address, e.role, e.tool, e.timestamp,
                e.ref, e.provider, e.action, e.outcome]  # fmt: skip

    assert address(example[4]) == [
        4, "r1/1", "r1/1", "fabricOperation", "bash", 1738368003000, "pi.bash", "pi", "bash",
        "failed",
    ]  # fmt: skip
    assert address(example[7]) == [
        7, "x3/phase:0", None, "fabricPhase", None, 1738368004000, None, None, None, None
    ]  # fmt: skip
    assert address(example[9]) == [
        9, "x2/call:call-9", "x2/call:call-9", "fabricRun", "fabric_exec", 1738368004000,
        "fabric_exec", None, None, "failed",
    ]  # fmt: skip
    histogram = Counter(e.tool for e in example if e.tool)
    assert dict(sorted(histogram.items())) == {"bash": 1, "edit": 1, "fabric_exec": 3, "read": 1}


def test_branch_fact_children_have_every_field_of_the_reference_table(
    example: list[NormalizedEntry],
) -> None:
    facts = example[6:10]
    assert all(f.type == "fabric_branch_fact" for f in facts)
    for f in facts:
        assert (f.parent_entry_id, f.carrier_entry_id, f.carrier_parent_id) == ("b1", "b1", "r1")
        assert (f.carrier_from_id, f.parent_id, f.timestamp) == ("old-leaf", "r1", 1738368004000)
        assert f.fact_address == f.entry_id
        assert f.branch_fact is not None and f.branch_fact["address"] == f.entry_id
    user, phase, op, run = facts
    assert (user.role, user.tool, user.text, user.is_error) == (
        "branchUser", None, "try the other parser", False
    )  # fmt: skip
    assert user.operation_address is None and user.ref is None
    assert user.branch_fact == {
        "kind": "user", "address": "x1/user", "entryId": "x1", "subordinal": "user",
        "carrierEntryId": "b1", "carrierParentId": "r1", "carrierFromId": "old-leaf",
        "text": "try the other parser",
    }  # fmt: skip
    assert (phase.role, phase.tool, phase.text, phase.is_error) == (
        "fabricPhase", None, "Fabric phase inspect", False
    )  # fmt: skip
    assert (phase.operation_address, phase.ref, phase.outcome) == (None, None, None)
    assert (op.role, op.tool, op.is_error, op.operation_address) == (
        "fabricOperation", "edit", True, "x3/0"
    )  # fmt: skip
    assert (op.ref, op.provider, op.action, op.outcome) == ("pi.edit", "pi", "edit", "failed")
    assert op.files_touched == ("src/alt.ts",)
    assert op.text == (
        "Fabric branch operation pi.edit\n"
        '{"address":"x3/0","parentEntryId":"x3","subordinal":"0","tool":"edit","ref":"pi.edit",'
        '"provider":"pi","action":"edit","args":{"path":"src/alt.ts"},"outcome":"failed",'
        '"error":"Call failed during invoke","result":{}}'
    )
    assert op.branch_fact is not None and list(op.branch_fact) == [
        "kind", "address", "entryId", "subordinal", "carrierEntryId", "carrierParentId",
        "carrierFromId", "ref", "provider", "action", "tool", "args", "outcome", "error", "result",
    ]  # fmt: skip
    assert (run.role, run.tool, run.is_error, run.operation_address) == (
        "fabricRun", "fabric_exec", True, "x2/call:call-9"
    )  # fmt: skip
    assert (run.ref, run.provider, run.action, run.outcome) == ("fabric_exec", None, None, "failed")
    assert run.text == "Fabric run Try alternative parser — abandoned attempt → failed"
    assert run.branch_fact == {
        "kind": "fabricRun", "address": "x2/call:call-9", "entryId": "x2",
        "subordinal": "call:call-9", "carrierEntryId": "b1", "carrierParentId": "r1",
        "carrierFromId": "old-leaf", "name": "Try alternative parser",
        "description": "abandoned attempt", "outcome": "failed",
    }  # fmt: skip


def test_without_tool_output_results_are_omitted_but_identity_stays(tmp_path: Path) -> None:
    path = DATA / "normalize_fabric.jsonl"
    session = read_session(path.read_bytes(), str(path), "pi")
    entries = normalize(session, lineage(session, "active"), Policy(index_tool_output=False))
    read, op = entries.entries[3], entries.entries[8]
    assert read.operation is not None and "result" not in read.operation
    assert read.operation["resultOmitted"] is True
    assert read.text.endswith('"outcome":"succeeded","resultOmitted":true}')
    assert op.branch_fact is not None and "result" not in op.branch_fact
    assert op.operation is not None and op.operation["resultOmitted"] is True
    assert (read.ref, read.outcome, read.files_touched) == (
        "pi.read",
        "succeeded",
        ("src/parser.ts",),
    )


# ---------------------------------------------------------------------------------------------
# FabricExecutionTraceV1 validation


def test_a_valid_trace_with_every_optional_key_is_read() -> None:
    full = operation(
        3, "pi.bash", args={"command": "make", "n": 1.5, "flags": [True, None]}, outcome="failed",
        provider="pi", action="bash", normalization=WITNESS, failureStage="invoke",
        error="Call failed during invoke: exit 2", result={"exitCode": 2}, resultTruncated=True,
    )  # fmt: skip
    read = read_trace({"trace": trace(operation(), full, error="Execution failed")})
    assert read is not None
    assert [op.sequence for op in read.operations] == [0, 3]
    assert read.operations[1].error == "Call failed during invoke: exit 2"
    assert read.operations[1].has_result and read.operations[1].result == {"exitCode": 2}


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda t: t.update(extra=1), id="unknown top-level key"),
        pytest.param(lambda t: t.update(kind="pi-fabric.exec"), id="wrong kind"),
        pytest.param(lambda t: t.update(version=2), id="version 2"),
        pytest.param(lambda t: t.update(version=True), id="version true"),
        pytest.param(lambda t: t.update(version="1"), id="version string"),
        pytest.param(lambda t: t.pop("version"), id="version missing"),
        pytest.param(lambda t: t.update(outcome="crashed"), id="outcome not in enum"),
        pytest.param(lambda t: t.update(outcome=["failed"]), id="outcome a list"),
        pytest.param(lambda t: t.update(phases=["ok", 3]), id="phase not a string"),
        pytest.param(lambda t: t.update(phases="inspect"), id="phases not a list"),
        pytest.param(lambda t: t.update(operations={}), id="operations not a list"),
        pytest.param(lambda t: t["counts"].pop("droppedOperations"), id="counts key missing"),
        pytest.param(lambda t: t["counts"].update(other=0), id="counts extra key"),
        pytest.param(lambda t: t["counts"].update(droppedValues=-1), id="negative count"),
        pytest.param(lambda t: t["counts"].update(droppedValues=0.5), id="fractional count"),
        pytest.param(lambda t: t["counts"].update(droppedValues=2**53), id="unsafe count"),
        pytest.param(lambda t: t.update(error=None), id="error null"),
        pytest.param(lambda t: t.update(error=5), id="error a number"),
        pytest.param(lambda t: t["operations"][0].update(extra=1), id="unknown op key"),
        pytest.param(lambda t: t["operations"][0].update(type="emit"), id="op type not call"),
        pytest.param(lambda t: t["operations"][0].update(sequence=-1), id="negative sequence"),
        pytest.param(lambda t: t["operations"][0].update(sequence=1.5), id="fractional sequence"),
        pytest.param(lambda t: t["operations"][0].update(sequence=False), id="bool sequence"),
        pytest.param(lambda t: t["operations"][0].update(ref=None), id="ref null"),
        pytest.param(lambda t: t["operations"][0].update(args=[]), id="args a list"),
        pytest.param(lambda t: t["operations"][0].update(args={"n": float("nan")}), id="NaN"),
        pytest.param(lambda t: t["operations"][0].update(args={"n": float("inf")}), id="inf"),
        pytest.param(lambda t: t["operations"][0].update(args={"n": 10**400}), id="huge int"),
        pytest.param(lambda t: t["operations"][0].update(args={"s": {1, 2}}), id="a set"),
        pytest.param(lambda t: t["operations"][0].update(args=nest(15)), id="args too deep"),
        pytest.param(lambda t: t["operations"][0].update(outcome="ok"), id="op outcome"),
        pytest.param(lambda t: t["operations"][0].update(provider=None), id="provider null"),
        pytest.param(lambda t: t["operations"][0].update(action=3), id="action a number"),
        pytest.param(lambda t: t["operations"][0].update(failureStage="run"), id="bad stage"),
        pytest.param(lambda t: t["operations"][0].update(error=["x"]), id="op error a list"),
        pytest.param(lambda t: t["operations"][0].update(resultTruncated=1), id="truncated 1"),
        pytest.param(lambda t: t["operations"][0].update(result=float("nan")), id="NaN result"),
        pytest.param(lambda t: t["operations"][0].update(normalization={}), id="empty witness"),
        pytest.param(
            lambda t: t["operations"][0].update(
                normalization={**WITNESS, "baseSchemaDigest": "A" * 64}
            ),
            id="witness digest not lowercase hex",
        ),
        pytest.param(
            lambda t: t["operations"][0].update(normalization={**WITNESS, "rules": []}),
            id="witness without rules",
        ),
        pytest.param(
            lambda t: t["operations"][0].update(
                normalization={**WITNESS, "rules": [{"kind": "key-form", "key": "__proto__"}]}
            ),
            id="witness unsafe key",
        ),
        pytest.param(
            lambda t: t["operations"][0].update(normalization={**WITNESS, "extra": 1}),
            id="witness extra key",
        ),
        pytest.param(
            lambda t: t.update(operations=[operation(2), operation(2)]), id="equal sequences"
        ),
        pytest.param(
            lambda t: t.update(operations=[operation(2), operation(1)]), id="decreasing sequences"
        ),
    ],
)
def test_a_trace_breaking_any_rule_is_rejected_whole(mutate: Any) -> None:
    value = trace(operation(0), operation(1, "pi.bash", args={"command": "ls"}))
    assert read_trace({"trace": value}) is not None
    mutate(value)
    assert read_trace({"trace": value}) is None


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda t: t.update(version=1.0), id="version 1.0"),
        pytest.param(lambda t: t["operations"][0].update(sequence=0.0), id="sequence 0.0"),
        pytest.param(lambda t: t["operations"][0].update(args=nest(14)), id="args 14 deep"),
        pytest.param(lambda t: t["operations"][0].update(provider=""), id="empty provider"),
        pytest.param(lambda t: t["operations"][0].update(result=None), id="null result"),
        pytest.param(lambda t: t["operations"][0].update(args={}), id="empty args"),
        pytest.param(lambda t: t.update(operations=[]), id="no operations"),
        pytest.param(lambda t: t.update(phases=["x"] * 600), id="many phases"),
    ],
)
def test_edges_a_valid_trace_may_have(mutate: Any) -> None:
    value = trace(operation(0))
    mutate(value)
    assert read_trace({"trace": value}) is not None


def test_the_serialized_trace_must_fit_512_kib() -> None:
    value = trace(operation(args={"content": ""}))
    pad = TRACE_MAX_BYTES - json_size(value)
    value["operations"][0]["args"]["content"] = "x" * pad
    assert json_size(value) == TRACE_MAX_BYTES
    assert read_trace({"trace": value}) is not None
    value["operations"][0]["args"]["content"] += "x"
    assert read_trace({"trace": value}) is None


def test_legacy_audits_never_become_children_and_are_no_fallback() -> None:
    audits = [{"ref": "pi.read", "args": {"path": "a"}, "success": True}]
    assert read_trace({"audits": audits}) is None
    assert read_trace({"trace": trace(version=2), "audits": audits}) is None
    assert read_trace({"trace": None}) is None
    assert read_trace(None) is None
    assert read_trace([trace()]) is None


@pytest.mark.parametrize(
    ("op", "tool", "provider", "action"),
    [
        (operation(ref="pi.read"), "read", "pi", "read"),
        (operation(ref="agents.run"), "run", "agents", "run"),
        (operation(ref="mcp.github.search"), "github.search", "mcp", "github.search"),
        (operation(ref="state"), "state", None, None),
        (operation(ref=".hidden"), ".hidden", None, None),
        (operation(ref="trailing."), "trailing.", None, None),
        (operation(ref="pi.read", provider="host", action="cat"), "cat", "host", "cat"),
        (operation(ref="x.y", provider="pi", action="grep"), "grep", "pi", "grep"),
        (operation(ref="pi.read", action=""), "", "pi", ""),
    ],
)
def test_provider_and_action_default_to_the_ref_split_and_tool_follows(
    op: dict[str, Any], tool: str, provider: str | None, action: str | None
) -> None:
    read = read_trace({"trace": trace(op)})
    assert read is not None
    projected = read.operations[0]
    assert (projected.tool, projected.provider, projected.action) == (tool, provider, action)


# ---------------------------------------------------------------------------------------------
# Trace children


def children(*operations: dict[str, Any], tool_output: bool = True) -> list[NormalizedEntry]:
    read = read_trace({"trace": trace(*operations)})
    assert read is not None
    return trace_children(carrier(), read, tool_output)


def test_an_empty_provider_or_action_is_left_out_of_the_operation() -> None:
    (child,) = children(operation(ref="pi.read", provider="", action=""))
    assert child.operation is not None
    assert "provider" not in child.operation and "action" not in child.operation
    assert (child.provider, child.action, child.tool) == (None, None, "")


def test_results_over_96_kib_are_omitted_from_the_operation() -> None:
    probe = children(operation(args={}, result=""))[0].operation
    assert probe is not None
    room = OPERATION_MAX_BYTES - json_size(probe)
    (fits,) = children(operation(args={}, result="r" * room))
    assert fits.operation is not None and fits.operation["result"] == "r" * room
    (over,) = children(operation(args={}, result="r" * (room + 1)))
    assert over.operation is not None and "result" not in over.operation
    assert over.operation["resultOmitted"] is True
    assert list(over.operation)[-1] == "resultOmitted"
    assert "rrrr" not in over.text


def test_operations_without_a_result_say_nothing_about_it() -> None:
    for tool_output in (True, False):
        (child,) = children(operation(), tool_output=tool_output)
        assert child.operation is not None
        assert "result" not in child.operation and "resultOmitted" not in child.operation


@pytest.mark.parametrize(
    ("op", "files"),
    [
        (operation(ref="pi.read", args={"path": " a.ts "}), ("a.ts",)),
        (operation(ref="pi.grep", args={"file": "b.ts", "dir": "c"}), ("b.ts",)),
        (operation(ref="pi.find", args={"path": None, "dir": "src"}), ("src",)),
        (operation(ref="pi.ls", args={"path": 3, "dir": "src"}), ()),
        (operation(ref="pi.edit", args={"path": "   "}), ()),
        (operation(ref="pi.write", args={"paths": ["a"]}), ()),
        (operation(ref="pi.bash", args={"path": "a.ts"}), ()),
        (operation(ref="agents.run", args={"path": "a.ts"}), ()),
        (operation(ref="pi.read", action="cat", args={"path": "a.ts"}), ()),
        (operation(ref="pi.read", provider="host", args={"path": "a.ts"}), ("a.ts",)),
    ],
)
def test_trace_files_touched_only_for_pi_file_refs(
    op: dict[str, Any], files: tuple[str, ...]
) -> None:
    (child,) = children(op)
    assert child.files_touched == files


def test_a_carrier_without_an_id_yields_no_trace_children() -> None:
    read = read_trace({"trace": trace()})
    assert read is not None
    assert trace_children(carrier(entry_id=None), read, True) == []


def test_trace_children_are_not_deduplicated_across_carriers() -> None:
    result = {"role": "toolResult", "toolName": "fabric_exec", "details": {"trace": trace()}}
    r1 = {"type": "message", "id": "r1", "message": result}
    r1_again = copy.deepcopy(r1)
    records = tuple(
        SourceRecord(position=i, line=i + 1, offset=i, id="r1", parent_id=None, kind="message",
                     value=v)
        for i, v in enumerate([r1, r1_again])
    )  # fmt: skip
    session = SourceSession(agent="pi", path="/p", session_id="s", cwd="/", version=3,
                            header=None, records=records)  # fmt: skip
    result = normalize(session, lineage(session, "all"), Policy())
    assert [e.entry_id for e in result.entries] == ["r1", "r1/0", "r1", "r1/0"]
    assert result.reasons == ("duplicate_entry_id", "duplicate_operation_address")


def test_only_the_fabric_exec_tool_result_carries_a_trace() -> None:
    details = {"trace": trace()}

    def entries(value: dict[str, Any]) -> list[NormalizedEntry]:
        record = SourceRecord(position=0, line=1, offset=0, id=value.get("id"), parent_id=None,
                              kind=value["type"], value=value)  # fmt: skip
        session = SourceSession(agent="pi", path="/p", session_id="s", cwd="/", version=3,
                                header=None, records=(record,))  # fmt: skip
        return list(normalize(session, lineage(session, "all"), Policy()).entries)

    result = {"role": "toolResult", "toolName": "fabric_exec", "details": details}
    assert len(entries({"type": "message", "id": "r", "message": result})) == 2
    other = dict(result, toolName="bash")
    assert len(entries({"type": "message", "id": "r", "message": other})) == 1
    assistant = {"role": "assistant", "content": [], "details": details}
    assert len(entries({"type": "message", "id": "r", "message": assistant})) == 1
    top_level = {
        "type": "message",
        "id": "r",
        "details": details,
        "message": dict(result, details={}),
    }
    assert len(entries(top_level)) == 1
    assert len(entries({"type": "message", "message": result})) == 1


# ---------------------------------------------------------------------------------------------
# Branch-summary envelopes


def envelope(version: int, *facts: dict[str, Any], **fields: Any) -> dict[str, Any]:
    value: dict[str, Any] = {
        "kind": "pi-fabric.branch-summary", "version": version,
        "source": {"firstEntryId": "x1", "lastEntryId": "x9", "entryCount": 9},
        "facts": list(facts), "omittedFacts": 0, "sections": [],
        "request": {"text": "", "sourceBytes": 0, "truncated": False},
    }  # fmt: skip
    value.update(fields)
    return value


def user_fact(entry_id: str = "x1", **fields: Any) -> dict[str, Any]:
    return {"kind": "user", "entryId": entry_id, "subordinal": "user",
            "address": f"{entry_id}/user", "text": "hi", **fields}  # fmt: skip


def op_fact(entry_id: str = "x3", sub: str = "0", **fields: Any) -> dict[str, Any]:
    fact = {"kind": "operation", "entryId": entry_id, "subordinal": sub,
            "address": f"{entry_id}/{sub}", "ref": "pi.edit", "tool": "edit",
            "args": {"path": "a.ts"}, "outcome": "succeeded"}  # fmt: skip
    fact.update(fields)
    return fact


def run_fact(**fields: Any) -> dict[str, Any]:
    return {"kind": "fabricRun", "entryId": "x2", "subordinal": "call:c9",
            "address": "x2/call:c9", "name": "Run", "outcome": "failed", **fields}  # fmt: skip


CUSTOM_FACT = {
    "kind": "customMessage", "entryId": "x5", "subordinal": "custom-message",
    "address": "x5/custom-message", "customType": "t", "text": "x", "display": True,
    "details": {"status": "ok"},
}  # fmt: skip
PHASE_FACT = {
    "kind": "phase", "entryId": "x3", "subordinal": "phase:0", "address": "x3/phase:0",
    "phase": "inspect",
}  # fmt: skip


def test_v1_and_v2_envelopes_are_read_and_fabric_runs_are_v2_only() -> None:
    v1 = read_branch_details(envelope(1, user_fact(), CUSTOM_FACT, PHASE_FACT, op_fact()))
    assert v1 is not None and v1.version == 1 and len(v1.facts) == 4
    v2 = read_branch_details(envelope(2, user_fact(), run_fact(), op_fact()))
    assert v2 is not None and v2.version == 2
    assert read_branch_details(envelope(1, run_fact())) is None
    assert read_branch_details(envelope(3, user_fact())) is None


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda e: e.update(extra=1), id="unknown envelope key"),
        pytest.param(lambda e: e.update(kind="pi-fabric.execution"), id="wrong kind"),
        pytest.param(lambda e: e.update(version=True), id="version true"),
        pytest.param(lambda e: e["source"].update(extra=1), id="unknown source key"),
        pytest.param(lambda e: e["source"].update(firstEntryId=1), id="firstEntryId number"),
        pytest.param(lambda e: e["source"].pop("lastEntryId"), id="lastEntryId missing"),
        pytest.param(lambda e: e["source"].update(entryCount=-1), id="negative entryCount"),
        pytest.param(lambda e: e["source"].update(oldLeafId=5), id="oldLeafId number"),
        pytest.param(lambda e: e.update(facts=[user_fact()] * 257), id="257 facts"),
        pytest.param(lambda e: e.update(omittedFacts=0.5), id="fractional omittedFacts"),
        pytest.param(lambda e: e.update(sections=["s"] * 65), id="65 sections"),
        pytest.param(lambda e: e.update(sections=[1]), id="section not a string"),
        pytest.param(lambda e: e["request"].update(extra=1), id="unknown request key"),
        pytest.param(lambda e: e["request"].update(truncated=0), id="truncated not bool"),
        pytest.param(lambda e: e["request"].update(sourceBytes=-1), id="negative sourceBytes"),
        pytest.param(lambda e: e["request"].update(text=None), id="request text null"),
        pytest.param(
            lambda e: e["facts"].append({**user_fact("y"), "address": "y/x"}),
            id="address is not entryId/subordinal",
        ),
        pytest.param(lambda e: e["facts"].append(user_fact("y", extra=1)), id="unknown fact key"),
        pytest.param(lambda e: e["facts"].append({**user_fact("y"), "text": None}), id="text null"),
        pytest.param(
            lambda e: e["facts"].append({**user_fact("y"), "kind": "note"}), id="unknown fact kind"
        ),
        pytest.param(
            lambda e: e["facts"].append({**CUSTOM_FACT, "display": "yes"}), id="display not bool"
        ),
        pytest.param(lambda e: e["facts"].append({**PHASE_FACT, "phase": 1}), id="phase number"),
        pytest.param(lambda e: e["facts"].append(op_fact("y", outcome="done")), id="op outcome"),
        pytest.param(lambda e: e["facts"].append(op_fact("y", provider=None)), id="provider null"),
        pytest.param(lambda e: e["facts"].append(op_fact("y", args=[1])), id="args a list"),
        pytest.param(lambda e: e["facts"].append(op_fact("y", args=nest(17))), id="depth 17"),
        pytest.param(
            lambda e: e["facts"].append(op_fact("y", args={"a": [0] * 257})), id="collection of 257"
        ),
        pytest.param(
            lambda e: e["facts"].append(op_fact("y", result=float("inf"))), id="infinite result"
        ),
        pytest.param(
            lambda e: e["facts"].extend(op_fact(f"n{i}", args={"a": [0] * 255}) for i in range(16)),
            id="over 4096 nodes",
        ),
        pytest.param(lambda e: e["facts"].append(run_fact(name="  ")), id="blank run name"),
        pytest.param(
            lambda e: e["facts"].append(run_fact(name="é" * 129)), id="run name over 256 bytes"
        ),
        pytest.param(
            lambda e: e["facts"].append(run_fact(description="x" * 1025)),
            id="description over 1024 bytes",
        ),
        pytest.param(
            lambda e: e["facts"].append(run_fact(description=None)), id="description null"
        ),
        pytest.param(
            lambda e: e["facts"].append(run_fact(subordinal="call:", address="x2/call:")),
            id="empty call id",
        ),
        pytest.param(
            lambda e: e["facts"].append(run_fact(subordinal="c9", address="x2/c9")),
            id="run subordinal not call:",
        ),
        pytest.param(lambda e: e["facts"].append(run_fact(extra=1)), id="run extra key"),
        pytest.param(lambda e: e["facts"].append(run_fact(outcome="ok")), id="run outcome"),
    ],
)
def test_an_envelope_breaking_any_rule_is_rejected_whole(mutate: Any) -> None:
    value = envelope(2, user_fact(), CUSTOM_FACT, PHASE_FACT, op_fact(), run_fact())
    assert read_branch_details(value) is not None
    mutate(value)
    assert read_branch_details(value) is None


@pytest.mark.parametrize(
    "mutate",
    [
        pytest.param(lambda e: e["source"].update(oldLeafId=None), id="oldLeafId null"),
        pytest.param(lambda e: e["source"].update(oldLeafId="leaf"), id="oldLeafId string"),
        pytest.param(lambda e: e["facts"].append(op_fact("y", args=nest(16))), id="depth 16"),
        pytest.param(
            lambda e: e["facts"].append(op_fact("y", args={"a": [0] * 256})), id="collection of 256"
        ),
        pytest.param(
            lambda e: e["facts"].extend(op_fact(f"n{i}", args={"a": [0] * 255}) for i in range(15)),
            id="under 4096 nodes",
        ),
        pytest.param(lambda e: e["facts"].append(run_fact(name="é" * 128)), id="name 256 bytes"),
        pytest.param(lambda e: e.update(sections=["s"] * 64), id="64 sections"),
        pytest.param(
            lambda e: e.update(facts=[user_fact(f"u{i}") for i in range(256)]), id="256 facts"
        ),
    ],
)
def test_edges_a_valid_envelope_may_have(mutate: Any) -> None:
    value = envelope(2, run_fact())
    mutate(value)
    assert read_branch_details(value) is not None


def test_the_serialized_envelope_must_fit_128_kib() -> None:
    value = envelope(1, user_fact())
    value["request"]["text"] = "x" * (BRANCH_SUMMARY_MAX_BYTES - json_size(value))
    assert read_branch_details(value) is not None
    value["request"]["text"] += "x"
    assert read_branch_details(value) is None


# ---------------------------------------------------------------------------------------------
# Branch fact children and their dedup


def branch_carrier(entry_id: str | None = "b1") -> NormalizedEntry:
    return NormalizedEntry(
        index=5, entry_id=entry_id, parent_id="r1", type="branch_summary", role="branchSummary",
        tool=None, text="", timestamp=1738368004000, is_error=False, truncated=False, line=5,
        offset=900,
    )  # fmt: skip


def facts_of(*facts: dict[str, Any], seen: set[str] | None = None, tool_output: bool = True,
             entry_id: str | None = "b1") -> tuple[list[NormalizedEntry], set[str]]:  # fmt: skip
    details = read_branch_details(envelope(2, *facts))
    assert details is not None
    return branch_children(
        branch_carrier(entry_id), details, "old", tool_output, set() if seen is None else seen
    )


def test_a_repeated_operation_address_rejects_the_envelope_with_both_reasons() -> None:
    found, reasons = facts_of(user_fact(), op_fact(), op_fact())
    assert found == []
    assert reasons == {"duplicate_branch_fact_address", "duplicate_operation_address"}


def test_a_repeated_non_operation_address_rejects_the_envelope() -> None:
    found, reasons = facts_of(user_fact(), op_fact(), user_fact())
    assert (found, reasons) == ([], {"duplicate_branch_fact_address"})


def test_the_first_repeat_in_the_envelope_decides_the_reasons() -> None:
    # The user address repeats before the operation address does.
    _, reasons = facts_of(op_fact(), user_fact(), user_fact(), op_fact())
    assert reasons == {"duplicate_branch_fact_address"}
    _, reasons = facts_of(user_fact(), op_fact(), op_fact(), user_fact())
    assert reasons == {"duplicate_branch_fact_address", "duplicate_operation_address"}


def test_across_carriers_the_earliest_address_wins() -> None:
    seen: set[str] = set()
    first, _ = facts_of(user_fact(), op_fact(), seen=seen)
    second, reasons = facts_of(op_fact(), user_fact("x7"), seen=seen)
    assert [c.entry_id for c in first] == ["x1/user", "x3/0"]
    assert [c.entry_id for c in second] == ["x7/user"]
    assert reasons == set()
    assert seen == {"x1/user", "x3/0", "x7/user"}


def test_a_rejected_envelope_does_not_claim_its_addresses() -> None:
    seen: set[str] = set()
    facts_of(user_fact(), user_fact(), seen=seen)
    later, _ = facts_of(user_fact(), seen=seen)
    assert [c.entry_id for c in later] == ["x1/user"]


def test_a_carrier_without_an_id_yields_no_fact_children() -> None:
    assert facts_of(user_fact(), entry_id=None) == ([], set())


def test_custom_message_fact_text_and_fields() -> None:
    untyped = {**CUSTOM_FACT, "customType": "", "address": "x6/custom-message", "entryId": "x6"}
    (typed, plain), _ = facts_of(CUSTOM_FACT, untyped)
    assert (typed.role, typed.text, typed.tool, typed.is_error) == (
        "branchCustomMessage", "[t] x", None, False
    )  # fmt: skip
    assert plain.text == "x"
    assert typed.branch_fact is not None and list(typed.branch_fact)[-3:] == [
        "text", "customType", "display"
    ]  # fmt: skip
    assert "details" not in typed.branch_fact


def test_fabric_run_without_description_and_succeeded() -> None:
    (run,), _ = facts_of(run_fact(outcome="succeeded"))
    assert (run.text, run.is_error) == ("Fabric run Run → succeeded", False)
    assert run.branch_fact is not None and "description" not in run.branch_fact
    (empty,), _ = facts_of(run_fact(description=""))
    assert empty.text == "Fabric run Run → failed"
    assert empty.branch_fact is not None and empty.branch_fact["description"] == ""


def test_branch_operation_files_use_the_path_key_rule_and_results_follow_policy() -> None:
    fact = op_fact(ref="agents.run", provider="agents", action="run", tool="run",
                   args={"task": "fix src/x.ts", "targetFiles": ["a.ts", " b.ts "],
                         "nested": {"filePath": "a.ts"}},
                   result={"ok": True}, error="e")  # fmt: skip
    (child,), _ = facts_of(fact)
    assert child.files_touched == ("a.ts", "b.ts")
    assert child.operation is not None and child.operation["result"] == {"ok": True}
    assert child.branch_fact is not None and child.branch_fact["result"] == {"ok": True}
    (hidden,), _ = facts_of(fact, tool_output=False)
    assert hidden.operation is not None and hidden.operation["resultOmitted"] is True
    assert hidden.branch_fact is not None and "result" not in hidden.branch_fact
    assert (hidden.ref, hidden.provider, hidden.action, hidden.tool) == (
        "agents.run", "agents", "run", "run"
    )  # fmt: skip


def test_branch_operation_results_over_96_kib_are_omitted() -> None:
    (probe,), _ = facts_of(op_fact(args={}, result=""))
    assert probe.operation is not None
    room = OPERATION_MAX_BYTES - json_size(probe.operation)
    (fits,), _ = facts_of(op_fact(args={}, result="r" * room))
    assert fits.operation is not None and "result" in fits.operation
    (over,), _ = facts_of(op_fact(args={}, result="r" * (room + 1)))
    assert over.operation is not None and over.operation.get("resultOmitted") is True
    assert over.branch_fact is not None and "result" in over.branch_fact


def test_envelopes_on_message_carriers_and_the_top_level_details_first() -> None:
    v2 = envelope(2, user_fact("m1"))
    v1 = envelope(1, user_fact("m2"))

    def entries(value: dict[str, Any]) -> list[str | None]:
        record = SourceRecord(position=0, line=1, offset=0, id="c", parent_id=None,
                              kind=value["type"], value=value)  # fmt: skip
        session = SourceSession(agent="pi", path="/p", session_id="s", cwd="/", version=3,
                                header=None, records=(record,))  # fmt: skip
        return [e.entry_id for e in normalize(session, lineage(session, "all"), Policy()).entries]

    message = {"role": "branchSummary", "summary": "s", "details": v2}
    assert entries({"type": "message", "id": "c", "message": message}) == ["c", "m1/user"]
    both = {"type": "message", "id": "c", "details": v1, "message": message}
    assert entries(both) == ["c", "m2/user"]
    bad_top = {
        "type": "branch_summary",
        "id": "c",
        "details": {"kind": "x"},
        "message": {"details": v2},
    }
    assert entries(bad_top) == ["c", "m1/user"]
    tool = {"role": "toolResult", "toolName": "read", "details": v2}
    assert entries({"type": "message", "id": "c", "message": tool}) == ["c"]
    prose = {"type": "branch_summary", "id": "c", "summary": "x1/user was great", "details": {}}
    assert entries(prose) == ["c"]


def test_carrier_from_id_prefers_the_record_then_the_message() -> None:
    value = envelope(2, user_fact())

    def from_id(record: dict[str, Any]) -> str | None:
        rec = SourceRecord(position=0, line=1, offset=0, id="c", parent_id="p",
                           kind=record["type"], value=record)  # fmt: skip
        session = SourceSession(agent="pi", path="/p", session_id="s", cwd="/", version=3,
                                header=None, records=(rec,))  # fmt: skip
        entries = normalize(session, lineage(session, "all"), Policy()).entries
        return entries[1].carrier_from_id

    assert from_id({"type": "branch_summary", "id": "c", "fromId": "f", "details": value}) == "f"
    message = {"role": "branchSummary", "fromId": "m", "details": value}
    assert from_id({"type": "message", "id": "c", "message": message}) == "m"
    assert from_id({"type": "message", "id": "c", "fromId": 3, "message": message}) == "m"
    assert from_id({"type": "branch_summary", "id": "c", "details": value}) is None


# ---------------------------------------------------------------------------------------------
# Hypothesis: valid payloads with arbitrary parts replaced never make the readers raise

_json = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(), st.floats(), st.text(max_size=5),
              st.sampled_from(["call", "pi.read", "succeeded", "user", "x1", "\ud83d"])),
    lambda inner: st.one_of(st.lists(inner, max_size=3),
                            st.dictionaries(st.text(max_size=5), inner, max_size=3)),
    max_leaves=10,
)  # fmt: skip


def paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    found = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            found += paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            found += paths(v, (*prefix, i))
    return found


def replaced(value: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    out = copy.deepcopy(value)
    node = out
    for step in path[:-1]:
        node = node[step]
    node[path[-1]] = new
    return out


FULL_TRACE = trace(
    operation(0, normalization=WITNESS, result={"r": [1, 2]}),
    operation(4, "agents.run", outcome="failed", error="e", failureStage="invoke"),
    error="Execution failed",
)
FULL_ENVELOPE = envelope(2, user_fact(), CUSTOM_FACT, PHASE_FACT, op_fact(result=[1]), run_fact())


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(data=st.data())
def test_mutated_payloads_never_make_the_readers_or_normalizer_raise(data: st.DataObject) -> None:
    t_path = data.draw(st.sampled_from(paths(FULL_TRACE)))
    e_path = data.draw(st.sampled_from(paths(FULL_ENVELOPE)))
    new = data.draw(_json)
    bad_trace = replaced(FULL_TRACE, t_path, new)
    bad_envelope = replaced(FULL_ENVELOPE, e_path, new)
    read_trace({"trace": bad_trace})
    read_branch_details(bad_envelope)
    records = (
        {"type": "message", "id": "r", "message": {"role": "toolResult", "toolName": "fabric_exec",
                                                   "details": {"trace": bad_trace}}},
        {"type": "branch_summary", "id": "b", "details": bad_envelope},
    )  # fmt: skip
    session = SourceSession(
        agent="pi", path="/p", session_id="s", cwd="/", version=3, header=None,
        records=tuple(SourceRecord(position=i, line=i, offset=i, id=v["id"], parent_id=None,
                                   kind=v["type"], value=v) for i, v in enumerate(records)),
    )  # fmt: skip
    result = normalize(session, lineage(session, "all"), Policy())
    for entry in result.entries:
        orjson.dumps(entry.to_wire())


def test_a_summarized_abandoned_call_shares_its_address_with_the_call_itself() -> None:
    # Given a call on an abandoned branch and a branch summary whose operation fact names it
    fact = op_fact("a1", "call:c1", ref="pi.read", tool="read", args={"path": "a.ts"})
    values = [
        {"type": "message", "id": "u1", "parentId": None,
         "message": {"role": "user", "content": "go"}},
        {"type": "message", "id": "a1", "parentId": "u1",
         "message": {"role": "assistant", "content": [
             {"type": "toolCall", "id": "c1", "name": "read", "arguments": {"path": "a.ts"}}]}},
        {"type": "branch_summary", "id": "b1", "parentId": "u1", "fromId": "a1",
         "details": envelope(2, fact)},
    ]  # fmt: skip
    records = tuple(
        SourceRecord(position=i, line=i + 2, offset=i, id=v["id"], parent_id=v["parentId"],
                     kind=v["type"], value=v)
        for i, v in enumerate(values)
    )  # fmt: skip
    session = SourceSession(agent="pi", path="/p", session_id="s", cwd="/", version=3,
                            header=None, records=records)  # fmt: skip
    # When normalized on the active branch, only the fact carries the address
    active = normalize(session, lineage(session, "active"), Policy())
    assert [(e.entry_id, e.operation_address) for e in active.entries] == [
        ("u1", None), ("b1", None), ("a1/call:c1", "a1/call:c1")
    ]  # fmt: skip
    assert active.reasons == ()
    # And with every branch, the live call and its summary are one address twice
    everything = normalize(session, lineage(session, "all"), Policy())
    addresses = [e.operation_address for e in everything.entries if e.operation_address]
    assert addresses == ["a1/call:c1", "a1/call:c1"]
    assert everything.reasons == ("duplicate_operation_address",)
