"""The part every JSONL session builder shares: its seeded state and its one-file result.

Each agent's module keeps its own line shapes, ids and file layout; what is the same for all of
them (one RNG seeded from the plan feeding the text source, a ``Draft``, a clock, planting terms
and packing the single file with its manifest records) lives here once, so a change to it reaches
every agent alike. The base draws nothing from the RNG, so a builder's random stream (and the
corpus bytes for a seed) is exactly what its own ``__init__`` and turns draw.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Iterable, Sequence

from devtools.corpus.draft import Draft, Plant, plant_terms
from devtools.corpus.manifest import ToolError
from devtools.corpus.plan import BuiltFile, BuiltSession, SessionPlan, Shared, planted_terms
from devtools.corpus.words import Text

__all__ = ["JsonlBuilder"]


class JsonlBuilder:
    """Seeded state for one session written as one JSONL file."""

    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        self.plan = plan
        self.shared = shared
        self.rng = random.Random(plan.seed)
        self.text = Text(shared.lexicon, self.rng)
        self.project = plan.project
        self.draft = Draft()
        self.now = plan.start_ms
        self.fail_next = plan.force_failure

    def _tick(self, lo: int, hi: int) -> None:
        self.now += self.rng.randint(lo, hi)

    def _plant(
        self, plantable: Collection[int], abandoned: Collection[int] = ()
    ) -> tuple[list[Plant], list[Plant]]:
        """Terms into the finished draft's carriers: (on the active path, abandoned)."""
        return plant_terms(
            self.draft,
            self.rng,
            self.shared.terms,
            plantable=plantable,
            abandoned=abandoned,
            force_user=self.plan.force_user,
        )

    def _built(
        self,
        agent: str,
        rel: str,
        session_id: str,
        planted: Sequence[Plant],
        errors: Iterable[tuple[int, str, str]],
        *,
        off_branch: Sequence[Plant] = (),
        branched: bool = False,
    ) -> BuiltSession:
        """The draft as the session's one file; ``errors`` are (line index, entry id, tool)."""
        draft = self.draft
        file = BuiltFile(
            rel=rel,
            data=draft.data(),
            end_ms=self.now,
            session_id=session_id,
            cwd=self.project.cwd,
            lines=len(draft.lines),
            malformed_lines=tuple(i + 1 for i in draft.malformed),
            branched=branched,
        )
        return BuiltSession(
            files=[file],
            planted=planted_terms(planted, agent, rel, session_id),
            off_branch=planted_terms(off_branch, agent, rel, session_id),
            tool_errors=[
                ToolError(agent, rel, session_id, entry, line + 1, tool)
                for line, entry, tool in errors
            ],
        )
