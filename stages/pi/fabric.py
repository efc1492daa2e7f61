"""Pi Fabric execution traces and their child entries, plus the JSON checks Fabric payloads share.

Two typed Fabric payloads inside Pi session records become child entries placed right after
their carrier (reference §2):

* ``FabricExecutionTraceV1`` at ``message.details.trace`` of the ``fabric_exec`` toolResult:
  one ``fabric_operation`` child per operation, addressed ``<carrierId>/<sequence>`` (here).
* Branch-summary details V1/V2 on ``branch_summary`` records and ``branchSummary`` messages:
  one ``fabric_branch_fact`` child per fact (``stages.pi.branch_details``).

Validation is all-or-nothing, as in the reference: a payload that breaks any rule yields no
children at all, and an invalid trace never falls back to the legacy ``details.audits``.
Prose (summaries, tool output) is never parsed; only these typed shapes are read. The checks
reproduce the reference validators' JavaScript semantics: ``Number.isSafeInteger``, finite
numbers, ``!== undefined`` (a present JSON null is not an absent key).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from stages.common import clean_text, js_trim, json_compact, json_size, json_value
from stages.families import fabric_family
from store.records import NormalizedEntry

__all__ = [
    "OPERATION_MAX_BYTES",
    "OUTCOMES",
    "TRACE_KIND",
    "TRACE_MAX_BYTES",
    "Trace",
    "TraceOperation",
    "bound_result",
    "equals_number",
    "finite_number",
    "has_only_keys",
    "is_member",
    "non_negative_int",
    "optional_str",
    "read_trace",
    "trace_children",
]

OUTCOMES = frozenset({"succeeded", "failed", "aborted", "timed_out"})

TRACE_KIND = "pi-fabric.execution"
TRACE_MAX_BYTES = 512 * 1024
OPERATION_MAX_BYTES = 96 * 1024
"""An operation whose JSON exceeds this keeps ``resultOmitted: true`` instead of its result."""

_MAX_SAFE_INTEGER = 2**53 - 1
_FAILURE_STAGES = frozenset({"resolve", "prepare", "validate", "approve", "invoke", "guard"})
_TRACE_KEYS = frozenset({"kind", "version", "outcome", "phases", "operations", "counts", "error"})
_TRACE_OPERATION_KEYS = frozenset(
    {
        "type",
        "sequence",
        "ref",
        "provider",
        "action",
        "args",
        "outcome",
        "normalization",
        "failureStage",
        "error",
        "result",
        "resultTruncated",
    }
)
_TRACE_COUNT_KEYS = ("droppedValues", "truncatedValues", "redactedValues", "droppedOperations")
# Trace JSON: containers deeper than this (args at depth 0) are rejected (MAX_DEPTH 12 + 2).
_TRACE_JSON_MAX_DEPTH = 14
_WITNESS_RULE_KINDS = frozenset({"key-form", "enum-form", "numeric-string", "optional-null"})
_WITNESS_MAX_RULES = 128
_UNSAFE_WITNESS_KEYS = frozenset({"__proto__", "prototype", "constructor"})
_HEX = frozenset("0123456789abcdef")

# Trace operations on these refs name a file in args.path / args.file / args.dir.
_PI_FILE_REFS = frozenset({"pi.read", "pi.grep", "pi.find", "pi.ls", "pi.edit", "pi.write"})


# ---------------------------------------------------------------------------------------------
# JSON checks shared with stages.pi.branch_details


def _safe_int(value: object) -> int | None:
    """``Number.isSafeInteger``: the int value, or None (bools are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) <= _MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return int(value)
    return None


def non_negative_int(value: object) -> bool:
    number = _safe_int(value)
    return number is not None and number >= 0


def equals_number(value: object, expected: int) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == expected


