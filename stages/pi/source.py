"""The Pi adapter: a parsed Pi session file → an agent-neutral ``SourceSession``.

The header is the first ``type: "session"`` record; later ``session`` records (a writer bug
before pi 0.55.2 duplicated the header) are skipped and are not tree nodes. Every other record
becomes a ``SourceRecord``, unknown types included, because children may point at them.

Ids. v2/v3 records carry ``id``/``parentId`` and are taken as they are. v1 records carry none:
Pi's migration gives each entry a random id and chains it to the previous entry in file order.
We chain the same way but derive the id deterministically, so the index is reproducible:

    derived id = first 8 hex of blake3(f"{session_id}\\x00{position}")

extended to 16 hex, then to all 64, if it repeats an id already assigned earlier in file order
(only earlier ones, so an append never changes an existing id). A record that has its own
string ``id`` keeps it even in a v1 file (mixed files, or a v3 body whose header was lost); its
``parentId`` is used when the key is present, otherwise it is chained like a v1 record.

Drift. Entry types, message roles and content-block types outside ``KNOWN_TYPES`` /
``KNOWN_ROLES`` / ``KNOWN_BLOCKS`` are counted (``unknown``; the header ``version`` is the
``writer_version``), and name ``unknown_record_type`` when they could hold text
(``stages.drift``). A system message's content is never read, so its blocks are not checked.

A v1 ``compaction`` names its first kept entry by ``firstKeptEntryIndex``: an index into the
writer's entry array, header counted. ``extra["v1_entry_ids"]`` holds one slot per parsed record
in file order (``None`` for ``session`` records), so ``v1_entry_id(session, index)`` gives the
id Pi's migration would have linked to.
"""

from __future__ import annotations

from collections.abc import Collection
from dataclasses import dataclass
from pathlib import PurePath
from typing import Any

from blake3 import blake3

from stages.drift import Drift
from stages.source import ParseResult, SourceRecord, SourceSession, parse_reasons
from stages.titles import Titles
from store.reasons import MISSING_SESSION_HEADER

__all__ = [
    "KNOWN_BLOCKS",
    "KNOWN_ROLES",
    "KNOWN_TYPES",
    "PI_KNOWN",
    "Known",
    "derived_id",
    "read_pi",
    "read_pi_format",
    "tail_ready",
    "v1_entry_id",
]

AGENT = "pi"
_HEADER = "session"
# What this adapter knows (formats §1.5–§1.6 and Pi 1.6.0's docs/session-format.md); every
# other entry type, message role and content-block type is drift (``stages.drift``).
KNOWN_TYPES = frozenset(
    {
        "message",
        "model_change",
        "thinking_level_change",
        "compaction",
        "branch_summary",
        "custom",
        "custom_message",
        "label",
        "session_info",
        "usage",
        "context_edit",
    }
)
KNOWN_ROLES = frozenset(
    {
        "user",
        "assistant",
        "toolResult",
        "bashExecution",
        "custom",
        "hookMessage",
        "branchSummary",
        "compactionSummary",
        "system",
    }
)
KNOWN_BLOCKS = frozenset({"text", "thinking", "toolCall", "image"})


@dataclass(frozen=True, slots=True)
class Known:
    """The entry types, message roles and content-block types a writer of Pi's format writes:
    every other one is drift (``stages.drift``)."""

    types: frozenset[str]
    roles: frozenset[str]
    blocks: frozenset[str]


PI_KNOWN = Known(KNOWN_TYPES, KNOWN_ROLES, KNOWN_BLOCKS)


def read_pi(parsed: ParseResult, path: str) -> SourceSession:
    """Read a parsed Pi session file. Never raises on odd content: it becomes ``reasons``."""
    return read_pi_format(parsed, path, agent=AGENT, known=PI_KNOWN)


