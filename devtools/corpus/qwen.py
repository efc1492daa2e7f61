"""Qwen Code sessions (as 0.24.4 writes them; see docs/writers.md).

Every line a ``ChatRecord`` threaded by ``uuid`` / ``parentUuid``: the prompt (``user``), each
model response (``assistant``, Gemini content parts: text, ``functionCall``), a ``system``
``ui_telemetry`` record per request and per tool call on the chain between them, and one
``tool_result`` per call with ``toolCallResult`` (``status``, and a shell call's typed
``resultDisplay.exitCode``). A failed call is ``status: "error"`` with ``response.error``.
Shell results are never planted in (their text repeats the command's envelope).
"""

from __future__ import annotations

from typing import Any

from devtools.corpus.builder import JsonlBuilder
from devtools.corpus.draft import FieldPath
from devtools.corpus.ids import iso, uuid4
from devtools.corpus.plan import BuiltSession, SessionPlan, Shared
from devtools.corpus.tools import KINDS, WEIGHTS, ToolCall, plan_call, run_call

__all__ = ["build_qwen"]

_VERSIONS = ("0.18.2", "0.21.0", "0.24.4")
_MODELS = ("qwen3-coder-plus", "qwen3.5-plus", "qwen3-coder-flash")
_TEXT: FieldPath = ("message", "parts", 0, "text")
_OUTPUT: FieldPath = ("message", "parts", 0, "functionResponse", "response", "output")


