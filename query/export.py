"""`query export SESSION --format md|html|jsonl|source`: one session, whole, as a file.

::

    session (path | id) ─► the indexed session (a live one, or one read from the archive)
        md | html | jsonl ─► its complete normalized entries (active branch, or --branches all)
                             with roles, tool calls and their outcomes, subagents marked
        source            ─► the exact bytes it was indexed from: the file, or the archive's
                             kept copy when the file is gone (proven against its source hash)

The entries are the index's (credentials redacted, under the index policy), so an export of a
session whose file was deleted reads the same as one whose file is still there. HTML is one
self-contained file (inline style, no script, no request) that reads offline; Markdown fences
each text with more backticks than it holds. Reads only.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Final

import blake3
import orjson

from query.freshness import Freshness
from query.generation import Generation, RecordUnavailable
from query.render import printable
from query.scope import resolve_target
from store.archive import Archive
from store.dblayout import DbLayout, split_member
from store.dbsource import QUERY_BUSY_MS, read_member
from store.errors import CorruptRecord, StoreError
from store.files import read_quietly
from store.reasons import SOURCE_UNAVAILABLE
from store.records import NormalizedEntry, SessionState

__all__ = ["FORMATS", "ExportError", "Exported", "export"]

FORMATS: Final = ("md", "html", "jsonl", "source")


class ExportError(Exception):
    """The session cannot be exported: ``code`` as an answered error (exit 6)."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code
        self.message = message


class Exported:
    """The bytes of an export and the session they are of."""

    __slots__ = ("data", "state")

    def __init__(self, state: SessionState, data: bytes) -> None:
        self.state = state
        self.data = data


def export(
    gen: Generation,
    target: str,
    *,
    fmt: str,
    branches: str,
    cwd: str,
    roots: Iterable[Path],
    freshness: Freshness,
) -> Exported:
    """Export the session *target* names (see the module docstring)."""
    if fmt not in FORMATS:
        raise ExportError("invalid_argument", f"--format is one of {', '.join(FORMATS)}")
    found = resolve_target(gen, target, cwd=cwd, agent=None, roots=roots)
    if found.error is not None:
        raise ExportError(found.error["code"], found.error["message"])
    if found.state is None:
        raise ExportError(
            "session_not_found", f"{target} is not indexed: run `pipeline run --once` first"
        )
    state = found.state
    observed = freshness.observe(state)
    if fmt == "source":
        layout = freshness.databases.get(state.agent)
        return Exported(state, _source(state, freshness.archive, layout))
    try:
        entries = gen.entries(state, branches)
    except RecordUnavailable as exc:
        raise ExportError(
            SOURCE_UNAVAILABLE, f"the index record of {state.path} is unavailable: {exc}"
        ) from exc
    head = _header(state, branches, len(entries), observed.status)
    if fmt == "jsonl":
        return Exported(state, _jsonl(head, entries))
    if fmt == "md":
        return Exported(state, _markdown(head, entries).encode("utf-8"))
    return Exported(state, _html(head, entries).encode("utf-8"))


# -- the exact bytes ----------------------------------------------------------------------


def _source(state: SessionState, archive: Archive | None, layout: DbLayout | None) -> bytes:
    """The bytes *state* was indexed from: the file's (a database session's rows, serialized
    again: *layout*), else the archive's copy."""
    if not state.archived:
        where = split_member(state.path) if layout is not None else None
        try:
            if layout is not None:
                data = (
                    read_member(*where, layout, busy_ms=QUERY_BUSY_MS)[0]
                    if where is not None
                    else b""
                )
            else:
                data = read_quietly(state.path)
        except OSError:
            data = b""
        if blake3.blake3(data).hexdigest() == state.source_hash:
            return data
    if archive is not None:
        try:
            chain = archive.head(state.path)
            if chain is not None and chain.key == state.path:
                data = archive.read(chain)
                if blake3.blake3(data).hexdigest() == state.source_hash:
                    return data
        except (CorruptRecord, StoreError) as exc:
            raise ExportError(SOURCE_UNAVAILABLE, str(exc)) from exc
    raise ExportError(
        "stale_pointer" if not state.archived else SOURCE_UNAVAILABLE,
        f"neither {state.path} nor the archive holds the bytes it was indexed from "
        "(it changed since): run `pipeline run --once` and retry",
    )


