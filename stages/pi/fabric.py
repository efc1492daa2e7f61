"""Pi Fabric payloads: execution traces and branch-summary envelopes, and their child entries.

Two typed payloads inside Pi session records become child entries placed right after their
carrier (reference §2):

* ``FabricExecutionTraceV1`` at ``message.details.trace`` of the ``fabric_exec`` toolResult:
  one ``fabric_operation`` child per operation, addressed ``<carrierId>/<sequence>``.
* Branch-summary details V1/V2 at the top-level ``details`` of a ``branch_summary`` record or
  at ``message.details`` of a ``branchSummary`` message: one ``fabric_branch_fact`` child per
  fact, addressed by the fact's own ``address``.

Validation is all-or-nothing, as in the reference: a payload that breaks any rule yields no
children at all, and an invalid trace never falls back to the legacy ``details.audits``.
Prose (summaries, tool output) is never parsed; only these typed shapes are read.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from stages.common import (
    clean_text,
    files_touched,
    js_trim,
    json_compact,
    json_size,
    json_value,
    utf8_size,
)
from store.records import NormalizedEntry

__all__ = [
    "BRANCH_SUMMARY_KIND",
    "BRANCH_SUMMARY_MAX_BYTES",
    "OPERATION_MAX_BYTES",
    "OUTCOMES",
    "TRACE_KIND",
    "TRACE_MAX_BYTES",
    "BranchDetails",
    "Trace",
    "TraceOperation",
    "branch_children",
    "read_branch_details",
    "read_trace",
    "trace_children",
]

OUTCOMES = frozenset({"succeeded", "failed", "aborted", "timed_out"})

TRACE_KIND = "pi-fabric.execution"
TRACE_MAX_BYTES = 512 * 1024
BRANCH_SUMMARY_KIND = "pi-fabric.branch-summary"
BRANCH_SUMMARY_MAX_BYTES = 128 * 1024
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

_ENVELOPE_KEYS = frozenset(
    {"kind", "version", "source", "facts", "omittedFacts", "sections", "request"}
)
_SOURCE_KEYS = frozenset({"firstEntryId", "lastEntryId", "entryCount", "oldLeafId"})
_REQUEST_KEYS = frozenset({"text", "sourceBytes", "truncated"})
_MAX_FACTS = 256
_MAX_SECTIONS = 64
_DETAILS_MAX_NODES = 4096
_DETAILS_MAX_COLLECTION = 256
_DETAILS_MAX_DEPTH = 16
_RUN_NAME_MAX_BYTES = 256
_RUN_DESCRIPTION_MAX_BYTES = 1024
_BASE_FACT_KEYS = ("kind", "entryId", "subordinal", "address")
_FACT_KEYS = {
    "user": frozenset({*_BASE_FACT_KEYS, "text"}),
    "customMessage": frozenset({*_BASE_FACT_KEYS, "customType", "text", "display", "details"}),
    "phase": frozenset({*_BASE_FACT_KEYS, "phase"}),
    "operation": frozenset(
        {
            *_BASE_FACT_KEYS,
            *("ref", "provider", "action", "tool", "args", "outcome", "error", "result"),
        }
    ),
    "fabricRun": frozenset({*_BASE_FACT_KEYS, "name", "description", "outcome"}),
}

# Trace operations on these refs name a file in args.path / args.file / args.dir.
_PI_FILE_REFS = frozenset({"pi.read", "pi.grep", "pi.find", "pi.ls", "pi.edit", "pi.write"})


# ---------------------------------------------------------------------------------------------
# Shared JSON checks


def _safe_int(value: object) -> int | None:
    """``Number.isSafeInteger``: the int value, or None (bools are not numbers)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return value if abs(value) <= _MAX_SAFE_INTEGER else None
    if isinstance(value, float) and value.is_integer() and abs(value) <= _MAX_SAFE_INTEGER:
        return int(value)
    return None


