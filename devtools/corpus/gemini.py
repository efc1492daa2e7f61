"""Gemini CLI sessions (0.39+ JSONL, as 0.61.0 writes them; see docs/writers.md).

A header, the ``<session_context>`` checkpoint, then per turn the user message, a
``$set lastUpdated``, and each model turn written twice under one id: first as recorded, then
again with its ``toolCalls`` (each with its ``result`` parts and ``status``) once they ran; the
function responses also go back as a ``user`` message. A planted term in a model turn's text
has the first version's line as mirror, one in a tool output the function-response message.
Shell outputs are never planted in: their envelope's trailing ``Exit Code`` line is what the
reader parses. A shell failure is ``status: "success"`` with a non-zero exit in that envelope
(as the CLI writes it); any other tool's is ``status: "error"`` with ``response.error``.
"""

from __future__ import annotations

import copy
from typing import Any

from devtools.corpus.builder import JsonlBuilder
from devtools.corpus.draft import FieldPath
from devtools.corpus.ids import iso, uuid4
from devtools.corpus.plan import BuiltSession, SessionPlan, Shared
from devtools.corpus.tools import KINDS, WEIGHTS, ToolCall, plan_call, run_call

__all__ = ["build_gemini"]

_MODELS = ("gemini-3-pro-preview", "gemini-3-flash-preview", "gemini-2.5-pro")
_USER_TEXT: FieldPath = ("content", 0, "text")
_SAID: FieldPath = ("content",)


def _output(i: int) -> FieldPath:
    return ("toolCalls", i, "result", 0, "functionResponse", "response", "output")


