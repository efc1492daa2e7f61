"""Codex CLI rollouts (formats §3), era C envelopes as rust ≥0.88 writes them.

A rollout is linear. The user's prompt is written twice (``response_item`` message and
``event_msg/user_message``) and so is each assistant message (``event_msg/agent_message``, the
final one a third time in ``task_complete``): planted terms in those parts record the mirror
lines. Tool failures carry no flag, only a non-zero exit code in the output text. Terms are
planted only after the last ``compacted`` item, which readers may treat as replacing history.
"""

from __future__ import annotations

from typing import Any

import orjson

from devtools.corpus.builder import JsonlBuilder
from devtools.corpus.draft import FieldPath
from devtools.corpus.ids import iso, iso_seconds, uuid7
from devtools.corpus.plan import BuiltSession, SessionPlan, Shared
from devtools.corpus.tools import KINDS, WEIGHTS, ToolCall, plan_call, run_call

__all__ = ["build_codex"]

_VERSIONS = ("0.98.0", "0.104.0", "0.116.0", "0.121.0")
_MODELS = ("gpt-5.1-codex", "gpt-5.2-codex", "gpt-5.4")
_TEXT: FieldPath = ("payload", "content", 0, "text")
_PATCH_FAILED = "apply_patch verification failed: Failed to find expected lines in"
_SANDBOX = {
    "type": "workspace-write",
    "network_access": False,
    "exclude_tmpdir_env_var": False,
    "exclude_slash_tmp": False,
}


