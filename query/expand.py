"""``memory.expand``: lossless reading of exact entries, in bounded chunks.

::

    session (path | id) ─► freshness + bindings ─► complete entries of the branch mode
        ─► selection: indices | entryIds | operationAddresses | entryRange  (+ before/after)
        ─► chunks: up to maxEntries entries and maxChars UTF-16 units; a long entry is split
           and continued through ``next`` (entryOffset/textOffset), never silently cut
        ─► envelope: whole entries dropped from the end while the JSON passes 30,000; a lone
           entry's text is shortened, then its structure withheld (``structuredTruncated``)

Entries come from the index's SessionEntries record (complete normalized text under the
index policy), which is served only while the live file is still the indexed one: a file that
changed since indexing gets ``stale_pointer`` whether or not the caller sent expectations.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from query.args import RESPONSE_MAX_CHARS, ExpandRequest
from query.freshness import Freshness
from query.generation import Generation, RecordUnavailable
from query.present import SUBAGENT_KEYS, subagent_fields
from query.recall import stale_pointer
from query.scope import resolve_target
from query.u16 import (
    bounded,
    first_code_point_units,
    is_low_surrogate_at,
    json_length,
    u16len,
    u16slice,
)
from store.reasons import SOURCE_UNAVAILABLE
from store.records import NormalizedEntry, SessionState

__all__ = ["expand"]

_STRUCTURE_MAX = 2000


def _error(session: str, error: dict[str, Any], **extra: Any) -> dict[str, Any]:
    return {"session": session, **extra, "error": error, "entries": []}


def _out_of_bounds(message: str, entry_count: int | None = None) -> dict[str, Any]:
    body: dict[str, Any] = {"code": "index_out_of_bounds", "message": message}
    if entry_count is not None:
        body["entryCount"] = entry_count
    return body


def _address_error(kind: str, address: str, matches: int) -> dict[str, Any]:
    label = "Entry" if kind == "entry_id" else "Operation"
    import orjson

    quoted = orjson.dumps(address).decode("utf-8")
    return {
        "code": "address_not_found" if matches == 0 else "ambiguous_address",
        "message": f"{label} address {quoted} was not found."
        if matches == 0
        else f"{label} address {quoted} resolves to {matches} records.",
        "addressType": kind,
        "address": address,
        "matches": matches,
    }


def _resolve(
    entries: Sequence[NormalizedEntry], req: ExpandRequest
) -> tuple[list[NormalizedEntry], dict[str, Any] | None]:
    """The selected entries in index order, each once; or an address error."""
    for address in dict.fromkeys(req.entry_ids):
        n = sum(1 for e in entries if e.entry_id == address)
        if n != 1:
            return [], _address_error("entry_id", address, n)
    for address in dict.fromkeys(req.operation_addresses):
        n = sum(1 for e in entries if e.operation_address == address)
        if n != 1:
            return [], _address_error("operation_address", address, n)
    indices = set(req.indices)
    ids = set(req.entry_ids)
    ops = set(req.operation_addresses)
    first, last = (
        (req.entry_range.first, req.entry_range.last) if req.entry_range is not None else (1, 0)
    )
    return [
        e
        for e in entries
        if e.index in indices
        or (e.entry_id is not None and e.entry_id in ids)
        or (e.operation_address is not None and e.operation_address in ops)
        or first <= e.index <= last
    ], None


def _structure(value: dict[str, Any] | None) -> dict[str, Any] | None:
    if value is None:
        return None
    return value if json_length(value) <= _STRUCTURE_MAX else None


def _record(
    e: NormalizedEntry, chunk: str, start: int, end: int, total: int, anchor: int | None
) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": e.index,
        "entryId": bounded(e.entry_id),
        "parentId": bounded(e.parent_id),
        "type": bounded(e.type),
        "role": bounded(e.role),
        "timestamp": e.timestamp,
        "isError": e.is_error,
    }
    out.update(subagent_fields(e))
    if anchor is not None:
        out["anchor"] = e.index == anchor
    out["text"] = chunk
    out["textRange"] = {"start": start, "end": end, "total": total, "complete": end >= total}
    if e.parent_entry_id is not None:
        out["parentEntryId"] = bounded(e.parent_entry_id)
    if e.operation_address:
        out["operationAddress"] = bounded(e.operation_address)
    if e.tool:
        out["tool"] = bounded(e.tool)
    if e.ref:
        out["ref"] = bounded(e.ref)
    if e.provider:
        out["provider"] = bounded(e.provider)
    if e.action:
        out["action"] = bounded(e.action)
    if e.outcome:
        out["outcome"] = e.outcome
    if e.family:
        out["family"] = e.family
    if e.context_edited:
        out["contextEdited"] = e.context_edited
    if e.files_touched:
        out["filesTouched"] = [bounded(f, 1024) for f in e.files_touched[:20]]
    operation = _structure(e.operation)
    fact = _structure(e.branch_fact)
    if operation is not None:
        out["operation"] = operation
    if fact is not None:
        out["branchFact"] = fact
    if (e.operation is not None and operation is None) or (
        e.branch_fact is not None and fact is None
    ):
        out["structuredTruncated"] = True
    if e.fact_address:
        out["factAddress"] = bounded(e.fact_address)
    if e.carrier_entry_id:
        out["carrierEntryId"] = bounded(e.carrier_entry_id)
    if e.carrier_parent_id is not None:
        out["carrierParentId"] = bounded(e.carrier_parent_id)
    if e.carrier_from_id is not None:
        out["carrierFromId"] = bounded(e.carrier_from_id)
    return out


def expand(
    gen: Generation,
    req: ExpandRequest,
    *,
    cwd: str,
    roots: Iterable[Path],
    freshness: Freshness,
) -> dict[str, Any]:
    """Answer one expand request (see the module docstring)."""
    target = resolve_target(gen, req.session, cwd=req.cwd or cwd, agent=None, roots=roots)
    if target.error is not None:
        return _error(req.session, target.error)
    if target.state is None:
        assert target.unindexed is not None
        u = target.unindexed
        if u.stale:
            problem = {
                "code": "session_not_found",
                "message": f"{u.path} is not indexed yet; wait for the indexer or run "
                "`pipeline run --once`, then retry.",
            }
        else:
            problem = {
                "code": SOURCE_UNAVAILABLE,
                "message": f"{u.path} could not be indexed ({u.reason}); see `pipeline status`.",
            }
        return _error(u.path, problem)
    state: SessionState = target.state
    observed = freshness.observe(state, need_hash=True)
    if observed.status in ("missing", "unreadable"):
        return _error(
            state.path,
            {
                "code": SOURCE_UNAVAILABLE,
                "message": f"Session source is unavailable: {state.path}",
            },
        )
    view = state.view(req.branches)
    if not observed.fresh:
        message = None
        if req.expected_source_hash is None and req.expected_lineage_fingerprint is None:
            message = (
                "Session source changed after it was indexed; wait for the indexer (or run "
                "`pipeline run --once`) and retry."
            )
        return _error(
            state.path,
            stale_pointer(
                state.path,
                req.expected_source_hash,
                observed.actual_hash,
                req.expected_lineage_fingerprint,
                None,
                message=message,
            ),
            branches=req.branches,
        )
    if req.expected_source_hash not in (None, state.source_hash) or (
        req.expected_lineage_fingerprint not in (None, view.lineage_fingerprint)
    ):
        return _error(
            state.path,
            stale_pointer(
                state.path,
                req.expected_source_hash,
                state.source_hash,
                req.expected_lineage_fingerprint,
                view.lineage_fingerprint,
            ),
            branches=req.branches,
        )
    bindings = {
        "sourceHash": state.source_hash,
        "branches": req.branches,
        "lineageFingerprint": view.lineage_fingerprint,
    }
    if not req.indices_valid:
        return _error(
            state.path, _out_of_bounds("Every entry index must be a non-negative safe integer.")
        )
    if req.entry_range is not None and not req.entry_range.valid:
        return _error(
            state.path,
            _out_of_bounds("Entry range requires safe integers with 0 <= first <= last."),
        )
    try:
        entries = gen.entries(state, req.branches)
    except RecordUnavailable:
        return _error(
            state.path,
            {
                "code": SOURCE_UNAVAILABLE,
                "message": f"The index record of {state.path} is unavailable; "
                "run `pipeline run --once` to rebuild it.",
            },
        )
    count = len(entries)
    bad = next((i for i in req.indices if i >= count), None)
    if bad is not None:
        return _error(
            state.path,
            _out_of_bounds(f"Entry index {bad} is outside 0..{max(0, count - 1)}.", count),
        )
    if req.entry_range is not None and req.entry_range.last >= count:
        return _error(
            state.path,
            _out_of_bounds(
                f"Entry range ends at {req.entry_range.last}, but the session has {count} entries.",
                count,
            ),
        )
    context = req.before > 0 or req.after > 0
    if not req.has_selector:
        if context:
            from query.errors import InvalidArgument

            raise InvalidArgument("memory.expand before/after requires one selected anchor")
        return {"session": state.path, **bindings, "entryCount": count, "entries": [], "next": None}
    selected, error = _resolve(entries, req)
    if error is not None:
        return _error(state.path, error, **bindings)
    anchor: int | None = None
    canonical: dict[str, Any]
    if context:
        if len(selected) != 1:
            from query.errors import InvalidArgument

            raise InvalidArgument(
                "memory.expand before/after requires exactly one resolved anchor "
                f"(the selection resolved to {len(selected)} entries)"
            )
        anchor = selected[0].index
        first = max(0, anchor - req.before)
        last = min(max(0, count - 1), anchor + req.after)
        selected = [e for e in entries if first <= e.index <= last]
        canonical = dict(req.selection_args)
        if req.before:
            canonical["before"] = req.before
        if req.after:
            canonical["after"] = req.after
    elif req.entry_range is not None:
        canonical = {"entryRange": req.entry_range.to_args()}
    else:
        canonical = {"indices": [e.index for e in selected]}
    return _chunk(state, req, selected, count, bindings, canonical, anchor)


def _chunk(
    state: SessionState,
    req: ExpandRequest,
    selected: list[NormalizedEntry],
    count: int,
    bindings: dict[str, Any],
    canonical: dict[str, Any],
    anchor: int | None,
) -> dict[str, Any]:
    offset, text_offset = req.entry_offset, req.text_offset
    if offset > len(selected):
        return _error(
            state.path,
            _out_of_bounds(f"Entry offset {offset} is outside 0..{len(selected)}.", len(selected)),
        )
    if offset < len(selected):
        length = u16len(selected[offset].text)
        if text_offset > length:
            return _error(
                state.path,
                {
                    "code": "text_offset_out_of_bounds",
                    "message": f"Text offset {text_offset} exceeds entry "
                    f"#{selected[offset].index} length {length}.",
                    "textLength": length,
                },
            )
    records: list[dict[str, Any]] = []
    cursors: list[tuple[int, int]] = []
    position, current, remaining = offset, text_offset, req.max_chars
    while position < len(selected) and len(records) < req.max_entries and remaining > 0:
        e = selected[position]
        total = u16len(e.text)
        end = min(total, current + remaining)
        if current < end < total and is_low_surrogate_at(e.text, end):
            end -= 1
        if end == current and current < total:
            end = min(total, current + 2)
        piece = u16slice(e.text, current, end)
        records.append(_record(e, piece, current, end, total, anchor))
        remaining -= end - current
        if end < total:
            current = end
            cursors.append((position, current))
            break
        position += 1
        current = 0
        cursors.append((position, 0))

    def respond(cursor: tuple[int, int]) -> dict[str, Any]:
        at, text_at = cursor
        nxt = None
        if at < len(selected):
            args: dict[str, Any] = {
                "session": state.path,
                "expectedSourceHash": bindings["sourceHash"],
                "expectedLineageFingerprint": bindings["lineageFingerprint"],
                "branches": bindings["branches"],
                **canonical,
                "entryOffset": at,
            }
            if text_at > 0:
                args["textOffset"] = text_at
            args["maxChars"] = req.max_chars
            args["maxEntries"] = req.max_entries
            nxt = {"ref": "memory.expand", "args": args}
        return {
            "session": state.path,
            **bindings,
            "entryCount": count,
            "entries": records,
            "next": nxt,
        }

    cursor = (position, current)
    response = respond(cursor)
    while len(records) > 1 and json_length(response) > RESPONSE_MAX_CHARS:
        records.pop()
        cursors.pop()
        cursor = cursors[-1] if cursors else (offset, text_offset)
        response = respond(cursor)
    if len(records) == 1 and json_length(response) > RESPONSE_MAX_CHARS:
        response, cursor = _shrink_one(records, selected, offset, respond, cursor)
    return response


def _shrink_one(
    records: list[dict[str, Any]],
    selected: list[NormalizedEntry],
    offset: int,
    respond: Any,
    cursor: tuple[int, int],
) -> tuple[dict[str, Any], tuple[int, int]]:
    """Fit one oversized record: cut its text, then withhold structure, then keep one char."""
    record = records[0]
    text_range = record["textRange"]
    chunk: str = record["text"]
    response = respond(cursor)
    excess = json_length(response) - RESPONSE_MAX_CHARS
    size = u16len(chunk)
    keep = max(1, size - excess - 256)
    if 0 < keep < size and is_low_surrogate_at(chunk, keep):
        keep -= 1
    if 0 < keep < size:
        record["text"] = u16slice(chunk, 0, keep)
        text_range["end"] = text_range["start"] + keep
        text_range["complete"] = False
        cursor = (offset, text_range["end"])
        response = respond(cursor)
    if json_length(response) > RESPONSE_MAX_CHARS:
        record.pop("operation", None)
        record.pop("branchFact", None)
        if isinstance(record.get("filesTouched"), list):
            record["filesTouched"] = [bounded(str(f), 256) for f in record["filesTouched"][:4]]
        record["structuredTruncated"] = True
        response = respond(cursor)
    if json_length(response) > RESPONSE_MAX_CHARS:
        current: str = record["text"]
        units = first_code_point_units(current)
        minimal = u16slice(current, 0, units)
        start = text_range["start"]
        end = start + u16len(minimal)
        total = text_range["total"]
        slim: dict[str, Any] = {
            k: record[k]
            for k in ("index", "entryId", "parentId", "type", "role", "timestamp", "isError")
        }
        slim.update((k, record[k]) for k in SUBAGENT_KEYS if k in record)
        if "anchor" in record:
            slim["anchor"] = record["anchor"]
        slim["text"] = minimal
        slim["textRange"] = {"start": start, "end": end, "total": total, "complete": end >= total}
        slim["structuredTruncated"] = True
        records[0] = slim
        cursor = (offset + 1, 0) if end >= total else (offset, end)
        response = respond(cursor)
    return response, cursor
