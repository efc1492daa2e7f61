"""The values that flow between the pure stages, before anything is stored.

    bytes ──parse──► ParseResult(RawRecord…) ──adapter──► SourceSession(SourceRecord…)
          ──lineage──► Lineage ──normalize──► NormalizedEntry… ──digest──► records

A ``SourceSession`` is agent-neutral: each adapter (``stages.pi``, ``stages.claude``,
``stages.codex``) turns raw records into nodes with an ``id`` and ``parent_id`` so one lineage
function serves all three formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from store.reasons import MALFORMED_LINE, OVERSIZED_LINE, REPAIRED_LINE, UNTERMINATED_LINE

__all__ = ["ParseResult", "RawRecord", "SourceRecord", "SourceSession", "parse_reasons"]


@dataclass(frozen=True, slots=True)
class RawRecord:
    """One JSON object from a session file.

    ``line`` is the 1-based line number, ``offset`` the byte offset where that line starts.
    Two objects concatenated on one line share ``line`` and ``offset``.
    """

    line: int
    offset: int
    value: dict[str, Any]


@dataclass(frozen=True, slots=True)
class ParseResult:
    """What ``parse`` made of a byte range.

    ``consumed`` counts the bytes up to and including the last ``\\n``: bytes after it are
    withheld because a writer may be mid-line. ``malformed_lines`` lists line numbers that
    held no JSON object (bad JSON, or a JSON value that is not an object);
    ``repaired_lines`` those whose objects were recovered by ``stages.parse.repair``.
    """

    records: tuple[RawRecord, ...]
    consumed: int
    next_line: int
    malformed_lines: tuple[int, ...] = ()
    repaired_lines: tuple[int, ...] = ()
    # something other than whitespace was withheld after ``consumed`` (a line still being
    # written, or an object still open): ``partial_line`` until it completes or settles
    withheld: bool = False
    # lines skipped for their size (``stages.parse.MAX_LINE_BYTES`` / ``MAX_LINE_OBJECTS``)
    oversized_lines: tuple[int, ...] = ()
    # read as settled (``stages.parse``): the unterminated last line was a record, or was not
    tail_taken: bool = False
    unterminated: bool = False


@dataclass(frozen=True, slots=True)
class SourceRecord:
    """A node of the session's parent graph, built by an agent adapter.

    ``position`` is the ordinal among the session's non-header records (file order).
    ``id``/``parent_id`` are the graph links (derived for formats without ids).
    ``leaf_candidate`` is false for records that must never become the active leaf (e.g.
    Claude ``progress`` lines). ``sidechain`` marks subagent records kept off the main path.
    """

    position: int
    line: int
    offset: int
    id: str | None
    parent_id: str | None
    kind: str
    value: dict[str, Any]
    leaf_candidate: bool = True
    sidechain: bool = False


@dataclass(frozen=True, slots=True)
class SourceSession:
    """One session file read by its agent adapter.

    ``reasons`` are file-level coverage reasons found while reading (``malformed_line``,
    ``missing_session_header``, ``unknown_record_type``, …). ``extra`` carries adapter facts the
    normalizer needs (e.g. a Codex parent thread id). ``writer_version`` is the version the file
    says wrote it (Pi header ``version``, Claude Code ``version``, Codex ``cli_version``; "" when
    none) and ``unknown`` counts the line, item and content-block types the adapter does not
    know, by qualified type name (``stages.drift``).
    """

    agent: str
    path: str
    session_id: str
    cwd: str
    version: int
    header: dict[str, Any] | None
    records: tuple[SourceRecord, ...]
    reasons: tuple[str, ...] = ()
    parent_session: str | None = None
    sidechain: bool = False
    extra: dict[str, Any] = field(default_factory=dict)
    writer_version: str = ""
    unknown: tuple[tuple[str, int], ...] = ()
    # the title the agent recorded in a typed field (``stages.titles``), None when none
    title: str | None = None


def parse_reasons(parsed: ParseResult) -> set[str]:
    """The coverage reasons a parse gives every adapter's session: ``malformed_line`` when a
    line held no object, ``repaired_line`` when one was recovered by the lenient repair,
    ``unterminated_line`` when a settled last line without its newline held no object
    (``partial_line``, one that waits, is the state's: ``stages.appender.waiting``)."""
    reasons: set[str] = set()
    if parsed.malformed_lines:
        reasons.add(MALFORMED_LINE)
    if parsed.repaired_lines:
        reasons.add(REPAIRED_LINE)
    if parsed.unterminated:
        reasons.add(UNTERMINATED_LINE)
    if parsed.oversized_lines:
        reasons.add(OVERSIZED_LINE)
    return reasons