# -- entries ------------------------------------------------------------------------------


def _header(state: SessionState, branches: str, count: int, status: str) -> dict[str, Any]:
    view = state.view(branches)
    head: dict[str, Any] = {
        "session": state.path,
        "id": f"{state.agent}:{state.session_id}",
        "agent": state.agent,
        "cwd": state.cwd,
        "branches": branches,
        "sourceHash": state.source_hash,
        "lineageFingerprint": view.lineage_fingerprint,
        "entryCount": count,
        "firstTimestamp": view.first_ts,
        "lastTimestamp": view.last_ts,
    }
    if state.archived:
        head["archived"] = True  # the file is gone: these entries come from the kept copy
    elif status != "fresh":
        head["sourceStatus"] = status  # the file changed or went since it was indexed
    if state.sidechain:
        head["sidechain"] = True
    if view.reasons:
        head["reasons"] = list(view.reasons)
    return head


def _entry(e: NormalizedEntry) -> dict[str, Any]:
    out: dict[str, Any] = {
        "index": e.index,
        "entryId": e.entry_id,
        "parentId": e.parent_id,
        "type": e.type,
        "role": e.role,
        "timestamp": e.timestamp,
    }
    for key, value in (
        ("tool", e.tool),
        ("ref", e.ref),
        ("family", e.family),
        ("outcome", e.outcome),
        ("operationAddress", e.operation_address),
        ("parentEntryId", e.parent_entry_id),
        ("contextEdited", e.context_edited),
    ):
        if value:
            out[key] = value
    if e.is_error:
        out["isError"] = True
    if e.sidechain:
        out["sidechain"] = True
        if e.agent_id:
            out["agentId"] = e.agent_id
        if e.parent_call_id:
            out["parentToolCallId"] = e.parent_call_id
    if e.files_touched:
        out["filesTouched"] = list(e.files_touched)
    out["text"] = e.text
    return out


def _jsonl(head: dict[str, Any], entries: Sequence[NormalizedEntry]) -> bytes:
    lines = [orjson.dumps({"kind": "session", **head})]
    lines += [orjson.dumps({"kind": "entry", **_entry(e)}) for e in entries]
    return b"\n".join(lines) + b"\n"


def _when(ms: int | None) -> str:
    if ms is None:
        return ""
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")


def _label(e: NormalizedEntry) -> list[str]:
    """What kind of entry it is, in words: role, tool call, outcome, subagent."""
    parts = [e.role or e.type]
    if e.tool:
        parts.append(f"tool {e.tool}" + (f" ({e.family})" if e.family else ""))
    if e.outcome:
        parts.append(f"outcome {e.outcome}")
    elif e.is_error:
        parts.append("error")
    if e.sidechain:
        parts.append("subagent" + (f" {e.agent_id}" if e.agent_id else ""))
    if e.context_edited:
        parts.append(f"context {e.context_edited}")
    return parts


def _fence(text: str) -> str:
    longest = run = 0
    for ch in text:
        run = run + 1 if ch == "`" else 0
        longest = max(longest, run)
    return "`" * max(3, longest + 1)


def _markdown(head: dict[str, Any], entries: Sequence[NormalizedEntry]) -> str:
    out = [f"# {head['id']}", ""]
    out.append(f"- file: `{head['session']}`")
    if head.get("archived"):
        out.append("- **archived**: the file was deleted; this is the copy sessiondex kept")
    out.append(f"- cwd: `{head['cwd']}`")
    out.append(f"- branches: {head['branches']}; {head['entryCount']} entries")
    out.append(f"- from {_when(head['firstTimestamp'])} to {_when(head['lastTimestamp'])}")
    out.append(f"- source hash: `{head['sourceHash']}`")
    if head.get("reasons"):
        out.append(f"- coverage: {', '.join(head['reasons'])}")
    out.append("")
    for e in entries:
        quote = "> " if e.sidechain else ""
        label = " · ".join(_label(e))
        out.append(
            f"{quote}### {e.index}. {label}" + (f" · {_when(e.timestamp)}" if e.timestamp else "")
        )
        text = printable(e.text)
        if e.files_touched:
            out.append(f"{quote}files: " + ", ".join(f"`{f}`" for f in e.files_touched))
        if e.tool or e.outcome or e.role not in ("user", "assistant"):
            fence = _fence(text)
            out += [
                f"{quote}{fence}",
                *(f"{quote}{line}" for line in text.split("\n")),
                f"{quote}{fence}",
            ]
        else:
            out += [f"{quote}{line}" for line in text.split("\n")]
        out.append("")
    return "\n".join(out)


