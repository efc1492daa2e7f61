"""Cursor agent transcripts, in the shapes third-party readers observed (docs/writers.md: no
Cursor writer runs here).

One file per session, ``cursor/<slug>/agent-transcripts/<uuid>/<uuid>.jsonl`` (the slug: the
cwd without its leading ``/``, every non-alphanumeric as ``-``). Lines are ``{role, message:
{content: [blocks]}}``: a prompt wrapped in ``<timestamp>`` / ``<user_query>``, the model's
steps as ``text`` and id-less ``tool_use`` blocks (mostly one block a line), and a
``{type: "turn_ended", status}`` line closing each turn. No line carries an id, a time or a
tool result, so no tool error is recorded for Cursor and the manifest records no cwd (the
reader cannot recover one). Terms go into prompts and answers.
"""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any, Final

from devtools.corpus.builder import JsonlBuilder
from devtools.corpus.ids import uuid4
from devtools.corpus.plan import BuiltSession, SessionPlan, Shared
from devtools.corpus.tools import KINDS, WEIGHTS, ToolCall, plan_call

__all__ = ["build_cursor"]

_QUERY: Final = "<user_query>\n"
_UNSAFE: Final = re.compile("[^A-Za-z0-9]")
# The agent-neutral kinds as Cursor's tools
_TOOL: Final = {"read": "Read", "bash": "Shell", "edit": "StrReplace", "grep": "Grep",
                "find": "Glob", "ls": "Glob", "write": "Write"}  # fmt: skip


class _Cursor(JsonlBuilder):
    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        super().__init__(plan, shared)
        self.session_id = uuid4(self.rng)

    def _line(self, value: dict[str, Any]) -> int:
        return self.draft.add(value)

    def _entry_id(self, line: int) -> str:
        return f"L{line + 1}.{line}"  # one object a line: its position is its line index

    def run(self) -> BuiltSession:
        while True:
            self._turn()
            if self.draft.size >= self.plan.target:
                break
        return self._finish()

    def _turn(self) -> None:
        rng, text = self.rng, self.text
        self._tick(15_000, 900_000)
        stamp = datetime.fromtimestamp(self.now // 1000, UTC).strftime("%A, %b %-d, %Y, %-I:%M %p")
        head = f"<timestamp>{stamp} (UTC+0)</timestamp>\n{_QUERY}"
        prompt = f"{head}{text.prose(int(rng.lognormvariate(5.3, 0.9)))}\n</user_query>"
        line = self._line(_message("user", [{"type": "text", "text": prompt}]))
        self.draft.carrier(
            line, "user", self._entry_id(line), ("message", "content", 0, "text"), start=len(head)
        )
        for _ in range(rng.choice((1, 2, 2, 3, 4))):
            self._tick(1_500, 40_000)
            if rng.random() < 0.3:
                said = text.prose(int(rng.lognormvariate(4.5, 0.8)))
                self._line(_message("assistant", [{"type": "text", "text": said}]))
            kinds = rng.choices(KINDS, WEIGHTS, k=rng.choice((1, 1, 2)))
            for call in [plan_call(k, text, self.project) for k in kinds]:
                block = {"type": "tool_use", "name": _TOOL[call.kind], "input": _input(call)}
                self._line(_message("assistant", [block]))
        answer = text.prose(int(rng.lognormvariate(6.0, 0.8)))
        line = self._line(_message("assistant", [{"type": "text", "text": answer}]))
        self.draft.carrier(
            line, "assistant", self._entry_id(line), ("message", "content", 0, "text")
        )
        self._line({"type": "turn_ended", "status": "success"})

    def _finish(self) -> BuiltSession:
        planted, _ = self._plant({c.line for c in self.draft.carriers})
        slug = _UNSAFE.sub("-", self.project.cwd.lstrip("/"))
        rel = f"cursor/{slug}/agent-transcripts/{self.session_id}/{self.session_id}.jsonl"
        built = self._built("cursor", rel, self.session_id, planted, ())
        return replace(built, files=[replace(f, cwd="") for f in built.files])


def _message(role: str, content: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": role, "message": {"content": content}}


def _input(call: ToolCall) -> dict[str, Any]:
    if call.kind == "bash":
        return {"command": call.command, "working_directory": call.path,
                "description": "Run a command", "block_until_ms": 30000}  # fmt: skip
    if call.kind == "grep":
        return {"pattern": call.pattern, "path": call.path}
    if call.kind in ("find", "ls"):
        return {"glob_pattern": call.pattern or "*", "target_directory": call.path}
    if call.kind == "edit":
        return {"path": call.path, "old_string": call.old, "new_string": call.new}
    if call.kind == "write":
        return {"path": call.path, "contents": call.content}
    return {"path": call.path}


def build_cursor(plan: SessionPlan, shared: Shared) -> BuiltSession:
    """One Cursor agent transcript."""
    return _Cursor(plan, shared).run()