def _non_negative_int(value: object) -> bool:
    number = _safe_int(value)
    return number is not None and number >= 0


def _equals_number(value: object, expected: int) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool) and value == expected


def _finite_number(value: int | float) -> bool:
    try:
        return math.isfinite(value)
    except OverflowError:  # an int too large for a double is Infinity in JS
        return False


def _member(value: object, allowed: frozenset[str]) -> bool:
    """Set membership for an arbitrary JSON value (a list or object is never a member)."""
    return isinstance(value, str) and value in allowed


def _only_keys(value: dict[str, Any], allowed: frozenset[str]) -> bool:
    return all(key in allowed for key in value)


def _trace_json(value: object, depth: int = 0) -> bool:
    """JSON values only, finite numbers, containers at most ``_TRACE_JSON_MAX_DEPTH`` deep."""
    if value is None or isinstance(value, str | bool):
        return True
    if isinstance(value, int | float):
        return _finite_number(value)
    if depth > _TRACE_JSON_MAX_DEPTH:
        return False
    if isinstance(value, list):
        return all(_trace_json(item, depth + 1) for item in value)
    if isinstance(value, dict):
        return all(isinstance(k, str) and _trace_json(v, depth + 1) for k, v in value.items())
    return False


@dataclass(slots=True)
class _NodeBudget:
    nodes: int = 0


def _details_json(value: object, budget: _NodeBudget, depth: int = 0) -> bool:
    """Branch-details JSON: ≤ 4096 nodes per envelope, collections ≤ 256, depth ≤ 16."""
    budget.nodes += 1
    if budget.nodes > _DETAILS_MAX_NODES:
        return False
    if value is None or isinstance(value, str | bool):
        return True
    if isinstance(value, int | float):
        return _finite_number(value)
    if depth > _DETAILS_MAX_DEPTH:
        return False
    if isinstance(value, list):
        return len(value) <= _DETAILS_MAX_COLLECTION and all(
            _details_json(item, budget, depth + 1) for item in value
        )
    if isinstance(value, dict):
        return len(value) <= _DETAILS_MAX_COLLECTION and all(
            isinstance(k, str) and _details_json(v, budget, depth + 1) for k, v in value.items()
        )
    return False


def _optional_str(value: dict[str, Any], key: str) -> bool:
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
        and _member(value.get("kind"), _WITNESS_RULE_KINDS)
    )


def _is_normal_form_witness(value: object) -> bool:
    """The anchor's ``NormalFormWitness``: exactly five keys, hex digests, 1..128 rules."""
    if not isinstance(value, dict) or len(value) != 5:
        return False
    rules = value.get("rules")
    return (
        _equals_number(value.get("version"), 1)
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
    if not isinstance(op, dict) or not _only_keys(op, _TRACE_OPERATION_KEYS):
        return False
    if op.get("type") != "call" or not _non_negative_int(op.get("sequence")):
        return False
    args = op.get("args")
    if not isinstance(op.get("ref"), str) or not isinstance(args, dict) or not _trace_json(args):
        return False
    if not _member(op.get("outcome"), OUTCOMES):
        return False
    if not (_optional_str(op, "provider") and _optional_str(op, "action")):
        return False
    if "failureStage" in op and not _member(op["failureStage"], _FAILURE_STAGES):
        return False
    if not _optional_str(op, "error"):
        return False
    if "normalization" in op and not _is_normal_form_witness(op["normalization"]):
        return False
    if "resultTruncated" in op and not isinstance(op["resultTruncated"], bool):
        return False
    return "result" not in op or _trace_json(op["result"])


def _valid_trace(trace: object) -> bool:
    if not isinstance(trace, dict) or not _only_keys(trace, _TRACE_KEYS):
        return False
    if trace.get("kind") != TRACE_KIND or not _equals_number(trace.get("version"), 1):
        return False
    if not _member(trace.get("outcome"), OUTCOMES):
        return False
    phases, operations, counts = trace.get("phases"), trace.get("operations"), trace.get("counts")
    if not isinstance(phases, list) or not all(isinstance(p, str) for p in phases):
        return False
    if not isinstance(operations, list) or not all(map(_valid_trace_operation, operations)):
        return False
    if not isinstance(counts, dict) or not _only_keys(counts, frozenset(_TRACE_COUNT_KEYS)):
        return False
    if not all(_non_negative_int(counts.get(key)) for key in _TRACE_COUNT_KEYS):
        return False
    if not _optional_str(trace, "error"):
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


def _bounded_operation(
    operation: dict[str, Any], result: Any, has_result: bool, keep: bool
) -> None:
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
        _bounded_operation(operation, op.result, op.has_result, index_tool_output)
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
            )
        )
    return children


