"""Credentials in the index: where they appeared (the audit), and their values (the reveal).

Both answer the local CLI only (``query secrets``, ``query expand --reveal``): ``query
serve``, the MCP server and the Python client have no route to either, so whatever leaves
this machine carries the placeholders the pipeline put in at index time.

The audit reads what the records keep of each redaction: kind and masked fingerprint per
entry, never a value. The reveal reads the session file itself, checks it is still the file
that was indexed (blake3 of its bytes against the manifest's ``source_hash``, else
``stale_pointer``), runs the same redactor over it (``store.redact``: both sides agree on
every match) and puts back, placeholder by placeholder, the value whose fingerprint the
entry recorded.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import Any

import blake3
import orjson

from query.args import SessionsRequest
from query.generation import Generation, RecordUnavailable
from query.recall import stale_pointer
from query.scope import resolve_scope, resolve_target
from query.u16 import u16slice
from store.archive import Archive
from store.errors import StoreError
from store.reasons import SOURCE_UNAVAILABLE
from store.records import NormalizedEntry
from store.redact import PLACEHOLDER, Redactor, fingerprint_of

__all__ = ["render_secrets", "reveal", "secrets"]


def secrets(
    gen: Generation, req: SessionsRequest, *, cwd: str, roots: Iterable[Path]
) -> dict[str, Any]:
    """Every credential redacted in the scope's sessions: one row per session, kind and
    fingerprint, with the entries it was seen in and its first and last timestamps."""
    resolved = resolve_scope(gen, req.scope, cwd=req.cwd or cwd, agent=req.agent, roots=roots)
    out: dict[str, Any] = {"scope": req.scope.to_arg(), "branches": req.branches}
    if resolved.error is not None:
        return {**out, "findings": [], "error": resolved.error}
    rows: list[dict[str, Any]] = []
    kinds: dict[str, int] = {}
    unavailable: list[str] = []
    for state in resolved.sessions:
        try:
            entries = gen.entries(state, req.branches)
        except RecordUnavailable:
            unavailable.append(state.path)
            continue
        found: dict[tuple[str, str], dict[str, Any]] = {}
        for e in entries:
            for kind, fingerprint in e.redactions:
                kinds[kind] = kinds.get(kind, 0) + 1
                row = found.get((kind, fingerprint))
                if row is None:
                    found[(kind, fingerprint)] = row = {
                        "session": f"{state.agent}:{state.session_id}",
                        "file": state.path,
                        "kind": kind,
                        "fingerprint": fingerprint,
                        "entries": [],
                        "firstSeen": None,
                        "lastSeen": None,
                    }
                if not row["entries"] or row["entries"][-1] != e.index:
                    row["entries"].append(e.index)
                if e.timestamp is not None:
                    first, last = row["firstSeen"], row["lastSeen"]
                    row["firstSeen"] = e.timestamp if first is None else min(first, e.timestamp)
                    row["lastSeen"] = e.timestamp if last is None else max(last, e.timestamp)
        rows.extend(found.values())
    out["findings"] = rows
    out["kinds"] = dict(sorted(kinds.items()))
    if unavailable:
        out["unavailable"] = unavailable
    return out


def render_secrets(result: dict[str, Any]) -> str:
    rows = result.get("findings", [])
    if "error" in result:
        return f"error: {result['error'].get('message', result['error'])}"
    if not rows:
        return "no credentials were redacted in this scope"
    lines = [f"{len(rows)} credential(s) redacted; rotate each one listed:"]
    for r in rows:
        entries = ",".join(str(i) for i in r["entries"][:10])
        more = "…" if len(r["entries"]) > 10 else ""
        lines.append(
            f"  {r['kind']:<28} {r['fingerprint']:<16} {r['session']}  entries {entries}{more}"
            f"  first {r['firstSeen']} last {r['lastSeen']}"
        )
        lines.append(f"      {r['file']}")
    return "\n".join(lines)


def reveal(
    result: dict[str, Any],
    gen: Generation,
    session: str,
    *,
    branches: str,
    cwd: str,
    roots: Iterable[Path],
    redactor: Redactor,
    archive: Archive | None = None,
) -> dict[str, Any]:
    """*result* (an expand answer) with its placeholders replaced by the original values
    read from the session file (from the *archive*'s copy when the file is gone), or a
    ``stale_pointer`` error when the file changed."""
    if "error" in result or not result.get("entries"):
        return result
    target = resolve_target(gen, session, cwd=cwd, agent=None, roots=roots)
    state = target.state
    if state is None:
        return result
    try:
        if state.archived and archive is not None:
            chain = archive.head(state.path)
            if chain is None:
                raise FileNotFoundError(2, "no archived copy")
            data = archive.read(chain)
        else:
            with open(state.path, "rb") as f:
                data = f.read(state.size)
    except (OSError, StoreError) as exc:
        why = exc.strerror if isinstance(exc, OSError) else str(exc)
        message = f"Session source is unavailable: {state.path} ({why})"
        return {
            **result,
            "entries": [],
            "error": {"code": SOURCE_UNAVAILABLE, "message": message},
        }
    actual = blake3.blake3(data).hexdigest()
    if len(data) != state.size or actual != state.source_hash:
        problem = stale_pointer(state.path, state.source_hash, actual, None, None)
        return {**result, "entries": [], "error": problem}
    by_index = {e.index: e for e in gen.entries(state, branches)}
    wanted = {fp for e in by_index.values() for _, fp in e.redactions}
    values = _values(data, wanted, redactor)
    entries = []
    for out in result["entries"]:
        e = by_index.get(out["index"])
        entries.append(_revealed(out, e, values) if e is not None and e.redactions else out)
    return {**result, "entries": entries, "revealed": True}


def _revealed(out: dict[str, Any], e: NormalizedEntry, values: dict[str, str]) -> dict[str, Any]:
    in_text = len(PLACEHOLDER.findall(e.text))
    start = out.get("textRange", {}).get("start", 0)
    before = len(PLACEHOLDER.findall(u16slice(e.text, 0, start))) if start else 0
    revealed = dict(out)
    revealed["text"] = _put_back(out["text"], iter(e.redactions[before:in_text]), values)
    rest = iter(e.redactions[in_text:])
    for key in ("operation", "branchFact"):
        if key in out:
            revealed[key] = _put_back_in(out[key], rest, values)
    return revealed


def _put_back(text: str, order: Iterator[tuple[str, str]], values: dict[str, str]) -> str:
    def one(m: Any) -> str:
        found = next(order, None)
        if found is None or found[0] != m.group(1):
            return str(m.group(0))
        return values.get(found[1], str(m.group(0)))

    return PLACEHOLDER.sub(one, text)


def _put_back_in(value: Any, order: Iterator[tuple[str, str]], values: dict[str, str]) -> Any:
    if isinstance(value, str):
        return _put_back(value, order, values)
    if isinstance(value, dict):
        return {k: _put_back_in(v, order, values) for k, v in value.items()}
    if isinstance(value, list):
        return [_put_back_in(v, order, values) for v in value]
    return value


def _values(data: bytes, wanted: set[str], redactor: Redactor) -> dict[str, str]:
    """Fingerprint → value for every wanted credential found in the file: in each line's
    decoded strings (how normalizers see them) and in its raw JSON text (how a normalizer's
    JSON rendering of tool arguments shows them, escapes and all)."""
    found: dict[str, str] = {}
    whole: Any = None
    with contextlib.suppress(orjson.JSONDecodeError):  # a Codex era-A rollout is one object
        whole = orjson.loads(data)
    if whole is not None:
        _collect(list(_strings(whole)), wanted, redactor, found)
    for raw in data.splitlines():
        if len(found) == len(wanted):
            break
        line = raw.decode("utf-8", "surrogatepass")
        texts: list[str] = [line]
        with contextlib.suppress(orjson.JSONDecodeError):  # a torn line: its raw text only
            texts.extend(_strings(orjson.loads(raw)))
        _collect(texts, wanted, redactor, found)
    return found


def _collect(texts: list[str], wanted: set[str], redactor: Redactor, found: dict[str, str]) -> None:
    for text in texts:
        for f in redactor.find(text):
            value = text[f.start : f.end]
            fp = fingerprint_of(value)
            if fp in wanted:
                found.setdefault(fp, value)


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from _strings(v)
    elif isinstance(value, list):
        for v in value:
            yield from _strings(v)
