"""GitHub Copilot CLI sessions (1.0.102's ``events.jsonl``, as the conformance suite saw it).

One folder per session, ``copilot/<uuid>/events.jsonl``: a ``session.start``, then per turn a
``user.message``, and per model step ``assistant.turn_start``, ``session.usage_record``, an
``assistant.message`` (text and/or ``toolRequests``), each request's
``tool.execution_start`` / ``tool.execution_complete`` (paired by ``toolCallId``) and
``assistant.turn_end``; every event's ``parentId`` is the one before. A shell command that
fails is ``success: true`` with ``shellExecution.exitCode`` non-zero; any other failing tool
is ``success: false`` with ``error``. A ``system.message`` (the system prompt) follows each
prompt. Terms go into prompts, answers and tool result contents.
"""

from __future__ import annotations

from typing import Any

from devtools.corpus.builder import JsonlBuilder
from devtools.corpus.ids import iso, uuid4
from devtools.corpus.plan import BuiltSession, SessionPlan, Shared
from devtools.corpus.tools import KINDS, WEIGHTS, ToolCall, plan_call, run_call

__all__ = ["build_copilot"]

_VERSIONS = ("1.0.63", "1.0.89", "1.0.102")
_MODELS = ("claude-sonnet-4.6", "gpt-5.4", "gpt-5.3-codex")
# The agent-neutral kinds as Copilot's tools: (tool name, argument names)
_TOOL = {"read": "view", "bash": "bash", "edit": "edit", "grep": "grep", "find": "glob",
         "ls": "view", "write": "create"}  # fmt: skip


class _Copilot(JsonlBuilder):
    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        super().__init__(plan, shared)
        self.session_id = uuid4(self.rng)
        self.model = self.rng.choice(_MODELS)
        self.last: str | None = None
        self.errors: list[tuple[int, str]] = []

    def _event(self, kind: str, data: dict[str, Any]) -> int:
        own = uuid4(self.rng)
        line = self.draft.add(
            {
                "type": kind,
                "data": data,
                "id": own,
                "timestamp": iso(self.now),
                "parentId": self.last,
            }  # fmt: skip
        )
        self.last = own
        return line

    def _id(self, line: int) -> str:
        return str(self.draft.lines[line]["id"])

    def run(self) -> BuiltSession:
        rng = self.rng
        self._event(
            "session.start",
            {"sessionId": self.session_id, "version": 1, "producer": "copilot-agent",
             "copilotVersion": rng.choice(_VERSIONS), "startTime": iso(self.now),
             "context": {"cwd": self.project.cwd}},
        )  # fmt: skip
        self._event("session.model_change", {"newModel": self.model})
        while True:
            self._turn()
            if self.draft.size >= self.plan.target and not self.fail_next:
                break
        self._tick(100, 3_000)
        self._event("session.shutdown", {"shutdownType": "routine", "currentModel": self.model})
        return self._finish()

    def _turn(self) -> None:
        rng, text = self.rng, self.text
        self._tick(15_000, 900_000)
        prompt = text.prose(int(rng.lognormvariate(5.3, 0.9)))
        line = self._event(
            "user.message",
            {"content": prompt, "transformedContent": f"<current_datetime>{iso(self.now)}"
             f"</current_datetime>\n\n{prompt}", "interactionId": uuid4(rng)},
        )  # fmt: skip
        self.draft.carrier(line, "user", self._id(line), ("data", "content"))
        self._event("system.message", {"role": "system", "content": text.prose(1_500)})
        steps = rng.choice((1, 2, 2, 3, 4))
        if self.fail_next:
            steps = max(steps, 2)
        for step in range(steps):
            final = step == steps - 1
            self._tick(1_500, 40_000)
            self._event("assistant.turn_start", {"turnId": str(step)})
            self._event("session.usage_record", {"usage": {"model": self.model}})
            said = text.prose(int(rng.lognormvariate(6.0 if final else 4.5, 0.8)))
            calls = [] if final else [
                plan_call(k, text, self.project)
                for k in rng.choices(KINDS, WEIGHTS, k=rng.choice((1, 1, 2)))
            ]  # fmt: skip
            requests = [(f"call_{text.alnum(24)}", call) for call in calls]
            content = said if final or rng.random() < 0.4 else ""
            line = self._event(
                "assistant.message",
                {"messageId": uuid4(rng), "model": self.model, "content": content,
                 "toolRequests": [{"toolCallId": cid, "name": _TOOL[c.kind],
                                   "arguments": _arguments(c), "type": "function"}
                                  for cid, c in requests]},
            )  # fmt: skip
            if content:
                self.draft.carrier(line, "assistant", self._id(line), ("data", "content"))
            for call_id, call in requests:
                self._tool(call_id, call)
            self._event("assistant.turn_end", {"turnId": str(step)})

    def _tool(self, call_id: str, call: ToolCall) -> None:
        rng = self.rng
        name = _TOOL[call.kind]
        args = _arguments(call)
        self._event("tool.execution_start", {"toolCallId": call_id, "toolName": name,
                                             "arguments": args})  # fmt: skip
        self._tick(60, 25_000)
        if self.fail_next:  # the forced failure is a shell command's
            fail = call.kind == "bash"
            self.fail_next = not fail
        else:
            fail = rng.random() < 0.07
        result = run_call(call, self.text, fail=fail, big=0, now_ms=self.now)
        data: dict[str, Any] = {"toolCallId": call_id, "model": self.model}
        if call.kind == "bash":
            code = result.exit_code if result.is_error else 0
            data |= {"shellExecution": {"exitCode": code}, "success": True,
                     "result": {"content": f"{result.text}\n<shellId: 0 completed with exit "
                                f"code {code}>"}}  # fmt: skip
        elif result.is_error:
            data |= {"success": False, "error": {"message": result.text, "code": "failure"}}
        else:
            data |= {"success": True, "result": {"content": result.text}}
        line = self._event("tool.execution_complete", data)
        path = ("data", "error", "message") if "error" in data else ("data", "result", "content")
        self.draft.carrier(line, "toolResult", self._id(line), path)
        if result.is_error:
            self.errors.append((line, name))

    def _finish(self) -> BuiltSession:
        planted, _ = self._plant({c.line for c in self.draft.carriers})
        rel = f"copilot/{self.session_id}/events.jsonl"
        errors = [(line, self._id(line), tool) for line, tool in self.errors]
        return self._built("copilot", rel, self.session_id, planted, errors)


def _arguments(call: ToolCall) -> dict[str, Any]:
    if call.kind == "bash":
        return {"command": call.command, "description": "Run a command"}
    if call.kind in ("grep", "find"):
        return {"pattern": call.pattern, "path": call.path}
    if call.kind == "edit":
        return {"path": call.path, "old_str": call.old, "new_str": call.new}
    if call.kind == "write":
        return {"path": call.path, "file_text": call.content}
    return {"path": call.path}


def build_copilot(plan: SessionPlan, shared: Shared) -> BuiltSession:
    """One Copilot CLI session folder."""
    return _Copilot(plan, shared).run()
