"""Pi Fabric payloads: ``FabricExecutionTraceV1`` on ``fabric_exec`` results, and branch-summary
details envelopes (V1/V2) on ``branch_summary`` entries (reference §2.2–2.3).

Valid payloads follow the validators' key sets exactly; an invalid trace carries exactly one
named defect, so a test can tell which rule rejected it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from devtools.corpus.project import Project
from devtools.corpus.words import Text

__all__ = [
    "TRACE_DEFECTS",
    "AbandonedEntry",
    "Trace",
    "branch_details",
    "fabric_code",
    "make_trace",
]

_REFS = (
    "pi.read",
    "pi.read",
    "pi.edit",
    "pi.bash",
    "pi.bash",
    "pi.grep",
    "pi.find",
    "pi.ls",
    "pi.write",
    "agents.run",
    "state.get",
    "mesh.query",
)
_PHASES = ("inspect", "plan", "edit", "verify", "report")
TRACE_DEFECTS = (
    "unknown_trace_key",
    "wrong_version",
    "sequence_not_increasing",
    "unknown_operation_key",
    "bad_outcome",
)


@dataclass(frozen=True, slots=True)
class Trace:
    """A generated trace and what a normalizer should make of it."""

    value: dict[str, Any]
    valid: bool
    defect: str | None
    operations: int
    failed: int
    outcome: str


def _args(ref: str, text: Text, project: Project) -> dict[str, Any]:
    if ref in ("pi.read", "pi.write"):
        args: dict[str, Any] = {"path": text.pick(project.files)}
        if ref == "pi.write":
            args["content"] = text.code(text.rng.randint(1, 4))
        return args
    if ref == "pi.edit":
        return {
            "path": text.pick(project.files),
            "oldText": text.code_line(),
            "newText": text.code_line(),
        }
    if ref == "pi.bash":
        return {"command": project.command(text), "timeout": text.rng.choice((30, 60, 120))}
    if ref == "pi.grep":
        return {"pattern": text.pick(project.idents), "path": text.pick(project.dirs)}
    if ref == "pi.find":
        return {"pattern": f"*{text.pick(project.files)[-3:]}", "path": text.pick(project.dirs)}
    if ref == "pi.ls":
        return {"path": text.pick(project.dirs)}
    if ref == "agents.run":
        return {"agent": text.rng.choice(("reviewer", "scout", "worker")), "task": text.sentence()}
    if ref == "state.get":
        return {"key": text.identifier()}
    return {"query": text.short()}


def _result(ref: str, text: Text) -> dict[str, Any]:
    rng = text.rng
    if ref == "pi.bash":
        return {"exitCode": 0, "stdout": text.log(rng.randint(1, 3), rng.randint(0, 10**8))}
    if ref in ("pi.read", "pi.write", "pi.edit"):
        return {"bytes": rng.randint(40, 40_000), "lines": rng.randint(1, 900)}
    if ref == "agents.run":
        return {"status": "completed", "summary": text.sentence()}
    return {"matches": rng.randint(0, 40)}


def make_trace(text: Text, project: Project, defect: str | None = None) -> Trace:
    """A trace of 2–7 operations, some failed; ``defect`` breaks one validation rule."""
    rng = text.rng
    ops: list[dict[str, Any]] = []
    failed = 0
    for sequence in range(rng.randint(2, 7)):
        ref = rng.choice(_REFS)
        provider, action = ref.split(".", 1)
        op: dict[str, Any] = {
            "type": "call",
            "sequence": sequence,
            "ref": ref,
            "provider": provider,
            "action": action,
            "args": _args(ref, text, project),
        }
        roll = rng.random()
        if roll < 0.2:
            failed += 1
            op["outcome"] = "failed"
            op["failureStage"] = rng.choice(("invoke", "invoke", "validate", "guard", "prepare"))
            op["error"] = (
                "Call failed during invoke: exit 1"
                if op["failureStage"] == "invoke" and ref == "pi.bash"
                else f"Call failed during {op['failureStage']}"
            )
        elif roll < 0.25:
            failed += 1
            op["outcome"] = "timed_out"
            op["error"] = "Call timed out"
        else:
            op["outcome"] = "succeeded"
            op["result"] = _result(ref, text)
            if rng.random() < 0.1:
                op["resultTruncated"] = True
        ops.append(op)
    outcome = "failed" if failed and rng.random() < 0.6 else "succeeded"
    trace: dict[str, Any] = {
        "kind": "pi-fabric.execution",
        "version": 1,
        "outcome": outcome,
        "phases": rng.sample(_PHASES, rng.randint(1, 3)),
        "operations": ops,
        "counts": {
            "droppedValues": 0,
            "truncatedValues": sum(1 for op in ops if op.get("resultTruncated")),
            "redactedValues": 0,
            "droppedOperations": 0,
        },
    }
    if outcome == "failed":
        trace["error"] = "Execution failed"
    if defect == "unknown_trace_key":
        trace["filesTouched"] = [op["args"].get("path", "") for op in ops]
    elif defect == "wrong_version":
        trace["version"] = 2
    elif defect == "sequence_not_increasing":
        ops[-1]["sequence"] = ops[0]["sequence"]
    elif defect == "unknown_operation_key":
        ops[0]["durationMs"] = rng.randint(1, 900)
    elif defect == "bad_outcome":
        trace["outcome"] = "partial"
    return Trace(trace, defect is None, defect, len(ops), failed, outcome)


def fabric_code(text: Text, trace: Trace) -> str:
    """The ``fabric_exec`` program text that would have produced ``trace``."""
    lines = [f"// {text.sentence()}"]
    for op in trace.value["operations"]:
        ref = op["ref"]
        args = ", ".join(f"{k}: {v!r}" for k, v in op["args"].items() if isinstance(v, str | int))
        lines.append(f"const r{op['sequence']} = await {ref}({{ {args} }});")
    lines.append("return { ok: true };")
    return "\n".join(lines)


@dataclass(frozen=True, slots=True)
class AbandonedEntry:
    """What a branch summary can say about one entry of the abandoned branch."""

    entry_id: str
    kind: str  # user | custom_message | fabric_result | tool_call
    trace: Trace | None = None
    custom_type: str | None = None
    call_id: str | None = None
    tool: str | None = None
    args: dict[str, Any] | None = None
    outcome: str | None = None


def _fact(kind: str, entry_id: str, subordinal: str, **rest: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "entryId": entry_id,
        "subordinal": subordinal,
        "address": f"{entry_id}/{subordinal}",
        **rest,
    }


def branch_details(
    text: Text,
    version: int,
    abandoned: list[AbandonedEntry],
    old_leaf: str,
    path_ids: list[str],
) -> dict[str, Any]:
    """A ``pi-fabric.branch-summary`` envelope describing the abandoned entries.

    Fact texts are fresh prose, never copies of the entries, so nothing planted later on the
    abandoned branch reaches the active path through a fact.
    """
    facts: list[dict[str, Any]] = []
    for entry in abandoned:
        if entry.kind == "user":
            facts.append(_fact("user", entry.entry_id, "user", text=text.sentence()))
        elif entry.kind == "custom_message":
            facts.append(
                _fact(
                    "customMessage",
                    entry.entry_id,
                    "custom-message",
                    customType=entry.custom_type,
                    text=text.sentence(),
                    display=False,
                    details={"status": "completed"},
                )
            )
        elif entry.kind == "fabric_result" and entry.trace is not None and entry.trace.valid:
            for i, phase in enumerate(entry.trace.value["phases"]):
                facts.append(_fact("phase", entry.entry_id, f"phase:{i}", phase=phase))
            for op in entry.trace.value["operations"]:
                extra = {k: op[k] for k in ("error", "result") if k in op}
                facts.append(
                    _fact(
                        "operation",
                        entry.entry_id,
                        str(op["sequence"]),
                        ref=op["ref"],
                        provider=op["provider"],
                        action=op["action"],
                        tool=op["action"] if op["provider"] == "pi" else op["action"],
                        args=op["args"],
                        outcome=op["outcome"],
                        **extra,
                    )
                )
        elif entry.kind == "tool_call" and entry.call_id is not None:
            sub = f"call:{entry.call_id}"
            if entry.tool == "fabric_exec":
                if version == 2:
                    facts.append(
                        _fact(
                            "fabricRun",
                            entry.entry_id,
                            sub,
                            name=text.short(2, 5).capitalize(),
                            description=text.sentence(),
                            outcome=entry.outcome,
                        )
                    )
            else:
                facts.append(
                    _fact(
                        "operation",
                        entry.entry_id,
                        sub,
                        ref=f"pi.{entry.tool}",
                        provider="pi",
                        action=entry.tool,
                        tool=entry.tool,
                        args=entry.args or {},
                        outcome=entry.outcome,
                    )
                )
    facts = facts[:256]
    source: dict[str, Any] = {
        "firstEntryId": path_ids[0],
        "lastEntryId": path_ids[-1],
        "entryCount": len(path_ids),
    }
    if version == 2 or text.rng.random() < 0.5:
        source["oldLeafId"] = old_leaf
    return {
        "kind": "pi-fabric.branch-summary",
        "version": version,
        "source": source,
        "facts": facts,
        "omittedFacts": 0,
        "sections": ["[Fabric Activity]"] if facts else [],
        "request": {"text": "", "sourceBytes": 0, "truncated": False},
    }