_STYLE: Final = """
body{font:15px/1.5 system-ui,sans-serif;max-width:60rem;margin:2rem auto;padding:0 1rem;color:#222}
header{border-bottom:1px solid #ccc;margin-bottom:1rem}h1{font-size:1.3rem}
dl{display:grid;grid-template-columns:max-content 1fr;gap:.1rem 1rem}dt{color:#666}
article{border-left:4px solid #bbb;padding:.3rem .8rem;margin:.8rem 0;background:#fafafa}
article.user{border-color:#3a7bd5}article.assistant{border-color:#2e9e5b}
article.tool{border-color:#a66d00;background:#fffaf0}article.failed{border-color:#c0392b}
article.sidechain{margin-left:2rem;border-style:dashed}
.meta{font-size:.85rem;color:#555}.badge{display:inline-block;padding:0 .4rem;margin-right:.3rem;
border-radius:.6rem;background:#eee}.failed .badge.outcome{background:#f5c6c0}
.archived{background:#fff3cd;padding:.4rem .8rem}
pre{white-space:pre-wrap;word-break:break-word;margin:.3rem 0;font:13px/1.4 ui-monospace,monospace}
""".strip()


def _html(head: dict[str, Any], entries: Sequence[NormalizedEntry]) -> str:
    esc = html.escape
    out = [
        "<!doctype html>",
        '<html lang="en"><head><meta charset="utf-8">',
        '<meta name="viewport" content="width=device-width,initial-scale=1">',
        f"<title>{esc(head['id'])}</title><style>{_STYLE}</style></head><body>",
        f"<header><h1>{esc(head['id'])}</h1><dl>",
    ]
    rows = [
        ("file", head["session"]),
        ("cwd", head["cwd"]),
        ("branches", f"{head['branches']} ({head['entryCount']} entries)"),
        ("from", _when(head["firstTimestamp"])),
        ("to", _when(head["lastTimestamp"])),
        ("source hash", head["sourceHash"]),
    ]
    if head.get("reasons"):
        rows.append(("coverage", ", ".join(head["reasons"])))
    out += [f"<dt>{esc(k)}</dt><dd>{esc(str(v))}</dd>" for k, v in rows]
    out.append("</dl>")
    if head.get("archived"):
        out.append(
            '<p class="archived">Archived: the session file was deleted; this is the copy '
            "sessiondex kept.</p>"
        )
    out.append("</header><main>")
    for e in entries:
        classes = [e.role or e.type]
        if e.tool or e.outcome:
            classes.append("tool")
        if e.outcome == "failed" or e.is_error:
            classes.append("failed")
        if e.sidechain:
            classes.append("sidechain")
        badges = []
        for i, part in enumerate(_label(e)):
            kind = "outcome" if part.startswith("outcome") else "kind" if i == 0 else "mark"
            badges.append(f'<span class="badge {kind}">{esc(part)}</span>')
        meta = f'<div class="meta">#{e.index} {"".join(badges)} {esc(_when(e.timestamp))}</div>'
        files = (
            '<div class="meta">files: ' + esc(", ".join(e.files_touched)) + "</div>"
            if e.files_touched
            else ""
        )
        body = f"<pre>{esc(printable(e.text))}</pre>"
        out.append(
            f'<article class="{" ".join(classes)}" id="e{e.index}">{meta}{files}{body}</article>'
        )
    out.append("</main></body></html>")
    return "\n".join(out) + "\n"
