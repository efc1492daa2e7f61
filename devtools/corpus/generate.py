"""``generate``: plan a corpus from one seed, build each session, write files and mtimes."""

from __future__ import annotations

import math
import os
import random
import shutil
from collections.abc import Callable, Sequence
from dataclasses import replace
from pathlib import Path

from devtools.corpus.aider import build_aider
from devtools.corpus.claude import build_claude
from devtools.corpus.codex import build_codex
from devtools.corpus.copilot import build_copilot
from devtools.corpus.cursor import build_cursor
from devtools.corpus.fabric import TRACE_DEFECTS
from devtools.corpus.gemini import build_gemini
from devtools.corpus.manifest import (
    MANIFEST_NAME,
    BranchSummary,
    CorpusArgs,
    CorpusManifest,
    FabricTrace,
    MalformedLine,
    PlantedTerm,
    SessionFile,
    ToolError,
    Totals,
)
from devtools.corpus.pi import build_pi
from devtools.corpus.plan import BuiltFile, BuiltSession, SessionPlan, Shared
from devtools.corpus.project import Project, make_projects
from devtools.corpus.qwen import build_qwen
from devtools.corpus.terms import TermPool
from devtools.corpus.words import Lexicon, Text

__all__ = ["AGENTS", "generate"]

Builder = Callable[[SessionPlan, Shared], BuiltSession]
_BUILDERS: dict[str, Builder] = {
    "pi": build_pi,
    "claude": build_claude,
    "codex": build_codex,
    "gemini": build_gemini,
    "qwen": build_qwen,
    "copilot": build_copilot,
    "aider": build_aider,
    "cursor": build_cursor,
}
AGENTS = tuple(_BUILDERS)
# Share of sessions per agent when several are asked for (pi 60%, claude 20%, codex 20% of the
# three; a Gemini CLI, Qwen Code, Copilot CLI, Aider or Cursor session counts as a Codex one).
_SHARE = {
    "pi": 3, "claude": 1, "codex": 1, "gemini": 1, "qwen": 1, "copilot": 1, "aider": 1, "cursor": 1
}  # fmt: skip
_PROJECTS = 8
_NEGATIVE_CONTROLS = 8
_EPOCH_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
_DAY_MS = 86_400_000
_MIN_TARGET = 4_096


def _split(sessions: int, agents: Sequence[str]) -> dict[str, int]:
    """Largest-remainder split by ``_SHARE``; every agent gets a session when there are enough."""
    total = sum(_SHARE[a] for a in agents)
    exact = {a: sessions * _SHARE[a] / total for a in agents}
    counts = {a: int(exact[a]) for a in agents}
    by_remainder = sorted(
        agents, key=lambda a: (exact[a] - counts[a], -agents.index(a)), reverse=True
    )
    for a in by_remainder[: sessions - sum(counts.values())]:
        counts[a] += 1
    for a in agents:
        while counts[a] == 0 and sessions >= len(agents):
            donor = max(agents, key=lambda b: counts[b])
            counts[donor] -= 1
            counts[a] += 1
    return counts


def _some(rng: random.Random, indexes: list[int], share: float, *, at_least: int) -> set[int]:
    count = min(len(indexes), max(at_least, round(share * len(indexes))))
    return set(rng.sample(indexes, count))


def _plan(
    rng: random.Random,
    sessions: int,
    mean_kb: int,
    agents: Sequence[str],
    projects: Sequence[Project],
    malformed_lines: bool = True,
) -> list[SessionPlan]:
    counts = _split(sessions, agents)
    order = [a for a in agents for _ in range(counts[a])]
    rng.shuffle(order)
    start = _EPOCH_MS + rng.randrange(180) * _DAY_MS
    starts = sorted(start + rng.randrange(60 * _DAY_MS) for _ in range(sessions))
    raw = [rng.lognormvariate(0, 0.9) for _ in range(sessions)]
    scale = sessions * mean_kb * 1024 / sum(raw)
    project_weights = [1 / (i + 1) ** 0.8 for i in range(len(projects))]
    of = {a: [i for i, b in enumerate(order) if b == a] for a in agents}
    pi, claude = of.get("pi", []), of.get("claude", [])
    branch = _some(rng, pi, 0.25, at_least=1) | _some(rng, claude, 0.2, at_least=1)
    fabric = sorted(_some(rng, pi, 0.3, at_least=1))
    defects: dict[int, str] = {}
    for n, i in enumerate(fabric):
        if n == 0 or rng.random() < 0.15:
            defects[i] = TRACE_DEFECTS[len(defects) % len(TRACE_DEFECTS)]
    malformed = _some(rng, list(range(sessions)), 1 / 50, at_least=math.ceil(sessions / 50))
    if not malformed_lines:
        malformed = set()  # drawn anyway, so every other choice stays what it would have been
    compaction = {i for i in range(sessions) if rng.random() < 0.25}
    subagent = _some(rng, claude, 0.2, at_least=1)
    firsts = {idx[0] for idx in of.values() if idx}
    return [
        SessionPlan(
            index=i,
            agent=agent,
            project=rng.choices(projects, project_weights)[0],
            start_ms=starts[i],
            target=max(_MIN_TARGET, int(raw[i] * scale)),
            seed=rng.getrandbits(64),
            branch=i in branch,
            fabric=i in fabric,
            trace_defect=defects.get(i),
            malformed=i in malformed,
            compaction=i in compaction,
            subagent=i in subagent,
            force_user=i in firsts,
            force_failure=i in firsts,
        )
        for i, agent in enumerate(order)
    ]


