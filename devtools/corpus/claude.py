"""Claude Code transcripts (formats §2), shaped like CLI 2.1.x writes them.

One line per content block (thinking, text and each ``tool_use`` of one API response share
``message.id`` and ``requestId``), each line's ``parentUuid`` the previous line of the thread.
Hook ``progress`` lines hang off the same parent as the tool result (side branches, never
leaves). A ``/rewind`` hangs a new prompt off the end of an earlier turn, leaving the rest of
the old thread in the file. ``Task`` calls write a subagent transcript to
``<session>/subagents/agent-<id>.jsonl`` whose ``sessionId`` is the parent's.
"""

from __future__ import annotations

import random
from typing import Any

from devtools.corpus.claude_tools import claude_args, claude_result
from devtools.corpus.draft import Draft, FieldPath, plant_terms
from devtools.corpus.ids import iso, uuid4
from devtools.corpus.manifest import ToolError
from devtools.corpus.plan import BuiltFile, BuiltSession, SessionPlan, Shared, planted_terms
from devtools.corpus.project import Project
from devtools.corpus.tools import KINDS, WEIGHTS, ToolCall, plan_call, run_call
from devtools.corpus.words import Text

__all__ = ["build_claude", "project_slug"]

_VERSIONS = ("2.1.77", "2.1.92", "2.1.118", "2.1.145")
_MODELS = ("claude-opus-4-6", "claude-sonnet-4-6", "claude-opus-4-5")
_COMPACT_PREFIX = (
    "This session is being continued from a previous conversation that ran out of context. "
    "The conversation is summarized below:\n"
)


def project_slug(cwd: str) -> str:
    """``/home/a/my.app`` → ``-home-a-my-app``: every non-alphanumeric character becomes ``-``."""
    return "".join(ch if ch.isascii() and ch.isalnum() else "-" for ch in cwd)


class _Thread:
    """The lines of one transcript file (the main one, or a subagent's)."""

    def __init__(self, owner: _Claude, agent_id: str | None) -> None:
        self.owner = owner
        self.agent_id = agent_id
        self.draft = Draft()
        self.leaf: str | None = None
        self.parent: dict[str, str | None] = {}
        self.line_of: dict[str, int] = {}

    def line(
        self,
        head: dict[str, Any],
        tail: dict[str, Any] | None = None,
        *,
        parent: str | None = None,
        use_leaf: bool = True,
        advance: bool = True,
        logical_parent: str | None = None,
        uid: str | None = None,
    ) -> tuple[str, int]:
        o = self.owner
        uid = uid or uuid4(o.rng)
        parent_uuid = self.leaf if use_leaf else parent
        obj: dict[str, Any] = {"parentUuid": parent_uuid}
        if logical_parent is not None:
            obj["logicalParentUuid"] = logical_parent
        obj["isSidechain"] = self.agent_id is not None
        obj.update(head)
        obj["uuid"] = uid
        obj["timestamp"] = iso(o.now)
        if tail:
            obj.update(tail)
        obj.update(o.envelope)
        if self.agent_id is not None:
            obj["agentId"] = self.agent_id
        if o.slug is not None:
            obj["slug"] = o.slug
        idx = self.draft.add(obj)
        self.parent[uid] = logical_parent if parent_uuid is None and logical_parent else parent_uuid
        self.line_of[uid] = idx
        if advance:
            self.leaf = uid
        return uid, idx

    def path_lines(self) -> set[int]:
        out: set[int] = set()
        node = self.leaf
        while node is not None:
            out.add(self.line_of[node])
            node = self.parent[node]
        return out


