"""The "toy" agent: ``*.chat`` files of one JSON object per line, unlike any real writer's.

    {"cwd": "/work/proj", "session": "<id>"}                 first line: the session
    {"id": "m1", "speaker": "human"|"bot", "text": "..."}   a turn
    {"id": "m2", "run": "<command>", "exit": 1, "out": "..."} a shell command and its exit code

Each line's parent is the line before it.
"""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePosixPath
from typing import Any

from stages.adapter import Adapter
from stages.families import tool_family, tool_identity
from stages.lineage import Lineage
from stages.normalized import EntryMemo, NormalizeResult
from stages.policy import Policy
from stages.source import ParseResult, SourceRecord, SourceSession, parse_reasons
from store.records import NormalizedEntry
from store.sources import WHOLE_PATH, ProjectFolder, SessionFiles

AGENT = "toy"


def read_toy(
    parsed: ParseResult, path: str, sidecar: Mapping[str, Any] | None = None
) -> SourceSession:
    raws = parsed.records
    head = raws[0].value if raws and "session" in raws[0].value else None
    records: list[SourceRecord] = []
    previous: str | None = None
    for raw in raws[1:] if head is not None else raws:
        own = raw.value.get("id")
        record_id = own if isinstance(own, str) else None
        records.append(
            SourceRecord(len(records), raw.line, raw.offset, record_id, previous,
                         "run" if "run" in raw.value else "turn", raw.value)
        )  # fmt: skip
        previous = record_id
    reasons = parse_reasons(parsed) | (set() if head is not None else {"missing_session_header"})
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=str((head or {}).get("session") or PurePosixPath(path).stem),
        cwd=str((head or {}).get("cwd") or ""),
        version=1,
        header=head,
        records=tuple(records),
        reasons=tuple(sorted(reasons)),
    )


def normalize_toy(
    session: SourceSession, lineage: Lineage, policy: Policy, *, memo: EntryMemo | None
) -> NormalizeResult:
    selected = set(lineage.selected)
    entries: list[NormalizedEntry] = []
    for r in session.records:
        if r.position not in selected:
            continue
        v = r.value
        base: dict[str, Any] = {
            "index": len(entries), "entry_id": r.id, "parent_id": r.parent_id, "type": r.kind,
            "timestamp": None, "truncated": False, "line": r.line, "offset": r.offset,
            "agent": AGENT,
        }  # fmt: skip
        if r.kind == "run":
            code = v.get("exit")
            outcome = None if not isinstance(code, int) else "succeeded" if code == 0 else "failed"
            ref, provider, action = tool_identity(AGENT, "sh")
            text = f"sh$ {v.get('run')}\n{v.get('out', '')}" if policy.index_tool_output else ""
            entries.append(NormalizedEntry(
                **base, role="toolResult", tool="sh", text=text, is_error=outcome == "failed",
                ref=ref, provider=provider, action=action, outcome=outcome,
                family=tool_family(AGENT, "sh"),
            ))  # fmt: skip
        else:
            role = "user" if v.get("speaker") == "human" else "assistant"
            entries.append(NormalizedEntry(
                **base, role=role, tool=None, text=str(v.get("text", "")), is_error=False
            ))  # fmt: skip
    return NormalizeResult(tuple(entries))


ADAPTER = Adapter(
    name=AGENT,
    default_root="~/.toy/chats",
    read=read_toy,
    normalize=normalize_toy,
    tools={"sh": "shell"},
    files=SessionFiles(("*.chat",)),
    folders=(ProjectFolder(WHOLE_PATH, unsafe="[^A-Za-z0-9]"),),
)