# ---------------------------------------------------------------------------------------------
# Branch-summary details V1 / V2


@dataclass(frozen=True, slots=True)
class BranchDetails:
    """A validated branch-summary envelope; ``facts`` are the raw (validated) fact objects."""

    version: int
    facts: tuple[dict[str, Any], ...]


def _valid_fact_v1(fact: object, budget: _NodeBudget) -> bool:
    if not isinstance(fact, dict):
        return False
    entry_id, subordinal, address = fact.get("entryId"), fact.get("subordinal"), fact.get("address")
    if not (isinstance(entry_id, str) and isinstance(subordinal, str) and isinstance(address, str)):
        return False
    if address != f"{entry_id}/{subordinal}":
        return False
    kind = fact.get("kind")
    if kind == "user":
        return _only_keys(fact, _FACT_KEYS["user"]) and isinstance(fact.get("text"), str)
    if kind == "customMessage":
        return (
            _only_keys(fact, _FACT_KEYS["customMessage"])
            and isinstance(fact.get("customType"), str)
            and isinstance(fact.get("text"), str)
            and isinstance(fact.get("display"), bool)
            and ("details" not in fact or _details_json(fact["details"], budget))
        )
    if kind == "phase":
        return _only_keys(fact, _FACT_KEYS["phase"]) and isinstance(fact.get("phase"), str)
    if kind != "operation" or not _only_keys(fact, _FACT_KEYS["operation"]):
        return False
    args = fact.get("args")
    return (
        isinstance(fact.get("ref"), str)
        and _optional_str(fact, "provider")
        and _optional_str(fact, "action")
        and isinstance(fact.get("tool"), str)
        and isinstance(args, dict)
        and _details_json(args, budget)
        and _member(fact.get("outcome"), OUTCOMES)
        and _optional_str(fact, "error")
        and ("result" not in fact or _details_json(fact["result"], budget))
    )


def _valid_fact_v2(fact: object, budget: _NodeBudget) -> bool:
    if not (isinstance(fact, dict) and fact.get("kind") == "fabricRun"):
        return _valid_fact_v1(fact, budget)
    entry_id, subordinal, name = fact.get("entryId"), fact.get("subordinal"), fact.get("name")
    description = fact.get("description")
    return (
        isinstance(entry_id, str)
        and isinstance(subordinal, str)
        and fact.get("address") == f"{entry_id}/{subordinal}"
        and subordinal.startswith("call:")
        and len(subordinal) > len("call:")
        and _only_keys(fact, _FACT_KEYS["fabricRun"])
        and isinstance(name, str)
        and js_trim(name) != ""
        and utf8_size(name) <= _RUN_NAME_MAX_BYTES
        and (
            "description" not in fact
            or (
                isinstance(description, str)
                and utf8_size(description) <= _RUN_DESCRIPTION_MAX_BYTES
            )
        )
        and _member(fact.get("outcome"), OUTCOMES)
    )