class _Qwen(JsonlBuilder):
    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        super().__init__(plan, shared)
        self.session_id = uuid4(self.rng)
        self.version = self.rng.choice(_VERSIONS)
        self.model = self.rng.choice(_MODELS)
        self.last: str | None = None
        self.errors: list[tuple[int, str, str]] = []

    def _record(self, kind: str, **fields: Any) -> tuple[int, str]:
        uuid = uuid4(self.rng)
        line = self.draft.add(
            {
                "uuid": uuid, "parentUuid": self.last, "sessionId": self.session_id,
                "timestamp": iso(self.now), "type": kind, "cwd": self.project.cwd,
                "version": self.version, **fields,
            }
        )  # fmt: skip
        self.last = uuid
        return line, uuid

    def _telemetry(self, event: str, **fields: Any) -> None:
        event_fields = {"event.name": f"qwen-code.{event}", "event.timestamp": iso(self.now)}
        payload = {"uiEvent": {**event_fields, **fields}}
        self._record("system", subtype="ui_telemetry", systemPayload=payload)

    def run(self) -> BuiltSession:
        rng, text = self.rng, self.text
        malformed = not self.plan.malformed
        while True:
            self._turn()
            done = self.draft.size / self.plan.target
            if not malformed and done >= 0.3:
                self._tick(100, 5_000)
                said = {"role": "model", "parts": [{"text": text.prose(rng.randint(200, 1500))}]}
                self.draft.add_truncated(
                    {"uuid": uuid4(rng), "parentUuid": self.last, "type": "assistant",
                     "message": said}, rng,
                )  # fmt: skip
                malformed = True
                continue
            if done >= 1 and malformed and not self.fail_next:
                break
        return self._finish()

    def _turn(self) -> None:
        rng, text = self.rng, self.text
        self._tick(15_000, 900_000)
        prompt = text.prose(int(rng.lognormvariate(5.3, 0.9)))
        message = {"role": "user", "parts": [{"text": prompt}]}
        line, uuid = self._record("user", provenance="real_user", message=message)
        self.draft.carrier(line, "user", uuid, _TEXT)
        steps = rng.choice((1, 2, 2, 3, 4))
        if self.fail_next:
            steps = max(steps, 2)
        for step in range(steps):
            final = step == steps - 1 or (
                self.draft.size >= self.plan.target and not self.fail_next
            )
            self._tick(1_500, 40_000)
            self._telemetry("api_response", model=self.model, status_code=200,
                            duration_ms=rng.randint(300, 9_000))  # fmt: skip
            said = text.prose(int(rng.lognormvariate(6.0 if final else 4.5, 0.8)))
            if final:
                line, uuid = self._assistant([{"text": said}])
                self.draft.carrier(line, "assistant", uuid, _TEXT)
                break
            calls = [
                plan_call(kind, text, self.project)
                for kind in rng.choices(KINDS, WEIGHTS, k=rng.choice((1, 1, 2)))
            ]
            shaped = [(f"call_{text.alnum(24)}", *_shape(c)) for c in calls]
            parts: list[dict[str, Any]] = []
            if rng.random() < 0.5:
                parts.append({"text": said})
            parts += [{"functionCall": {"id": i, "name": n, "args": a}} for i, n, a in shaped]
            line, uuid = self._assistant(parts)
            if parts[0].get("text"):
                self.draft.carrier(line, "assistant", uuid, _TEXT)
            for call, (call_id, name, args) in zip(calls, shaped, strict=True):
                self._result(call, call_id, name, args)

    def _assistant(self, parts: list[dict[str, Any]]) -> tuple[int, str]:
        return self._record("assistant", provenance="assistant_output", model=self.model,
                            message={"role": "model", "parts": parts})  # fmt: skip

    def _result(self, call: ToolCall, call_id: str, name: str, args: dict[str, Any]) -> None:
        rng, text = self.rng, self.text
        self._tick(60, 25_000)
        fail = self.fail_next or rng.random() < 0.07
        self.fail_next = False
        result = run_call(call, text, fail=fail, big=0, now_ms=self.now)
        status = "error" if result.is_error else "success"
        self._telemetry("tool_call", call_id=call_id, function_name=name, function_args=args,
                        status=status, success=not result.is_error)  # fmt: skip
        display: Any = result.text
        body = result.text
        if call.kind == "bash":
            code = result.exit_code if result.is_error else 0
            body = (
                f"Command: {call.command}\nDirectory: (root)\nOutput: {result.text or '(empty)'}"
                f"\nError: (none)\nExit Code: {code}\nSignal: (none)\nProcess Group PGID: (none)"
            )
            display = {"type": "shell_result", "version": 1, "directory": self.project.cwd,
                       "exitCode": code, "signal": None, "pid": None,
                       "outcome": "failed" if code else "completed", "output": result.text,
                       "text": body, "error": None, "truncated": False}  # fmt: skip
        response = {"error": body} if result.is_error else {"output": body}
        outcome: dict[str, Any] = {"callId": call_id, "status": status, "resultDisplay": display}
        if result.is_error:
            outcome["error"] = {}
            outcome["errorType"] = "shell_execute_error" if call.kind == "bash" else "execution"
        part = {"functionResponse": {"id": call_id, "name": name, "response": response}}
        line, uuid = self._record("tool_result", provenance="tool_result",
                                  message={"role": "user", "parts": [part]},
                                  toolCallResult=outcome)  # fmt: skip
        if result.is_error:
            self.errors.append((line, uuid, name))
        elif call.kind != "bash":
            self.draft.carrier(line, "toolResult", uuid, _OUTPUT)

    def _finish(self) -> BuiltSession:
        planted, _ = self._plant({c.line for c in self.draft.carriers})
        folder = "".join(c if c.isalnum() and c.isascii() else "-" for c in self.project.cwd)
        rel = f"qwen/{folder}/chats/{self.session_id}.jsonl"
        return self._built("qwen", rel, self.session_id, planted, self.errors)


def _shape(call: ToolCall) -> tuple[str, dict[str, Any]]:
    """Qwen Code's tool name and arguments for an agent-neutral call."""
    if call.kind == "bash":
        return "run_shell_command", {"command": call.command, "is_background": False}
    if call.kind == "read":
        return "read_file", {"file_path": call.path}
    if call.kind == "edit":
        return "edit", {"file_path": call.path, "old_string": call.old, "new_string": call.new}
    if call.kind == "write":
        return "write_file", {"file_path": call.path, "content": call.content}
    if call.kind == "grep":
        return "grep_search", {"pattern": call.pattern, "path": call.path}
    if call.kind == "find":
        return "glob", {"pattern": call.pattern, "path": call.path}
    return "list_directory", {"path": call.path}


def build_qwen(plan: SessionPlan, shared: Shared) -> BuiltSession:
    """One Qwen Code session file."""
    return _Qwen(plan, shared).run()
