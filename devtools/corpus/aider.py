"""Aider chat histories (``.aider.chat.history.md``, aider 0.86's ``io.py``), one per folder.

A file holds several runs, each ``# aider chat started at <local time>`` then Aider's notices
(``> …``), and per exchange a prompt (``#### …``), the model's reply (prose, sometimes a
SEARCH/REPLACE edit block naming a project file) and notices again; some exchanges are a
``/run`` of a project command instead, whose output and exit status Aider never writes (so
no tool error is recorded for Aider). Each session is its own folder,
``aider/<project>-<n>/``: the file's identity is its path (``stages.aider.source``), so the
manifest records no session id or cwd for it. Terms go into prompts and replies.
"""

from __future__ import annotations

import random
from datetime import UTC, datetime

from devtools.corpus.manifest import PlantedTerm
from devtools.corpus.plan import BuiltFile, BuiltSession, SessionPlan, Shared
from devtools.corpus.words import Text

__all__ = ["build_aider"]

_FILE = ".aider.chat.history.md"


class _Aider:
    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        self.plan = plan
        self.shared = shared
        self.rng = random.Random(plan.seed)
        self.text = Text(shared.lexicon, self.rng)
        self.now = plan.start_ms
        # (kind, lines): kind "run", "notice", "user", "assistant"
        self.blocks: list[tuple[str, list[str]]] = []
        self.size = 0

    def _add(self, kind: str, lines: list[str]) -> int:
        self.blocks.append((kind, lines))
        self.size += sum(len(x.encode()) + 3 for x in lines) + 1
        return len(self.blocks) - 1

    def run(self) -> BuiltSession:
        rng, text, project = self.rng, self.text, self.plan.project
        while True:
            stamp = datetime.fromtimestamp(self.now // 1000, UTC).strftime("%Y-%m-%d %H:%M:%S")
            self._add("run", [f"# aider chat started at {stamp}"])
            self._add("notice", ["Aider v0.86.2", f"Model: {rng.choice(('gpt-5.4', 'sonnet'))}"
                                 " with diff edit format", "Git repo: .git"])  # fmt: skip
            for _ in range(rng.randint(1, 4)):
                self.now += rng.randint(20_000, 600_000)
                if rng.random() < 0.2:
                    self._add("user", [f"/run {project.command(text)}"])
                    self._add("notice", ["Add 0.1k tokens of command output to the chat? "
                                         "(Y)es/(N)o [Yes]: y"])  # fmt: skip
                    continue
                # every line of the input is "####"-prefixed, an empty one too
                self._add("user", text.prose(int(rng.lognormvariate(5.0, 0.8))).split("\n"))
                reply = text.prose(int(rng.lognormvariate(6.0, 0.8)), markdown=True).split("\n")
                edited = None
                if rng.random() < 0.4:
                    edited = text.pick(project.files)
                    search, replace = text.code(3).split("\n"), text.code(4).split("\n")
                    reply += ["", edited, "```", "<<<<<<< SEARCH", *search, "=======",
                              *replace, ">>>>>>> REPLACE", "```"]  # fmt: skip
                self._add("assistant", reply)
                notices = [f"Tokens: {rng.randint(2, 40)}k sent, {rng.randint(20, 900)} received."]
                if edited:
                    notices.append(f"Applied edit to {edited}")
                self._add("notice", notices)
            self.now += rng.randint(60_000, 3_600_000)
            if self.size >= self.plan.target:
                break
        return self._finish()

    def _finish(self) -> BuiltSession:
        rng = self.rng
        rel = f"aider/{self.plan.project.name}-{self.plan.index}/{_FILE}"
        carriers = [i for i, (kind, lines) in enumerate(self.blocks)
                    if kind in ("user", "assistant") and not lines[0].startswith("/")]  # fmt: skip
        chosen = rng.sample(carriers, min(len(carriers), rng.choice((1, 2, 2, 3))))
        if self.plan.force_user:
            users = [i for i in carriers if self.blocks[i][0] == "user"]
            if users and not any(self.blocks[i][0] == "user" for i in chosen):
                chosen[0] = users[0]
        terms = {i: self.shared.terms.new() for i in chosen}
        for i, term in terms.items():
            lines = self.blocks[i][1]
            at = rng.randrange(len(lines))
            while not lines[at].strip() or lines[at].startswith(("```", "<<<<", "====", ">>>>")):
                at = (at + 1) % len(lines)
            lines[at] = f"{lines[at]} {term}"
        out: list[str] = []
        starts: dict[int, int] = {}
        for i, (kind, lines) in enumerate(self.blocks):
            if kind != "notice" or self.blocks[i - 1][0] != "run":
                out.append("")  # the run line's own blank line comes before its notices
            starts[i] = len(out) + 1
            if kind == "run":
                out += [lines[0], ""]
            elif kind == "user":
                out += [f"#### {x}  " for x in lines]
            elif kind == "notice":
                out += [f"> {x}  " for x in lines]
            else:
                out += lines
        data = ("\n".join(out) + "\n").encode()
        planted = [
            PlantedTerm(
                term=term,
                agent="aider",
                file=rel,
                session_id="",
                entry_id=f"L{starts[i]}",
                line=starts[i],
                role=self.blocks[i][0],
                text="\n".join(self.blocks[i][1]).strip("\n"),
                occurrences=1,
                mirror_lines=(),
            )  # fmt: skip
            for i, term in terms.items()
        ]
        return BuiltSession(
            files=[
                BuiltFile(
                    rel=rel, data=data, end_ms=self.now, session_id="", cwd="", lines=len(out)
                )
            ],  # fmt: skip
            planted=planted,
        )


def build_aider(plan: SessionPlan, shared: Shared) -> BuiltSession:
    """One folder's Aider chat history, several runs long."""
    return _Aider(plan, shared).run()