def _valid_envelope(value: dict[str, Any], version: int) -> bool:
    if not _only_keys(value, _ENVELOPE_KEYS):
        return False
    if value.get("kind") != BRANCH_SUMMARY_KIND or not _equals_number(
        value.get("version"), version
    ):
        return False
    source = value.get("source")
    if not isinstance(source, dict) or not _only_keys(source, _SOURCE_KEYS):
        return False
    if not (
        isinstance(source.get("firstEntryId"), str) and isinstance(source.get("lastEntryId"), str)
    ):
        return False
    if not _non_negative_int(source.get("entryCount")):
        return False
    if source.get("oldLeafId") is not None and not isinstance(source["oldLeafId"], str):
        return False
    facts = value.get("facts")
    budget = _NodeBudget()
    valid_fact = _valid_fact_v2 if version == 2 else _valid_fact_v1
    if not isinstance(facts, list) or len(facts) > _MAX_FACTS:
        return False
    if not all(valid_fact(fact, budget) for fact in facts):
        return False
    if not _non_negative_int(value.get("omittedFacts")):
        return False
    sections = value.get("sections")
    if not isinstance(sections, list) or len(sections) > _MAX_SECTIONS:
        return False
    if not all(isinstance(section, str) for section in sections):
        return False
    request = value.get("request")
    if not isinstance(request, dict) or not _only_keys(request, _REQUEST_KEYS):
        return False
    if not (isinstance(request.get("text"), str) and isinstance(request.get("truncated"), bool)):
        return False
    if not _non_negative_int(request.get("sourceBytes")):
        return False
    return json_size(value) <= BRANCH_SUMMARY_MAX_BYTES


def read_branch_details(value: object) -> BranchDetails | None:
    """A valid branch-summary envelope (V2 reader first, then V1), or None."""
    if not isinstance(value, dict):
        return None
    for version in (2, 1):
        if _valid_envelope(value, version):
            return BranchDetails(version=version, facts=tuple(value["facts"]))
    return None


def _duplicate_fact(facts: tuple[dict[str, Any], ...]) -> dict[str, Any] | None:
    """The first fact whose address repeats an earlier one in the same envelope."""
    seen: set[str] = set()
    for fact in facts:
        if fact["address"] in seen:
            return fact
        seen.add(fact["address"])
    return None


def branch_children(
    carrier: NormalizedEntry,
    details: BranchDetails,
    carrier_from_id: str | None,
    index_tool_output: bool,
    seen_addresses: set[str],
) -> tuple[list[NormalizedEntry], set[str]]:
    """Fact children of one carrier, and the coverage reasons it raises.

    A repeated address inside the envelope rejects it whole (``duplicate_branch_fact_address``,
    plus ``duplicate_operation_address`` when the repeated fact is an operation). Across
    carriers the earliest address wins: *seen_addresses* (shared by the whole session, updated
    here) skips facts an earlier carrier already emitted.
    """
    if carrier.entry_id is None:
        return [], set()
    duplicate = _duplicate_fact(details.facts)
    if duplicate is not None:
        reasons = {"duplicate_branch_fact_address"}
        if duplicate.get("kind") == "operation":
            reasons.add("duplicate_operation_address")
        return [], reasons
    children = []
    for fact in details.facts:
        address = fact["address"]
        if address in seen_addresses:
            continue
        seen_addresses.add(address)
        children.append(_fact_child(carrier, fact, carrier_from_id, index_tool_output))
    return children, set()


