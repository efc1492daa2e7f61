"""Pi Fabric branch-summary details (V1/V2) and the fact children they yield.

Where they sit: the top-level ``details`` of a ``branch_summary`` record, or ``message.details``
of a ``message`` with role ``branchSummary`` (never on tool results). The carrier needs an id.
The V2 reader is tried first, then V1; ``fabricRun`` facts exist only in V2.

Each fact becomes a ``fabric_branch_fact`` entry whose ``entry_id`` is the fact's own address
(``<entryId>/<subordinal>``), so a summarized fact keeps the identity of the record it
summarizes. Dedup: a repeated address inside one envelope rejects the envelope; across carriers
the earliest address wins.
"""

from __future__ import annotations

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
from stages.families import fabric_family
from stages.pi.fabric import (
    OUTCOMES,
    bound_result,
    equals_number,
    finite_number,
    has_only_keys,
    is_member,
    non_negative_int,
    optional_str,
)
from store.reasons import DUPLICATE_BRANCH_FACT_ADDRESS, DUPLICATE_OPERATION_ADDRESS
from store.records import NormalizedEntry

__all__ = [
    "BRANCH_SUMMARY_KIND",
    "BRANCH_SUMMARY_MAX_BYTES",
    "BranchDetails",
    "branch_children",
    "read_branch_details",
]

BRANCH_SUMMARY_KIND = "pi-fabric.branch-summary"
BRANCH_SUMMARY_MAX_BYTES = 128 * 1024

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


@dataclass(slots=True)
class _NodeBudget:
    """JSON nodes seen so far; one budget spans every fact of an envelope."""

    nodes: int = 0


def _details_json(value: object, budget: _NodeBudget, depth: int = 0) -> bool:
    """Branch-details JSON: ≤ 4096 nodes per envelope, collections ≤ 256, depth ≤ 16."""
    budget.nodes += 1
    if budget.nodes > _DETAILS_MAX_NODES:
        return False
    if value is None or isinstance(value, str | bool):
        return True
    if isinstance(value, int | float):
        return finite_number(value)
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
        return has_only_keys(fact, _FACT_KEYS["user"]) and isinstance(fact.get("text"), str)
    if kind == "customMessage":
        return (
            has_only_keys(fact, _FACT_KEYS["customMessage"])
            and isinstance(fact.get("customType"), str)
            and isinstance(fact.get("text"), str)
            and isinstance(fact.get("display"), bool)
            and ("details" not in fact or _details_json(fact["details"], budget))
        )
    if kind == "phase":
        return has_only_keys(fact, _FACT_KEYS["phase"]) and isinstance(fact.get("phase"), str)
    if kind != "operation" or not has_only_keys(fact, _FACT_KEYS["operation"]):
        return False
    args = fact.get("args")
    return (
        isinstance(fact.get("ref"), str)
        and optional_str(fact, "provider")
        and optional_str(fact, "action")
        and isinstance(fact.get("tool"), str)
        and isinstance(args, dict)
        and _details_json(args, budget)
        and is_member(fact.get("outcome"), OUTCOMES)
        and optional_str(fact, "error")
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
        and has_only_keys(fact, _FACT_KEYS["fabricRun"])
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
        and is_member(fact.get("outcome"), OUTCOMES)
    )


def _valid_envelope(value: dict[str, Any], version: int) -> bool:
    if not has_only_keys(value, _ENVELOPE_KEYS):
        return False
    if value.get("kind") != BRANCH_SUMMARY_KIND or not equals_number(value.get("version"), version):
        return False
    source = value.get("source")
    if not isinstance(source, dict) or not has_only_keys(source, _SOURCE_KEYS):
        return False
    if not (
        isinstance(source.get("firstEntryId"), str) and isinstance(source.get("lastEntryId"), str)
    ):
        return False
    if not non_negative_int(source.get("entryCount")):
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
    if not non_negative_int(value.get("omittedFacts")):
        return False
    sections = value.get("sections")
    if not isinstance(sections, list) or len(sections) > _MAX_SECTIONS:
        return False
    if not all(isinstance(section, str) for section in sections):
        return False
    request = value.get("request")
    if not isinstance(request, dict) or not has_only_keys(request, _REQUEST_KEYS):
        return False
    if not (isinstance(request.get("text"), str) and isinstance(request.get("truncated"), bool)):
        return False
    if not non_negative_int(request.get("sourceBytes")):
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
        reasons = {DUPLICATE_BRANCH_FACT_ADDRESS}
        if duplicate.get("kind") == "operation":
            reasons.add(DUPLICATE_OPERATION_ADDRESS)
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
        bound_result(operation, fact.get("result"), "result" in fact, index_tool_output)
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
        family=fabric_family(provider, action, tool) if tool else None,
    )
