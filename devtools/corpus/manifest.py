"""``corpus.json``: what a generated corpus holds and where every planted fact sits.

Paths are relative to the corpus directory (the manifest lives beside the agent roots, never
inside one). Line numbers are 1-based. ``entry_id`` is the Pi entry ``id``, the Claude line
``uuid``, or for Codex the line number as a string.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, fields
from pathlib import Path
from typing import Any

import orjson

__all__ = [
    "MANIFEST_NAME",
    "SCHEMA",
    "BranchSummary",
    "CorpusArgs",
    "CorpusManifest",
    "FabricTrace",
    "MalformedLine",
    "PlantedTerm",
    "SessionFile",
    "ToolError",
    "Totals",
    "load_manifest",
]

MANIFEST_NAME = "corpus.json"
SCHEMA = "sessiondex.corpus/1"


@dataclass(frozen=True, slots=True)
class CorpusArgs:
    sessions: int
    mean_kb: int
    seed: int
    agents: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class SessionFile:
    """One written file. ``parent_file`` is set for a Claude subagent transcript."""

    file: str
    agent: str
    id: str
    cwd: str
    bytes: int
    mtime_ns: int
    lines: int
    branched: bool
    malformed_lines: tuple[int, ...]
    parent_file: str | None


@dataclass(frozen=True, slots=True)
class PlantedTerm:
    """A term written into exactly one message part.

    ``text`` is the whole part after planting. ``occurrences`` counts the term's bytes in the
    corpus: 1, except where the agent itself writes the part again (Claude's ``toolUseResult``
    on the same line, Codex's ``event_msg`` mirrors on ``mirror_lines``).
    """

    term: str
    agent: str
    file: str
    session_id: str
    entry_id: str
    line: int
    role: str
    text: str
    occurrences: int
    mirror_lines: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class MalformedLine:
    agent: str
    file: str
    line: int


@dataclass(frozen=True, slots=True)
class ToolError:
    agent: str
    file: str
    session_id: str
    entry_id: str
    line: int
    tool: str


@dataclass(frozen=True, slots=True)
class FabricTrace:
    """A Pi ``fabric_exec`` result; ``defect`` names the rule an invalid trace breaks."""

    file: str
    session_id: str
    entry_id: str
    line: int
    valid: bool
    defect: str | None
    operations: int
    failed_operations: int
    outcome: str
    on_active_path: bool


@dataclass(frozen=True, slots=True)
class BranchSummary:
    """A Pi ``branch_summary`` entry; ``envelope`` is ``default`` (Pi's own), ``v1`` or ``v2``."""

    file: str
    session_id: str
    entry_id: str
    line: int
    envelope: str
    facts: int
    from_id: str


@dataclass(frozen=True, slots=True)
class Totals:
    bytes: int
    sessions: int
    files: int
    lines: int


@dataclass(frozen=True, slots=True)
class CorpusManifest:
    args: CorpusArgs
    roots: dict[str, str]
    sessions: tuple[SessionFile, ...]
    planted: tuple[PlantedTerm, ...]
    off_branch: tuple[PlantedTerm, ...]
    negative_controls: tuple[str, ...]
    malformed: tuple[MalformedLine, ...]
    tool_errors: tuple[ToolError, ...]
    fabric_traces: tuple[FabricTrace, ...]
    branch_summaries: tuple[BranchSummary, ...]
    totals: Totals
    schema: str = SCHEMA

    def to_json(self) -> bytes:
        return orjson.dumps(asdict(self), option=orjson.OPT_SORT_KEYS | orjson.OPT_INDENT_2)

    @classmethod
    def from_json(cls, data: bytes) -> CorpusManifest:
        raw = orjson.loads(data)
        if raw.get("schema") != SCHEMA:
            raise ValueError(f"not a {SCHEMA} manifest (schema={raw.get('schema')!r})")
        return cls(
            args=_build(CorpusArgs, raw["args"]),
            roots=dict(raw["roots"]),
            sessions=tuple(_build(SessionFile, s) for s in raw["sessions"]),
            planted=tuple(_build(PlantedTerm, p) for p in raw["planted"]),
            off_branch=tuple(_build(PlantedTerm, p) for p in raw["off_branch"]),
            negative_controls=tuple(raw["negative_controls"]),
            malformed=tuple(_build(MalformedLine, m) for m in raw["malformed"]),
            tool_errors=tuple(_build(ToolError, t) for t in raw["tool_errors"]),
            fabric_traces=tuple(_build(FabricTrace, f) for f in raw["fabric_traces"]),
            branch_summaries=tuple(_build(BranchSummary, b) for b in raw["branch_summaries"]),
            totals=_build(Totals, raw["totals"]),
        )


def _build(cls: Any, raw: dict[str, Any]) -> Any:
    # JSON arrays come back as lists; the dataclasses hold tuples.
    values = {f.name: raw[f.name] for f in fields(cls)}
    return cls(**{k: tuple(v) if isinstance(v, list) else v for k, v in values.items()})


def load_manifest(corpus_dir: Path) -> CorpusManifest:
    """Read ``corpus_dir/corpus.json``."""
    return CorpusManifest.from_json((corpus_dir / MANIFEST_NAME).read_bytes())