def _fact_child(
    carrier: NormalizedEntry,
    fact: dict[str, Any],
    carrier_from_id: str | None,
    index_tool_output: bool,
) -> NormalizedEntry:
    carrier_id = carrier.entry_id
    assert carrier_id is not None
    kind: str = fact["kind"]
    address = clean_text(fact["address"])
    from_id = clean_text(carrier_from_id) if carrier_from_id is not None else None
    branch_fact: dict[str, Any] = {
        "kind": kind,
        "address": address,
        "entryId": clean_text(fact["entryId"]),
        "subordinal": clean_text(fact["subordinal"]),
        "carrierEntryId": carrier_id,
        "carrierParentId": carrier.parent_id,
        "carrierFromId": from_id,
    }
    role: str
    tool: str | None = None
    text: str
    is_error = False
    operation_address: str | None = None
    ref = provider = action = outcome = None
    operation: dict[str, Any] | None = None
    paths: tuple[str, ...] = ()
    if kind == "user":
        branch_fact["text"] = clean_text(fact["text"])
        role, text = "branchUser", branch_fact["text"]
    elif kind == "customMessage":
        branch_fact["text"] = clean_text(fact["text"])
        branch_fact["customType"] = clean_text(fact["customType"])
        branch_fact["display"] = fact["display"]
        custom_type, body = branch_fact["customType"], branch_fact["text"]
        role = "branchCustomMessage"
        text = f"[{custom_type}] {body}" if custom_type else body
    elif kind == "phase":
        branch_fact["phase"] = clean_text(fact["phase"])
        role, text = "fabricPhase", f"Fabric phase {branch_fact['phase']}"
    elif kind == "fabricRun":
        branch_fact["name"] = clean_text(fact["name"])
        if "description" in fact:
            branch_fact["description"] = clean_text(fact["description"])
        branch_fact["outcome"] = outcome = fact["outcome"]
        description = branch_fact.get("description")
        suffix = f" — {description}" if description else ""
        role, tool, ref = "fabricRun", "fabric_exec", "fabric_exec"
        text = f"Fabric run {branch_fact['name']}{suffix} → {outcome}"
        is_error = outcome != "succeeded"
        operation_address = address
    else:  # operation (validated)
        ref = clean_text(fact["ref"])
        provider = clean_text(fact["provider"]) if fact.get("provider") else None
        action = clean_text(fact["action"]) if fact.get("action") else None
        tool = clean_text(fact["tool"])
        args = json_value(fact["args"])
        outcome = fact["outcome"]
        branch_fact["ref"] = ref
        if provider:
            branch_fact["provider"] = provider
        if action:
            branch_fact["action"] = action
        branch_fact["tool"] = tool
        branch_fact["args"] = args
        branch_fact["outcome"] = outcome
        if "error" in fact:
            branch_fact["error"] = clean_text(fact["error"])
        if index_tool_output and "result" in fact:
            branch_fact["result"] = json_value(fact["result"])
        operation = {
            "address": address,
            "parentEntryId": branch_fact["entryId"],
            "subordinal": branch_fact["subordinal"],
            "tool": tool,
            "ref": ref,
        }
        if provider:
            operation["provider"] = provider
        if action:
            operation["action"] = action
        operation["args"] = args
        operation["outcome"] = outcome
        if "error" in fact:
            operation["error"] = branch_fact["error"]
        _bounded_operation(operation, fact.get("result"), "result" in fact, index_tool_output)
        role = "fabricOperation"
        text = f"Fabric branch operation {ref}\n{json_compact(operation)}"
        is_error = outcome != "succeeded"
        operation_address = address
        paths = files_touched([fact["args"]])
    return NormalizedEntry(
        index=carrier.index,
        entry_id=address,
        parent_id=carrier.parent_id,
        type="fabric_branch_fact",
        role=role,
        tool=tool,
        text=text,
        timestamp=carrier.timestamp,
        is_error=is_error,
        truncated=False,
        line=carrier.line,
        offset=carrier.offset,
        agent=carrier.agent,
        parent_entry_id=carrier_id,
        operation_address=operation_address,
        ref=ref,
        provider=provider,
        action=action,
        outcome=outcome,
        files_touched=paths,
        operation=operation,
        branch_fact=branch_fact,
        fact_address=address,
        carrier_entry_id=carrier_id,
        carrier_parent_id=carrier.parent_id,
        carrier_from_id=from_id,
        sidechain=carrier.sidechain,
    )