class _Gemini(JsonlBuilder):
    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        super().__init__(plan, shared)
        self.session_id = uuid4(self.rng)
        self.model = self.rng.choice(_MODELS)
        self.errors: list[tuple[int, str, str]] = []

    def _updated(self) -> None:
        self.draft.add({"$set": {"lastUpdated": iso(self.now)}})

    def run(self) -> BuiltSession:
        rng, text, project = self.rng, self.text, self.project
        self.draft.add(
            {
                "sessionId": self.session_id,
                "projectHash": text.hex(64),
                "startTime": iso(self.now),
                "lastUpdated": iso(self.now),
                "kind": "main",
            }
        )
        context = (
            "<session_context>\nThis is the Gemini CLI. We are setting up the context for our "
            f"chat.\n- **Workspace Directories:**\n  - {project.cwd}\n</session_context>"
        )
        first = {"id": text.hex(32), "timestamp": iso(self.now), "type": "user",
                 "content": [{"text": context}]}  # fmt: skip
        self.draft.add({"$set": {"messages": [first], "lastUpdated": iso(self.now)}})
        # /dir add writes the workspace directories: the only place a file names its cwd
        self.draft.add({"$set": {"directories": [project.cwd]}})
        malformed = not self.plan.malformed
        while True:
            self._turn()
            done = self.draft.size / self.plan.target
            if not malformed and done >= 0.3:
                self._tick(100, 5_000)
                said = {"id": uuid4(rng), "timestamp": iso(self.now), "type": "gemini",
                        "content": text.prose(rng.randint(200, 1500))}  # fmt: skip
                self.draft.add_truncated(said, rng)
                malformed = True
                continue
            if done >= 1 and malformed and not self.fail_next:
                break
        return self._finish()

    def _turn(self) -> None:
        rng, text = self.rng, self.text
        self._tick(15_000, 900_000)
        prompt = text.prose(int(rng.lognormvariate(5.3, 0.9)))
        mid = uuid4(rng)
        line = self.draft.add({"id": mid, "timestamp": iso(self.now), "type": "user",
                               "content": [{"text": prompt}]})  # fmt: skip
        self.draft.carrier(line, "user", mid, _USER_TEXT)
        self._updated()
        steps = rng.choice((1, 2, 2, 3, 4))
        if self.fail_next:
            steps = max(steps, 2)
        for step in range(steps):
            final = step == steps - 1 or (
                self.draft.size >= self.plan.target and not self.fail_next
            )
            self._tick(1_500, 40_000)
            said = text.prose(int(rng.lognormvariate(6.0 if final else 4.5, 0.8)))
            if not final and rng.random() < 0.5:
                said = ""
            if final:
                self._model(said, [])
                break
            kinds = rng.choices(KINDS, WEIGHTS, k=rng.choice((1, 1, 2)))
            self._model(said, [plan_call(kind, text, self.project) for kind in kinds])

    def _model(self, said: str, calls: list[ToolCall]) -> None:
        rng = self.rng
        mid = uuid4(rng)
        turn: dict[str, Any] = {
            "id": mid, "timestamp": iso(self.now), "type": "gemini", "content": said,
            "thoughts": [], "tokens": {"input": rng.randint(2_000, 90_000), "output":
                                       rng.randint(20, 3_000), "cached": 0, "total": 0},
            "model": self.model,
        }  # fmt: skip
        first = self.draft.add(turn)
        self._updated()
        if not calls:
            if said:
                self.draft.carrier(first, "assistant", mid, _SAID)
            return
        records: list[dict[str, Any]] = []
        failed: list[bool] = []
        for call in calls:
            self._tick(60, 25_000)
            record, fails = self._call(call)
            records.append(record)
            failed.append(fails)
        line = self.draft.add({**turn, "toolCalls": records})
        if said:
            self.draft.carrier(line, "assistant", mid, _SAID, [(first, _SAID)])
        # the function responses again, as the user turn the CLI sends back (copies: a term
        # planted in one is put into the other as a mirror)
        responses = copy.deepcopy([r["result"][0] for r in records])
        echo = self.draft.add({"id": uuid4(rng), "timestamp": iso(self.now), "type": "user",
                               "content": responses})  # fmt: skip
        for i, record in enumerate(records):
            entry = f"{mid}/result:{record['id']}"
            if failed[i]:
                self.errors.append((line, entry, record["name"]))
            output = ("content", i, "functionResponse", "response", "output")
            shell = calls[i].kind == "bash"
            if not shell and "output" in record["result"][0]["functionResponse"]["response"]:
                self.draft.carrier(line, "toolResult", entry, _output(i), [(echo, output)])
        self._updated()

    def _call(self, call: ToolCall) -> tuple[dict[str, Any], bool]:
        rng, text = self.rng, self.text
        fail = self.fail_next or rng.random() < 0.07
        self.fail_next = False
        name, args = _shape(call)
        call_id = f"{name}__call_{text.alnum(24)}"
        result = run_call(call, text, fail=fail, big=0, now_ms=self.now)
        failed = result.is_error
        if call.kind == "bash":
            code = result.exit_code if result.is_error else 0
            tail = f"\nExit Code: {code}" if code else ""
            envelope = (
                f"<untrusted_context>\nOutput: {result.text or '(empty)'}{tail}\n"
                f"Process Group PGID: {rng.randint(1000, 99999)}\n</untrusted_context>"
            )
            response: dict[str, Any] = {"output": envelope}
            status = "success"
        elif failed:
            response, status = {"error": result.text}, "error"
        else:
            response, status = {"output": result.text}, "success"
        part = {"functionResponse": {"id": call_id, "name": name, "response": response}}
        return {
            "id": call_id, "name": name, "args": args, "result": [part], "status": status,
            "timestamp": iso(self.now), "displayName": name, "description": "",
            "renderOutputAsMarkdown": False,
        }, failed  # fmt: skip

    def _finish(self) -> BuiltSession:
        planted, _ = self._plant({c.line for c in self.draft.carriers})
        stamp = iso(self.plan.start_ms)[:16].replace(":", "-")
        rel = f"gemini/{self.project.name}/chats/session-{stamp}-{self.session_id[:8]}.jsonl"
        return self._built("gemini", rel, self.session_id, planted, self.errors)


def _shape(call: ToolCall) -> tuple[str, dict[str, Any]]:
    """Gemini CLI's tool name and arguments for an agent-neutral call."""
    if call.kind == "bash":
        return "run_shell_command", {"command": call.command, "description": ""}
    if call.kind == "read":
        return "read_file", {"file_path": call.path}
    if call.kind == "edit":
        return "replace", {"file_path": call.path, "old_string": call.old,
                           "new_string": call.new}  # fmt: skip
    if call.kind == "write":
        return "write_file", {"file_path": call.path, "content": call.content}
    if call.kind == "grep":
        return "grep_search", {"pattern": call.pattern, "dir_path": call.path}
    if call.kind == "find":
        return "glob", {"pattern": call.pattern, "dir_path": call.path}
    return "list_directory", {"dir_path": call.path}


def build_gemini(plan: SessionPlan, shared: Shared) -> BuiltSession:
    """One Gemini CLI session file."""
    return _Gemini(plan, shared).run()
