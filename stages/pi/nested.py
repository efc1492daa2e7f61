"""Nested tool calls: the calls a Pi tool made while it ran (Pi 1.6.0 ``codemode`` scripts).

A ``codemode`` script calls Pi's other tools; those are real tool calls, but the session gives
them no entry of their own. Their record sits on the calling tool's ``toolResult`` message:

    message.nestedCalls.calls   {id, name, arguments?, argumentsBytes?, status, durationMs?, error?}
                                status ok | error | unfinished (the session's own record)
    message.details.calls       {id, name, args (a JSON preview), status, durationMs, error?}
                                status ok | error | cancelled | running (codemode's rows; also
                                its ``models.*`` calls, which nestedCalls does not hold)

Each call becomes one child entry right after its carrier, like Fabric's execution-trace
operations (``stages.pi.fabric``): ``nestedCalls`` first, then the ``details.calls`` rows whose
``id`` it does not hold. A child has the call's tool name, capability identity and family
(``stages.families``), its typed arguments (and the paths under their path keys), and an outcome
from ``status``: ok → succeeded, error → failed, cancelled / unfinished / running → aborted.
Its entry id and operation address are ``<carrierEntryId>/call:<nested call id>``.
"""

from __future__ import annotations

from typing import Any, Final

import orjson

from stages.common import clean_text, files_touched, json_value, summarize_args
from stages.families import tool_family, tool_identity
from store.records import NormalizedEntry

__all__ = ["NESTED_TYPE", "nested_calls", "nested_children"]

NESTED_TYPE: Final = "nested_tool_call"
_OUTCOMES: Final = {
    "ok": "succeeded",
    "error": "failed",
    "cancelled": "aborted",
    "unfinished": "aborted",
    "running": "aborted",
}


def nested_calls(message: dict[str, Any]) -> list[dict[str, Any]]:
    """The nested call records of a ``toolResult`` message, ``nestedCalls`` first, each id once."""
    calls: list[dict[str, Any]] = []
    seen: set[str] = set()
    nested = message.get("nestedCalls")
    details = message.get("details")
    for holder in (nested, details):
        found = holder.get("calls") if isinstance(holder, dict) else None
        for call in found if isinstance(found, list) else ():
            if not isinstance(call, dict) or not isinstance(call.get("name"), str):
                continue
            call_id = call.get("id")
            if isinstance(call_id, str):
                if call_id in seen:
                    continue
                seen.add(call_id)
            calls.append(call)
    return calls


def _arguments(call: dict[str, Any]) -> tuple[bool, object]:
    """(present, value): ``arguments`` as written, else the ``args`` preview parsed when it is
    a whole JSON object (a cut preview stays text)."""
    if "arguments" in call:
        return True, call["arguments"]
    preview = call.get("args")
    if isinstance(preview, str):
        try:
            parsed = orjson.loads(preview)
        except orjson.JSONDecodeError:
            return True, preview
        return True, parsed
    return False, None


def nested_children(carrier: NormalizedEntry, message: dict[str, Any]) -> list[NormalizedEntry]:
    """One child entry per nested call of the carrier's ``toolResult`` *message*."""
    carrier_id = carrier.entry_id
    if carrier_id is None:
        return []
    children: list[NormalizedEntry] = []
    for k, call in enumerate(nested_calls(message)):
        name = clean_text(call["name"])
        call_id = call.get("id")
        own = clean_text(call_id) if isinstance(call_id, str) and call_id else str(k)
        address = f"{carrier_id}/call:{own}"
        present, args = _arguments(call)
        status = call.get("status")
        outcome = _OUTCOMES.get(status) if isinstance(status, str) else None
        # the carrier's agent: a writer of Pi's format names its own tools
        ref, provider, action = tool_identity(carrier.agent, name)
        error = call.get("error")
        summary = summarize_args(args) if present else ""
        text = f"Tool: {name}({summary})"
        if isinstance(error, str) and error:
            text += f"\nError: {error}"
        operation: dict[str, Any] = {
            "address": address,
            "parentEntryId": carrier_id,
            "id": own,
            "tool": name,
            "ref": ref,
            "provider": provider,
            "action": action,
        }
        if present:
            operation["args"] = json_value(args)
        if isinstance(status, str):
            operation["status"] = clean_text(status)
        if outcome is not None:
            operation["outcome"] = outcome
        duration = call.get("durationMs")
        if isinstance(duration, int | float) and not isinstance(duration, bool):
            operation["durationMs"] = json_value(duration)
        if isinstance(error, str):
            operation["error"] = clean_text(error)
        children.append(
            NormalizedEntry(
                index=carrier.index,
                entry_id=address,
                parent_id=carrier.parent_id,
                type=NESTED_TYPE,
                role="toolResult",
                tool=name,
                text=clean_text(text),
                timestamp=carrier.timestamp,
                is_error=outcome == "failed",
                truncated=False,
                line=carrier.line,
                offset=carrier.offset,
                agent=carrier.agent,
                parent_entry_id=carrier_id,
                operation_address=address,
                ref=ref,
                provider=provider,
                action=action,
                outcome=outcome,
                files_touched=files_touched([args])
                if present and not isinstance(args, str)
                else (),
                operation=json_value(operation),
                sidechain=carrier.sidechain,
                family=tool_family(carrier.agent, name),
            )
        )
    return children