class _Codex(JsonlBuilder):
    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        super().__init__(plan, shared)
        self.thread_id = uuid7(self.rng, plan.start_ms)
        self.model = self.rng.choice(_MODELS)
        self.errors: list[tuple[int, str]] = []
        self.compacted_at = -1

    def _line(self, kind: str, payload: dict[str, Any]) -> int:
        return self.draft.add({"timestamp": iso(self.now), "type": kind, "payload": payload})

    def _event(self, payload: dict[str, Any]) -> int:
        return self._line("event_msg", payload)

    def _item(self, payload: dict[str, Any]) -> int:
        return self._line("response_item", payload)

    def _message(self, role: str, text: str, **extra: Any) -> int:
        kind = "output_text" if role == "assistant" else "input_text"
        return self._item(
            {"type": "message", "role": role, "content": [{"type": kind, "text": text}], **extra}
        )

    # -- session ------------------------------------------------------------------------------

    def run(self) -> BuiltSession:
        plan, rng, text, project = self.plan, self.rng, self.text, self.project
        self._line(
            "session_meta",
            {
                "id": self.thread_id,
                "timestamp": iso(self.now),
                "cwd": project.cwd,
                "originator": "codex_cli_rs",
                "cli_version": rng.choice(_VERSIONS),
                "source": "cli",
                "model_provider": "openai",
                "base_instructions": {"text": text.prose(rng.randint(2_000, 6_000), markdown=True)},
                "git": {
                    "commit_hash": text.hex(40),
                    "branch": rng.choice(project.branches),
                    "repository_url": f"git@github.com:{project.user}/{project.name}.git",
                },
            },
        )
        self._message(
            "developer",
            _wrap("permissions instructions", text.prose(rng.randint(300, 1200))),
        )
        if rng.random() < 0.7:
            agents_md = text.prose(rng.randint(400, 2500), markdown=True)
            self._message(
                "user",
                f"# AGENTS.md instructions for {project.cwd}\n\n{_wrap('INSTRUCTIONS', agents_md)}",
            )
        self._message(
            "user",
            _wrap("environment_context", f"  <cwd>{project.cwd}</cwd>\n  <shell>bash</shell>"),
        )
        turns = 0
        malformed, compacted = not plan.malformed, not plan.compaction
        while True:
            self._turn()
            turns += 1
            done = self.draft.size / plan.target
            if not malformed and done >= 0.3:
                self._tick(100, 5_000)
                self.draft.add_truncated(
                    {
                        "timestamp": iso(self.now),
                        "type": "response_item",
                        "payload": {
                            "type": "message",
                            "role": "assistant",
                            "content": [
                                {"type": "output_text", "text": text.prose(rng.randint(200, 1500))}
                            ],
                        },
                    },
                    rng,
                )
                malformed = True
                continue
            if not compacted and turns >= 2 and done >= 0.4:
                self._tick(2_000, 60_000)
                self.compacted_at = self._line(
                    "compacted", {"message": text.prose(rng.randint(600, 3000), markdown=True)}
                )
                self._event({"type": "context_compacted"})
                compacted = True
                continue
            if done >= 1 and malformed and compacted and not self.fail_next:
                break
        return self._finish()

    def _turn(self) -> None:
        rng, text = self.rng, self.text
        self._tick(15_000, 900_000)
        turn_id = uuid7(rng, self.now)
        self._event(
            {
                "type": "task_started",
                "turn_id": turn_id,
                "started_at": self.now // 1000,
                "model_context_window": 258_400,
                "collaboration_mode_kind": "default",
            }
        )
        self._line(
            "turn_context",
            {
                "turn_id": turn_id,
                "cwd": self.project.cwd,
                "current_date": iso(self.now)[:10],
                "timezone": "UTC",
                "approval_policy": "on-request",
                "sandbox_policy": _SANDBOX,
                "model": self.model,
                "effort": rng.choice(("low", "medium", "high")),
                "summary": "auto",
            },
        )
        prompt = text.prose(int(rng.lognormvariate(5.3, 0.9)))
        if rng.random() < 0.15:
            prompt += f"\n\n```\n{text.code(rng.randint(2, 20))}\n```"
        user_line = self._message("user", prompt)
        mirror = self._event(
            {
                "type": "user_message",
                "message": prompt,
                "images": [],
                "local_images": [],
                "text_elements": [],
            }
        )
        self.draft.carrier(
            user_line, "user", str(user_line + 1), _TEXT, [(mirror, ("payload", "message"))]
        )
        started = self.now
        steps = rng.choice((1, 2, 2, 3, 3, 4, 5, 6))
        if self.fail_next:
            steps = max(steps, 2)  # a forced failure needs a tool call
        aborted = rng.random() < 0.04 and not self.fail_next
        last_text: tuple[int, int] | None = None
        for step in range(steps):
            final = step == steps - 1 or (
                self.draft.size >= self.plan.target and not self.fail_next
            )
            self._tick(1_500, 40_000)
            self._reasoning()
            if final and aborted:
                break
            said = final or rng.random() < 0.5
            if said:
                last_text = self._say(final=final)
            if not final:
                for kind in rng.choices(KINDS, WEIGHTS, k=rng.choice((1, 1, 1, 2, 3))):
                    self._tool(plan_call(kind, text, self.project))
            self._token_count()
            if final:
                break
        self._tick(10, 500)
        if aborted:
            self._event({"type": "turn_aborted", "turn_id": turn_id, "reason": "interrupted"})
            return
        assert last_text is not None
        line, mirror = last_text
        message = self.draft.text_at(line, _TEXT)
        done = self._event(
            {
                "type": "task_complete",
                "turn_id": turn_id,
                "last_agent_message": message,
                "completed_at": self.now // 1000,
                "duration_ms": self.now - started,
            }
        )
        # The final answer is written three times.
        mirrors = [(mirror, ("payload", "message")), (done, ("payload", "last_agent_message"))]
        self.draft.carrier(line, "assistant", str(line + 1), _TEXT, mirrors)

    def _reasoning(self) -> None:
        rng, text = self.rng, self.text
        summary = [] if rng.random() < 0.5 else [{"type": "summary_text", "text": text.sentence()}]
        self._item(
            {
                "type": "reasoning",
                "summary": summary,
                "content": None,
                "encrypted_content": text.opaque(
                    min(9_000, max(300, int(rng.lognormvariate(7.0, 0.6))))
                ),
            }
        )
        if summary:
            self._event({"type": "agent_reasoning", "text": summary[0]["text"]})

    def _say(self, *, final: bool) -> tuple[int, int]:
        rng = self.rng
        said = self.text.prose(int(rng.lognormvariate(6.5 if final else 5.0, 0.8)), markdown=final)
        phase = "final_answer" if final else "commentary"
        line = self._message("assistant", said, phase=phase)
        mirror = self._event({"type": "agent_message", "message": said, "phase": phase})
        if not final:
            self.draft.carrier(
                line, "assistant", str(line + 1), _TEXT, [(mirror, ("payload", "message"))]
            )
        return line, mirror

    def _token_count(self) -> None:
        rng = self.rng
        last = {
            "input_tokens": rng.randint(2_000, 120_000),
            "cached_input_tokens": rng.randint(0, 100_000),
            "output_tokens": rng.randint(20, 4_000),
            "reasoning_output_tokens": rng.randint(0, 2_000),
        }
        last["total_tokens"] = last["input_tokens"] + last["output_tokens"]
        info = {
            "total_token_usage": last,
            "last_token_usage": last,
            "model_context_window": 258_400,
        }
        self._event({"type": "token_count", "info": info, "rate_limits": None})

    def _tool(self, call: ToolCall) -> None:
        rng, text = self.rng, self.text
        call_id = "call_" + text.alnum(24)
        fail = self.fail_next or rng.random() < 0.07
        self.fail_next = False
        if call.kind in ("edit", "write"):
            verb = "Update" if call.kind == "edit" else "Add"
            body = "\n".join(
                [f"-{x}" for x in call.old.split("\n") if call.old]
                + [f"+{x}" for x in (call.new or call.content).split("\n")]
            )
            patch = f"*** Begin Patch\n*** {verb} File: {call.path}\n@@\n{body}\n*** End Patch\n"
            self._item(
                {
                    "type": "custom_tool_call",
                    "status": "completed",
                    "call_id": call_id,
                    "name": "apply_patch",
                    "input": patch,
                }
            )
            self._tick(60, 3_000)
            if fail:
                out = {
                    "output": f"{_PATCH_FAILED} {call.path}:\n{call.old}",
                    "metadata": {"exit_code": 1, "duration_seconds": 0.0},
                }
            else:
                out = {
                    "output": f"Success. Updated the following files:\nM {call.path}\n",
                    "metadata": {"exit_code": 0, "duration_seconds": round(rng.random() / 10, 3)},
                }
            line = self._item(
                {
                    "type": "custom_tool_call_output",
                    "call_id": call_id,
                    "output": orjson.dumps(out).decode(),
                }
            )
            if fail:
                self.errors.append((line, "apply_patch"))
            return
        command = _command(call)
        args = {"cmd": command, "workdir": self.project.cwd, "yield_time_ms": 10_000}
        self._item(
            {
                "type": "function_call",
                "name": "exec_command",
                "arguments": orjson.dumps(args).decode(),
                "call_id": call_id,
            }
        )
        self._tick(60, 25_000)
        big = 0
        remaining = self.plan.target - self.draft.size
        if call.kind in ("read", "bash") and remaining >= 80_000 and rng.random() < 0.15:
            big = rng.randint(50_000, min(500_000, remaining * 4 // 5))
        result = run_call(call, text, fail=fail, big=big, now_ms=self.now)
        code = result.exit_code if result.is_error else 0
        envelope = (
            f"Chunk ID: {text.hex(6)}\nWall time: {rng.random() * 3:.4f} seconds\n"
            f"Process exited with code {code}\nOriginal token count: {len(result.text) // 4}\n"
            "Output:\n"
        )
        output = envelope + result.text
        line = self._item({"type": "function_call_output", "call_id": call_id, "output": output})
        self.draft.carrier(
            line, "toolResult", str(line + 1), ("payload", "output"), start=len(envelope)
        )
        if result.is_error:
            self.errors.append((line, "exec_command"))

    # -- output ---------------------------------------------------------------------------------

    def _finish(self) -> BuiltSession:
        tid = self.thread_id
        plantable = {c.line for c in self.draft.carriers if c.line > self.compacted_at}
        planted, _ = self._plant(plantable)
        stamp = iso_seconds(self.plan.start_ms)
        rel = f"codex/{stamp[:4]}/{stamp[5:7]}/{stamp[8:10]}/rollout-{stamp}-{tid}.jsonl"
        errors = [(line, str(line + 1), tool) for line, tool in self.errors]
        return self._built("codex", rel, tid, planted, errors)


def _wrap(tag: str, body: str) -> str:
    return f"<{tag}>\n{body}\n</{tag}>"


def _command(call: ToolCall) -> str:
    if call.kind == "read":
        return f"sed -n '1,200p' {call.path}"
    if call.kind == "grep":
        return f"rg -n {call.pattern} {call.path}"
    if call.kind == "find":
        return f"rg --files {call.path} -g '{call.pattern}'"
    if call.kind == "ls":
        return f"ls -la {call.path}"
    return call.command


def build_codex(plan: SessionPlan, shared: Shared) -> BuiltSession:
    """One Codex rollout file."""
    return _Codex(plan, shared).run()