class _Claude:
    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        self.plan = plan
        self.shared = shared
        self.rng = rng = random.Random(plan.seed)
        self.text = Text(shared.lexicon, rng)
        self.project: Project = plan.project
        self.now = plan.start_ms
        self.session_id = uuid4(rng)
        self.model = rng.choice(_MODELS)
        self.envelope = {
            "userType": "external",
            "cwd": self.project.cwd,
            "sessionId": self.session_id,
            "version": rng.choice(_VERSIONS),
            "gitBranch": rng.choice(self.project.branches),
        }
        self.slug: str | None = None
        self.main = _Thread(self, None)
        self.subagents: list[tuple[str, _Thread, int]] = []
        self.errors: list[tuple[int, str, str]] = []
        self.fail_next = plan.force_failure
        self.task_next = plan.subagent
        self.turn_ends: list[str] = []
        self.rewound: set[int] = set()

    def _tick(self, lo: int, hi: int) -> None:
        self.now += self.rng.randint(lo, hi)

    # -- session ------------------------------------------------------------------------------

    def run(self) -> BuiltSession:
        plan, rng, t = self.plan, self.rng, self.main
        if rng.random() < 0.4:
            t.line(
                {
                    "type": "progress",
                    "data": {
                        "type": "hook_progress",
                        "hookEvent": "SessionStart",
                        "hookName": "SessionStart:startup",
                        "command": "~/.claude/hooks/session-start.sh",
                    },
                },
                {"parentToolUseID": uuid4(rng), "toolUseID": uuid4(rng)},
            )
        turns = since = 0
        rewound, malformed, compacted = not plan.branch, not plan.malformed, not plan.compaction
        while True:
            self._turn(t)
            turns += 1
            since += 1
            if turns == 1:
                self.slug = "-".join(self.text.plain_word() for _ in range(3))
                if rng.random() < 0.4:
                    t.draft.add(
                        {
                            "type": "ai-title",
                            "sessionId": self.session_id,
                            "aiTitle": self.text.short(3, 7).capitalize(),
                        }
                    )
            done = t.draft.size / plan.target
            if not malformed and done >= 0.3:
                self._malformed(t)
                malformed = True
            if not compacted and turns >= 2 and done >= 0.4:
                self._compact(t)
                compacted = True
            if not rewound and turns >= 2 and done >= 0.5:
                self._rewind(t)
                rewound, since = True, 0
            last_is_bad = (
                bool(t.draft.malformed) and t.draft.malformed[-1] == len(t.draft.lines) - 1
            )
            if (
                done >= 1
                and rewound
                and compacted
                and since
                and not last_is_bad
                and not self.fail_next
            ):
                break
        return self._finish()

    def _turn(self, t: _Thread, *, prompt: str | None = None, steps: int | None = None) -> str:
        rng, text = self.rng, self.text
        self._tick(15_000, 900_000)
        if prompt is None:
            prompt = text.prose(int(rng.lognormvariate(5.3, 0.9)))
            if rng.random() < 0.15:
                prompt += f"\n\n```\n{text.code(rng.randint(2, 20))}\n```"
        content: Any
        path: FieldPath
        if rng.random() < 0.7 or t.agent_id is not None:
            content, path = prompt, ("message", "content")
        else:
            content, path = [{"type": "text", "text": prompt}], ("message", "content", 0, "text")
        head: dict[str, Any] = {"type": "user", "message": {"role": "user", "content": content}}
        uid = uuid4(rng)
        if t.agent_id is None:
            head = {"promptId": uuid4(rng), **head}
            snapshot: dict[str, Any] = {
                "messageId": uid,
                "trackedFileBackups": {},
                "timestamp": iso(self.now),
            }
            if rng.random() < 0.5:
                f = rng.choice(self.project.files)
                backup = {
                    "backupFileName": f"{text.hex(16)}@v1",
                    "version": 1,
                    "backupTime": iso(self.now),
                }
                snapshot["trackedFileBackups"] = {f: backup}
            t.draft.add(
                {
                    "type": "file-history-snapshot",
                    "messageId": uid,
                    "snapshot": snapshot,
                    "isSnapshotUpdate": False,
                }
            )
            _, idx = t.line(head, {"permissionMode": "default"}, uid=uid)
            t.draft.carrier(idx, "user", uid, path)
        else:
            t.line(head, uid=uid)
        steps = steps or rng.choice((1, 2, 2, 3, 3, 4, 5, 6))
        failing = self.fail_next and t.agent_id is None
        if failing:
            steps = max(steps, 2)  # a forced failure needs a tool call
        final_text = ""
        for step in range(steps):
            final = step == steps - 1 or (t.draft.size >= self.plan.target and not failing)
            final_text = self._response(t, final=final)
            if final:
                break
        if t.agent_id is None:
            if rng.random() < 0.3:
                self._tick(50, 2000)
                t.line(
                    {
                        "type": "system",
                        "subtype": "stop_hook_summary",
                        "hookCount": 1,
                        "hookInfos": [{"command": "~/.claude/hooks/stop.sh"}],
                        "hookErrors": [],
                        "preventedContinuation": False,
                        "stopReason": "",
                        "hasOutput": False,
                        "level": "suggestion",
                    },
                    {"toolUseID": uuid4(rng)},
                )
            if rng.random() < 0.6:
                t.line(
                    {
                        "type": "system",
                        "subtype": "turn_duration",
                        "durationMs": rng.randint(2_000, 600_000),
                    },
                    {"isMeta": False},
                )
            assert t.leaf is not None
            self.turn_ends.append(t.leaf)
        return final_text

    def _usage(self) -> dict[str, Any]:
        rng = self.rng
        create = rng.randint(0, 9000)
        return {
            "input_tokens": rng.randint(1, 40),
            "cache_creation_input_tokens": create,
            "cache_read_input_tokens": rng.randint(0, 150_000),
            "cache_creation": {"ephemeral_5m_input_tokens": 0, "ephemeral_1h_input_tokens": create},
            "output_tokens": rng.randint(10, 3000),
            "service_tier": "standard",
            "inference_geo": "not_available",
        }

    def _response(self, t: _Thread, *, final: bool) -> str:
        """One API response: a line per block, then a result line per tool call."""
        rng, text = self.rng, self.text
        self._tick(1_500, 40_000)
        blocks: list[dict[str, Any]] = []
        if rng.random() < 0.6:
            thought = "" if rng.random() < 0.5 else text.prose(int(rng.lognormvariate(5.5, 0.8)))
            blocks.append(
                {
                    "type": "thinking",
                    "thinking": thought,
                    "signature": text.opaque(
                        min(8000, max(200, int(rng.lognormvariate(6.8, 0.6))))
                    ),
                }
            )
        said = ""
        if final or rng.random() < 0.6:
            said = text.prose(int(rng.lognormvariate(6.5 if final else 5.0, 0.8)), markdown=final)
            blocks.append({"type": "text", "text": said})
        calls: list[tuple[str, str, ToolCall | None, dict[str, Any]]] = []
        if not final:
            kinds = rng.choices(KINDS, WEIGHTS, k=rng.choice((1, 1, 1, 2, 3)))
            if self.task_next and t.agent_id is None:
                self.task_next = False
                kinds[0] = "task"
            for kind in kinds:
                tool_id = "toolu_01" + text.alnum(22)
                if kind == "task":
                    args = {
                        "description": text.short(2, 5).capitalize(),
                        "prompt": text.prose(rng.randint(200, 900)),
                        "subagent_type": rng.choice(("general-purpose", "Explore")),
                    }
                    calls.append((tool_id, "Task", None, args))
                else:
                    call = plan_call(kind, text, self.project)
                    name, args = claude_args(call, text)
                    calls.append((tool_id, name, call, args))
                blocks.append(
                    {
                        "type": "tool_use",
                        "id": tool_id,
                        "name": calls[-1][1],
                        "input": args,
                        "caller": {"type": "direct"},
                    }
                )
        msg_id, request_id, usage = (
            "msg_01" + text.alnum(22),
            "req_011C" + text.alnum(20),
            self._usage(),
        )
        tool_lines: dict[str, str] = {}
        for n, block in enumerate(blocks):
            last = n == len(blocks) - 1
            stop = ("tool_use" if calls else "end_turn") if last else None
            message = {
                "model": self.model,
                "id": msg_id,
                "type": "message",
                "role": "assistant",
                "content": [block],
                "stop_reason": stop,
                "stop_sequence": None,
                "stop_details": None,
                "usage": usage,
            }
            uid, idx = t.line({"message": message, "requestId": request_id, "type": "assistant"})
            if block["type"] == "text" and t.agent_id is None:
                t.draft.carrier(idx, "assistant", uid, ("message", "content", 0, "text"))
            if block["type"] == "tool_use":
                tool_lines[block["id"]] = uid
            self._tick(100, 3_000)
        for tool_id, name, planned, args in calls:
            if t.agent_id is None and rng.random() < 0.15:
                t.line(
                    {
                        "type": "progress",
                        "data": {
                            "type": "hook_progress",
                            "hookEvent": "PostToolUse",
                            "hookName": f"PostToolUse:{name}",
                            "command": "~/.claude/hooks/post-tool.sh",
                        },
                    },
                    {"parentToolUseID": tool_id, "toolUseID": tool_id},
                    advance=False,
                )
            self._result(t, tool_id, name, planned, args, tool_lines[tool_id])
        return said

    def _result(
        self,
        t: _Thread,
        tool_id: str,
        name: str,
        call: ToolCall | None,
        args: dict[str, Any],
        source: str,
    ) -> None:
        rng, text = self.rng, self.text
        self._tick(60, 20_000)
        mirrors: list[FieldPath] = []
        if call is None:
            body, is_error, extra = self._task(args)
        else:
            fail = rng.random() < 0.07
            if self.fail_next and t.agent_id is None:
                fail, self.fail_next = True, False
            big = 0
            remaining = self.plan.target - t.draft.size
            if call.kind in ("read", "bash") and remaining >= 80_000 and rng.random() < 0.15:
                big = rng.randint(50_000, min(500_000, remaining * 4 // 5))
            out = run_call(call, text, fail=fail, big=big, now_ms=self.now)
            body, is_error, extra, mirror = claude_result(
                call, out.text, out.is_error, out.exit_code, text
            )
            if mirror is not None:
                mirrors.append(mirror)
        block: dict[str, Any] = {"tool_use_id": tool_id, "type": "tool_result", "content": body}
        if is_error or rng.random() < 0.5:
            block["is_error"] = is_error
        head = {"type": "user", "message": {"role": "user", "content": [block]}}
        tail: dict[str, Any] = {}
        if extra is not None:
            tail["toolUseResult"] = extra
        tail["sourceToolAssistantUUID"] = source
        uid, idx = t.line(head, tail)
        if t.agent_id is None:
            if call is not None:
                t.draft.carrier(
                    idx,
                    "toolResult",
                    uid,
                    ("message", "content", 0, "content"),
                    [(idx, m) for m in mirrors],
                )
            if is_error:
                self.errors.append((idx, uid, name))

    def _task(self, args: dict[str, Any]) -> tuple[Any, bool, Any]:
        """Run a subagent in its own transcript; the parent sees its final report."""
        rng = self.rng
        agent_id = "a" + self.text.hex(16)
        sub = _Thread(self, agent_id)
        started = self.now
        report = self._turn(sub, prompt=args["prompt"], steps=rng.randint(2, 4))
        self.subagents.append((agent_id, sub, self.now))
        content = [{"type": "text", "text": report}]
        result = {
            "status": "completed",
            "prompt": args["prompt"],
            "agentId": agent_id,
            "content": content,
            "totalDurationMs": self.now - started,
            "totalTokens": rng.randint(2_000, 90_000),
            "totalToolUseCount": rng.randint(1, 12),
            "usage": self._usage(),
        }
        return content, False, result

    def _compact(self, t: _Thread) -> None:
        self._tick(2_000, 60_000)
        before = t.leaf
        uid, _ = t.line(
            {
                "type": "system",
                "subtype": "compact_boundary",
                "content": "Conversation compacted",
                "isMeta": False,
            },
            {
                "level": "info",
                "compactMetadata": {
                    "trigger": self.rng.choice(("auto", "manual")),
                    "preTokens": self.rng.randint(90_000, 190_000),
                },
            },
            use_leaf=False,
            logical_parent=before,
        )
        summary = _COMPACT_PREFIX + self.text.prose(self.rng.randint(800, 4000), markdown=True)
        t.line(
            {"type": "user", "message": {"role": "user", "content": summary}},
            {"isVisibleInTranscriptOnly": True, "isCompactSummary": True},
        )

    def _rewind(self, t: _Thread) -> None:
        """``/rewind`` to an earlier prompt: the next prompt hangs off the turn before it."""
        ends = self.turn_ends[:-1]
        if not ends:
            return
        before = set(t.path_lines())
        t.leaf = self.rng.choice(ends)
        self.rewound |= before - t.path_lines()

    def _malformed(self, t: _Thread) -> None:
        self._tick(100, 5_000)
        message = {
            "model": self.model,
            "id": "msg_01" + self.text.alnum(22),
            "type": "message",
            "role": "assistant",
            "content": [{"type": "text", "text": self.text.prose(self.rng.randint(200, 1500))}],
            "stop_reason": "end_turn",
            "stop_sequence": None,
            "usage": self._usage(),
        }
        obj = {
            "parentUuid": t.leaf,
            "isSidechain": False,
            "message": message,
            "type": "assistant",
            "uuid": uuid4(self.rng),
            "timestamp": iso(self.now),
            **self.envelope,
        }
        t.draft.add_truncated(obj, self.rng)

    # -- output ---------------------------------------------------------------------------------

    def _finish(self) -> BuiltSession:
        t, sid = self.main, self.session_id
        slug = project_slug(self.project.cwd)
        rel = f"claude/{slug}/{sid}.jsonl"
        active = t.path_lines()
        abandoned = {i for i in self.rewound if i not in active}
        planted, stray = plant_terms(
            t.draft,
            self.rng,
            self.shared.terms,
            plantable=active,
            abandoned=abandoned,
            force_user=self.plan.force_user,
        )
        files = [
            BuiltFile(
                rel=rel,
                data=t.draft.data(),
                end_ms=self.now,
                session_id=sid,
                cwd=self.project.cwd,
                lines=len(t.draft.lines),
                malformed_lines=tuple(i + 1 for i in t.draft.malformed),
                branched=bool(abandoned),
            )
        ]
        for agent_id, sub, end in self.subagents:
            files.append(
                BuiltFile(
                    rel=f"claude/{slug}/{sid}/subagents/agent-{agent_id}.jsonl",
                    data=sub.draft.data(),
                    end_ms=end,
                    session_id=sid,
                    cwd=self.project.cwd,
                    lines=len(sub.draft.lines),
                    parent=rel,
                )
            )
        built = BuiltSession(
            files=files,
            planted=planted_terms(planted, "claude", rel, sid),
            off_branch=planted_terms(stray, "claude", rel, sid),
        )
        built.tool_errors = [
            ToolError("claude", rel, sid, uid, idx + 1, name) for idx, uid, name in self.errors
        ]
        return built


def build_claude(plan: SessionPlan, shared: Shared) -> BuiltSession:
    """One Claude Code session: its transcript plus any subagent transcripts."""
    return _Claude(plan, shared).run()