def _clear(out: Path) -> None:
    """Remove what an earlier run wrote (and nothing else)."""
    for name in AGENTS:
        shutil.rmtree(out / name, ignore_errors=True)
    (out / MANIFEST_NAME).unlink(missing_ok=True)


def generate(
    out: Path,
    *,
    sessions: int,
    mean_kb: int,
    seed: int,
    agents: Sequence[str] = ("pi",),
    force: bool = False,
    malformed_lines: bool = True,
) -> CorpusManifest:
    """Write a deterministic corpus of ``sessions`` session files into ``out``.

    The same arguments give byte-identical files with identical mtimes. ``out`` must be empty
    or absent; ``force`` first removes the agent roots and manifest of an earlier run.
    ``malformed_lines=False`` leaves out the cut-off lines planted in 1 of 50 sessions, for a
    corpus on which a negative control can come back with complete coverage.
    """
    agents = tuple(agents)
    if sessions < 1 or mean_kb < 1:
        raise ValueError("sessions and mean_kb must be at least 1")
    if not agents or len(set(agents)) != len(agents) or not set(agents) <= set(AGENTS):
        raise ValueError(f"agents must be distinct names from {AGENTS}, got {agents}")
    if force:
        _clear(out)
    elif out.exists() and any(out.iterdir()):
        raise FileExistsError(f"{out} is not empty (force / --force replaces an earlier corpus)")
    out.mkdir(parents=True, exist_ok=True)

    rng = random.Random(seed)
    lexicon = Lexicon(random.Random(rng.getrandbits(64)))
    shared = Shared(lexicon, TermPool(random.Random(rng.getrandbits(64))))
    negative = tuple(shared.terms.new() for _ in range(_NEGATIVE_CONTROLS))
    projects = make_projects(Text(lexicon, random.Random(rng.getrandbits(64))), _PROJECTS)
    plans = _plan(rng, sessions, mean_kb, agents, projects, malformed_lines)

    written: list[tuple[str, BuiltFile]] = []
    planted: list[PlantedTerm] = []
    off_branch: list[PlantedTerm] = []
    tool_errors: list[ToolError] = []
    traces: list[FabricTrace] = []
    summaries: list[BranchSummary] = []
    planned_total = actual_total = 0
    for plan in plans:
        # Carry the running size error forward so the corpus total lands on target.
        target = max(_MIN_TARGET, plan.target + planned_total - actual_total)
        planned_total += plan.target
        built = _BUILDERS[plan.agent](replace(plan, target=target), shared)
        for f in built.files:
            path = out / f.rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_bytes(f.data)
            actual_total += len(f.data)
            written.append((plan.agent, f))
        planted += built.planted
        off_branch += built.off_branch
        tool_errors += built.tool_errors
        traces += built.fabric_traces
        summaries += built.branch_summaries

    # Distinct mtimes, at least a second apart, so "newest first" never ties on any filesystem.
    mtimes: dict[str, int] = {}
    previous = 0
    for _, f in sorted(written, key=lambda w: (w[1].end_ms, w[1].rel)):
        previous = max(f.end_ms, previous + 1000)
        mtimes[f.rel] = previous * 1_000_000
        os.utime(out / f.rel, ns=(mtimes[f.rel], mtimes[f.rel]))

    files = [
        SessionFile(
            file=f.rel,
            agent=agent,
            id=f.session_id,
            cwd=f.cwd,
            bytes=len(f.data),
            mtime_ns=mtimes[f.rel],
            lines=f.lines,
            branched=f.branched,
            malformed_lines=f.malformed_lines,
            parent_file=f.parent,
        )
        for agent, f in written
    ]
    files.sort(key=lambda s: s.file)
    manifest = CorpusManifest(
        args=CorpusArgs(sessions=sessions, mean_kb=mean_kb, seed=seed, agents=agents),
        roots={a: a for a in agents},
        sessions=tuple(files),
        planted=tuple(planted),
        off_branch=tuple(off_branch),
        negative_controls=negative,
        malformed=tuple(
            MalformedLine(s.agent, s.file, line) for s in files for line in s.malformed_lines
        ),
        tool_errors=tuple(tool_errors),
        fabric_traces=tuple(traces),
        branch_summaries=tuple(summaries),
        totals=Totals(
            bytes=sum(s.bytes for s in files),
            sessions=sessions,
            files=len(files),
            lines=sum(s.lines for s in files),
        ),
    )
    (out / MANIFEST_NAME).write_bytes(manifest.to_json())
    # The manifest's mtime is pinned too, so a whole corpus directory is reproducible.
    newest = max(mtimes.values()) + 1_000_000_000
    os.utime(out / MANIFEST_NAME, ns=(newest, newest))
    return manifest