def finite_number(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a double is Infinity in JS
        return False


def is_member(value: object, allowed: frozenset[str]) -> bool:
    """Set membership for an arbitrary JSON value (a list or object is never a member)."""
    return isinstance(value, str) and value in allowed


def has_only_keys(value: dict[str, Any], allowed: frozenset[str]) -> bool:
    return all(key in allowed for key in value)


def _trace_json(value: object, depth: int = 0) -> bool:
    """JSON values only, finite numbers, containers at most ``_TRACE_JSON_MAX_DEPTH`` deep."""
    if value is None or isinstance(value, str | bool):
        return True
    if isinstance(value, int | float):
        return finite_number(value)
    if depth > _TRACE_JSON_MAX_DEPTH:
        return False
    if isinstance(value, list):
        return all(_trace_json(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _trace_json(v, depth + 1) for k, v in value.items())
    return False


def optional_str(value: dict[str, Any], key: str) -> bool:
    """Absent, or a string (a present null is invalid, as ``!== undefined`` makes it)."""
    return key not in value or isinstance(value[key], str)


# ---------------------------------------------------------------------------------------------
# FabricExecutionTraceV1


@dataclass(frozen=True, slots=True)
class TraceOperation:
    """One validated trace operation, projected: provider/action default to the split of
    ``ref`` at its first ``.``; ``tool`` is the action for provider ``pi``, else
    ``action ?? ref``. ``has_result`` separates an absent result from a JSON null."""

    sequence: int
    ref: str
    provider: str | None
    action: str | None
    tool: str
    args: dict[str, Any]
    outcome: str
    error: str | None
    result: Any
    has_result: bool


@dataclass(frozen=True, slots=True)
class Trace:
    phases: tuple[str, ...]
    operations: tuple[TraceOperation, ...]


def _is_digest(value: object) -> bool:
    return isinstance(value, str) and len(value) == 64 and all(c in _HEX for c in value)


def _is_witness_rule(value: object) -> bool:
    return (
        isinstance(value, dict)
        and len(value) == 2
        and isinstance(value.get("key"), str)
        and _utf16_length(value["key"]) <= 128
        and value["key"] not in _UNSAFE_WITNESS_KEYS
        and is_member(value.get("kind"), _WITNESS_RULE_KINDS)
    )


def _is_normal_form_witness(value: object) -> bool:
    """The anchor's ``NormalFormWitness``: exactly five keys, hex digests, 1..128 rules."""
    if not isinstance(value, dict) or len(value) != 5:
        return False
    rules = value.get("rules")
    return (
        equals_number(value.get("version"), 1)
        and _is_digest(value.get("baseSchemaDigest"))
        and _is_digest(value.get("beforeShape"))
        and _is_digest(value.get("afterShape"))
        and isinstance(rules, list)
        and 0 < len(rules) <= _WITNESS_MAX_RULES
        and all(_is_witness_rule(rule) for rule in rules)
    )


def _utf16_length(text: str) -> int:
    return len(text) + sum(1 for c in text if ord(c) > 0xFFFF)


def _valid_trace_operation(op: object) -> bool:
    if not isinstance(op, dict) or not has_only_keys(op, _TRACE_OPERATION_KEYS):
        return False
    if op.get("type") != "call" or not non_negative_int(op.get("sequence")):
        return False
    args = op.get("args")
    if not isinstance(op.get("ref"), str) or not isinstance(args, dict) or not _trace_json(args):
        return False
    if not is_member(op.get("outcome"), OUTCOMES):
        return False
    if not (optional_str(op, "provider") and optional_str(op, "action")):
        return False
    if "failureStage" in op and not is_member(op["failureStage"], _FAILURE_STAGES):
        return False
    if not optional_str(op, "error"):
        return False
    if "normalization" in op and not _is_normal_form_witness(op["normalization"]):
        return False
    if "resultTruncated" in op and not isinstance(op["resultTruncated"], bool):
        return False
    return "result" not in op or _trace_json(op["result"])


def _valid_trace(trace: object) -> bool:
    if not isinstance(trace, dict) or not has_only_keys(trace, _TRACE_KEYS):
        return False
    if trace.get("kind") != TRACE_KIND or not equals_number(trace.get("version"), 1):
        return False
    if not is_member(trace.get("outcome"), OUTCOMES):
        return False
    phases, operations, counts = trace.get("phases"), trace.get("operations"), trace.get("counts")
    if not isinstance(phases, list) or not all(isinstance(p, str) for p in phases):
        return False
    if not isinstance(operations, list) or not all(map(_valid_trace_operation, operations)):
        return False
    if not isinstance(counts, dict) or not has_only_keys(counts, frozenset(_TRACE_COUNT_KEYS)):
        return False
    if not all(non_negative_int(counts.get(key)) for key in _TRACE_COUNT_KEYS):
        return False
    if not optional_str(trace, "error"):
        return False
    previous = -1
    for op in operations:
        sequence = _safe_int(op["sequence"])
        if sequence is None or sequence <= previous:
            return False
        previous = sequence
    return json_size(trace) <= TRACE_MAX_BYTES


def _split_ref(ref: str) -> tuple[str | None, str | None]:
    """``pi.read`` → (``pi``, ``read``); no split when the dot is first, last or absent."""
    dot = ref.find(".")
    if dot <= 0 or dot == len(ref) - 1:
        return None, None
    return ref[:dot], ref[dot + 1 :]


def _project_operation(op: dict[str, Any]) -> TraceOperation:
    ref: str = op["ref"]
    lexical_provider, lexical_action = _split_ref(ref)
    # ``op.provider ?? lexical``: a present key wins even when it is "" (JSON null is invalid).
    provider = op.get("provider", lexical_provider)
    action = op.get("action", lexical_action)
    tool = action if provider == "pi" and action else (action if action is not None else ref)
    sequence = _safe_int(op["sequence"])
    assert sequence is not None  # validated
    return TraceOperation(
        sequence=sequence,
        ref=ref,
        provider=provider,
        action=action,
        tool=tool,
        args=op["args"],
        outcome=op["outcome"],
        error=op.get("error"),
        result=op.get("result"),
        has_result="result" in op,
    )


def read_trace(details: object) -> Trace | None:
    """The validated ``details.trace`` of a ``fabric_exec`` result, or None.

    None when ``details`` is not an object, has no ``trace`` key (legacy ``audits`` never
    become memory children), or the trace breaks any ``FabricExecutionTraceV1`` rule.
    """
    if not isinstance(details, dict) or "trace" not in details:
        return None
    trace = details["trace"]
    if not _valid_trace(trace):
        return None
    return Trace(
        phases=tuple(trace["phases"]),
        operations=tuple(_project_operation(op) for op in trace["operations"]),
    )


def bound_result(operation: dict[str, Any], result: Any, has_result: bool, keep: bool) -> None:
    """Append ``result`` (or ``resultOmitted``) to *operation*, then drop the result again if
    the whole operation's JSON is over ``OPERATION_MAX_BYTES``."""
    if not has_result:
        return
    if not keep:
        operation["resultOmitted"] = True
        return
    operation["result"] = json_value(result)
    if json_size(operation) > OPERATION_MAX_BYTES:
        del operation["result"]
        operation["resultOmitted"] = True


def _trace_files(ref: str, tool: str, args: dict[str, Any]) -> tuple[str, ...]:
    if ref not in _PI_FILE_REFS or ref != f"pi.{tool}":
        return ()
    path = next((args[k] for k in ("path", "file", "dir") if args.get(k) is not None), None)
    if not isinstance(path, str) or not js_trim(path):
        return ()
    return (clean_text(js_trim(path)),)


def trace_children(
    carrier: NormalizedEntry, trace: Trace, index_tool_output: bool
) -> list[NormalizedEntry]:
    """One ``fabric_operation`` entry per trace operation (not de-duplicated).

    The ``operation`` dict and the JSON in the text keep the reference's key order:
    address, parentEntryId, sequence, tool, ref, provider?, action?, args, outcome, error?,
    result | resultOmitted.
    """
    carrier_id = carrier.entry_id
    if carrier_id is None:
        return []
    children = []
    for op in trace.operations:
        address = f"{carrier_id}/{op.sequence}"
        operation: dict[str, Any] = {
            "address": address,
            "parentEntryId": carrier_id,
            "sequence": op.sequence,
            "tool": clean_text(op.tool),
            "ref": clean_text(op.ref),
        }
        if op.provider:
            operation["provider"] = clean_text(op.provider)
        if op.action:
            operation["action"] = clean_text(op.action)
        operation["args"] = json_value(op.args)
        operation["outcome"] = op.outcome
        if op.error is not None:
            operation["error"] = clean_text(op.error)
        bound_result(operation, op.result, op.has_result, index_tool_output)
        children.append(
            NormalizedEntry(
                index=carrier.index,
                entry_id=address,
                parent_id=carrier.parent_id,
                type="fabric_operation",
                role="fabricOperation",
                tool=operation["tool"],
                text=f"Fabric operation {operation['ref']}\n{json_compact(operation)}",
                timestamp=carrier.timestamp,
                is_error=op.outcome != "succeeded",
                truncated=False,
                line=carrier.line,
                offset=carrier.offset,
                agent=carrier.agent,
                parent_entry_id=carrier_id,
                operation_address=address,
                ref=operation["ref"],
                provider=operation.get("provider"),
                action=operation.get("action"),
                outcome=op.outcome,
                files_touched=_trace_files(op.ref, op.tool, op.args),
                operation=operation,
                sidechain=carrier.sidechain,
                family=fabric_family(op.provider, op.action, op.tool),
            )
        )
    return children
