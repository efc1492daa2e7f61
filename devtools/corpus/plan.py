"""What one session should contain (``SessionPlan``) and what building it produced."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

from devtools.corpus.draft import Plant
from devtools.corpus.manifest import BranchSummary, FabricTrace, PlantedTerm, ToolError
from devtools.corpus.project import Project
from devtools.corpus.terms import TermPool
from devtools.corpus.words import Lexicon

__all__ = ["BuiltFile", "BuiltSession", "SessionPlan", "Shared", "planted_terms"]


@dataclass(frozen=True, slots=True)
class Shared:
    """Corpus-wide state every builder draws on: one lexicon and one term pool."""

    lexicon: Lexicon
    terms: TermPool


@dataclass(frozen=True, slots=True)
class SessionPlan:
    """The seeded choices for one session; the builder's own RNG is seeded with ``seed``.

    ``target`` is the byte size to stop growing at; ``trace_defect`` makes that session's
    first ``fabric_exec`` result carry an invalid trace.
    """

    index: int
    agent: str
    project: Project
    start_ms: int
    target: int
    seed: int
    branch: bool = False
    fabric: bool = False
    trace_defect: str | None = None
    malformed: bool = False
    compaction: bool = False
    subagent: bool = False
    force_user: bool = False
    force_failure: bool = False


@dataclass(frozen=True, slots=True)
class BuiltFile:
    """A session file ready to write; ``end_ms`` is its last write time (its mtime, roughly)."""

    rel: str
    data: bytes
    end_ms: int
    session_id: str
    cwd: str
    lines: int
    malformed_lines: tuple[int, ...] = ()
    branched: bool = False
    parent: str | None = None


@dataclass(slots=True)
class BuiltSession:
    files: list[BuiltFile]
    planted: list[PlantedTerm] = field(default_factory=list)
    off_branch: list[PlantedTerm] = field(default_factory=list)
    tool_errors: list[ToolError] = field(default_factory=list)
    fabric_traces: list[FabricTrace] = field(default_factory=list)
    branch_summaries: list[BranchSummary] = field(default_factory=list)


def planted_terms(
    plants: Sequence[Plant], agent: str, file: str, session_id: str
) -> list[PlantedTerm]:
    """Manifest records for terms a builder planted in ``file``."""
    return [
        PlantedTerm(
            term=p.term,
            agent=agent,
            file=file,
            session_id=session_id,
            entry_id=p.entry_id,
            line=p.line,
            role=p.role,
            text=p.text,
            occurrences=p.occurrences,
            mirror_lines=p.mirror_lines,
        )
        for p in plants
    ]