def read_pi_format(parsed: ParseResult, path: str, *, agent: str, known: Known) -> SourceSession:
    """``read_pi`` for any writer of Pi's format: its entries are *agent*'s, and what it
    writes beyond *known* is counted as drift."""
    reasons = parse_reasons(parsed)
    raws = parsed.records
    header_index = next((i for i, r in enumerate(raws) if r.value.get("type") == _HEADER), None)
    header = raws[header_index].value if header_index is not None else None
    if header_index != 0:
        reasons.add(MISSING_SESSION_HEADER)
    head: dict[str, Any] = header or {}

    session_id: str = _str(head.get("id")) or PurePath(path).stem
    version = _version(head.get("version"))
    linear = version < 2

    drift = Drift()
    records: list[SourceRecord] = []
    entry_ids: list[str | None] = []
    used: set[str] = set()
    previous: str | None = None
    for raw in raws:
        value = raw.value
        kind = value.get("type")
        if kind == _HEADER:
            entry_ids.append(None)
            continue
        _check(drift, value, known)
        position = len(records)
        own_id = _str(value.get("id"))
        record_id: str | None
        if linear:
            record_id = own_id or derived_id(session_id, position, used)
            parent_id = _str(value.get("parentId")) if "parentId" in value else previous
        else:
            record_id = own_id
            parent_id = _str(value.get("parentId"))
        if record_id is not None:
            used.add(record_id)
        previous = record_id
        entry_ids.append(record_id)
        records.append(
            SourceRecord(
                position=position,
                line=raw.line,
                offset=raw.offset,
                id=record_id,
                parent_id=parent_id,
                kind=kind if isinstance(kind, str) else "unknown",
                value=value,
            )
        )

    extra: dict[str, Any] = {"v1_entry_ids": tuple(entry_ids)} if linear else {}
    return SourceSession(
        agent=agent,
        path=path,
        session_id=session_id,
        cwd=_str(head.get("cwd")) or "",
        version=version,
        header=header,
        records=tuple(records),
        reasons=tuple(sorted(reasons | drift.reasons())),
        parent_session=_str(head.get("parentSession")) or _str(head.get("branchedFrom")),
        extra=extra,
        writer_version=str(version) if header is not None else "",
        unknown=drift.items(),
        title=_title(records),
    )


def _title(records: list[SourceRecord]) -> str | None:
    """The ``session_info`` name (``/name``): the latest in file order wins, wherever it
    sits in the tree, and an empty or missing one clears it (formats §1.5, 0.67.x)."""
    titles = Titles()
    for record in records:
        if record.kind == "session_info":
            titles.name(record.value.get("name"), clears=True)
    return titles.title


def tail_ready(session: SourceSession) -> bool:
    """Whether appends to *session* (read whole) can be read from their own lines: its
    records carry their ids (v2+) and its header came first, so a tail read after that header
    gives the records exactly what a whole read would."""
    return (
        session.version >= 2
        and session.header is not None
        and MISSING_SESSION_HEADER not in session.reasons
    )


def _check(drift: Drift, value: dict[str, Any], known: Known) -> None:
    """Count what of one entry the writer's *known* sets do not hold."""
    if not drift.check("line", value.get("type"), known.types, value):
        return
    message = value.get("message")
    if value.get("type") != "message" or not isinstance(message, dict):
        return
    role = message.get("role")
    if not isinstance(role, str) or role not in known.roles:
        drift.note("role", role, text=True)
        return
    if role != "system":  # the system prompt is never indexed, whatever it holds
        drift.blocks(message.get("content"), known.blocks)


def derived_id(session_id: str, position: int, used: Collection[str] = ()) -> str:
    """The id a v1 record at ``position`` gets: 8 hex of blake3, longer only on a repeat."""
    digest = blake3(f"{session_id}\x00{position}".encode("utf-8", "surrogatepass")).hexdigest()
    for width in (8, 16):
        if digest[:width] not in used:
            return digest[:width]
    return digest


def v1_entry_id(session: SourceSession, index: int) -> str | None:
    """The id of the entry a v1 ``firstKeptEntryIndex`` names, or ``None`` if there is none.

    Mirrors Pi's migration: the index counts the header, and an index landing on a ``session``
    record (or out of range, or in a file that is not v1) links nothing.
    """
    ids = session.extra.get("v1_entry_ids", ())
    if isinstance(index, bool) or not 0 <= index < len(ids):
        return None
    found = ids[index]
    return found if isinstance(found, str) else None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None


def _version(value: object) -> int:
    # ``header.version ?? 1``; a non-integer version is as good as absent.
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return 1
