"""Pi v3 session files (formats §1), written the way ``SessionManager`` appends them.

Every append is a child of the current leaf. ``/tree`` navigation moves the leaf back (to a
user message's parent, to an earlier entry, or to the root) and, when summarized, appends a
``branch_summary``; the entries after the navigation point stay in the file as an abandoned
branch. A malformed line is a would-be entry cut short: Pi skips it on reload, so nothing
ever names it as a parent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import orjson

from devtools.corpus.builder import JsonlBuilder
from devtools.corpus.draft import FieldPath
from devtools.corpus.fabric import AbandonedEntry, Trace, branch_details, fabric_code, make_trace
from devtools.corpus.ids import iso, uuid4, uuid7
from devtools.corpus.manifest import BranchSummary, FabricTrace
from devtools.corpus.pi_shapes import (
    LEVELS,
    MODELS,
    bash_execution,
    call_id,
    custom_message,
    encode_cwd,
    pi_args,
    signature,
    usage,
    zero_usage,
)
from devtools.corpus.plan import BuiltSession, SessionPlan, Shared
from devtools.corpus.tools import KINDS, WEIGHTS, ToolCall, plan_call, run_call

__all__ = ["build_pi", "encode_cwd"]


@dataclass(frozen=True, slots=True)
class _Pending:
    """A tool call waiting for its result."""

    assistant_id: str
    call_id: str
    kind: str
    args: dict[str, Any]
    call: ToolCall | None
    trace: Trace | None


class _Pi(JsonlBuilder):
    def __init__(self, plan: SessionPlan, shared: Shared) -> None:
        super().__init__(plan, shared)
        rng = self.rng
        self.parent: dict[str, str | None] = {}
        self.line_of: dict[str, int] = {}
        self.kind: dict[str, str] = {}
        self.about: dict[str, list[AbandonedEntry]] = {}
        self.leaf: str | None = None
        self.model = rng.choice(MODELS)
        self.thinking = rng.choice(LEVELS)
        self.session_id = uuid7(rng, plan.start_ms) if rng.random() < 0.7 else uuid4(rng)
        self.calls = 0
        self.tool_errors: list[tuple[int, str, str]] = []
        self.traces: list[tuple[int, str, Trace, str | None]] = []
        self.summaries: list[tuple[int, str, str, int, str]] = []
        self.defect = plan.trace_defect
        self.fabric_next = plan.fabric
        self.header_time: int | None = None

    # -- plumbing ----------------------------------------------------------------------------

    def _new_id(self) -> str:
        while (eid := f"{self.rng.getrandbits(32):08x}") in self.parent:
            pass
        self.parent[eid] = None
        return eid

    def _entry(
        self, type_: str, fields: dict[str, Any], *, base_first: bool = True
    ) -> tuple[str, int]:
        eid = self._new_id()
        base = {"id": eid, "parentId": self.leaf, "timestamp": iso(self.now)}
        obj = {"type": type_, **base, **fields} if base_first else {"type": type_, **fields, **base}
        idx = self.draft.add(obj)
        self.parent[eid] = self.leaf
        self.line_of[eid] = idx
        message = fields.get("message")
        self.kind[eid] = message["role"] if isinstance(message, dict) else type_
        self.leaf = eid
        return eid, idx

    def _path(self) -> list[str]:
        out: list[str] = []
        node = self.leaf
        while node is not None:
            out.append(node)
            node = self.parent[node]
        out.reverse()
        return out

    def _remaining(self) -> int:
        return self.plan.target - self.draft.size

    # -- session ------------------------------------------------------------------------------

    def run(self) -> BuiltSession:
        plan = self.plan
        self.draft.add(
            {
                "type": "session",
                "version": 3,
                "id": self.session_id,
                "timestamp": "",
                "cwd": self.project.cwd,
            }
        )
        provider, model, _ = self.model
        self._entry("model_change", {"provider": provider, "modelId": model})
        self._entry("thinking_level_change", {"thinkingLevel": self.thinking})
        turns = since_branch = 0
        branched, malformed, compacted = not plan.branch, not plan.malformed, not plan.compaction
        while True:
            self._turn()
            turns += 1
            since_branch += 1
            done = self.draft.size / plan.target
            if not malformed and done >= 0.3:
                self._malformed()
                malformed = True
            if not compacted and turns >= 2 and done >= 0.4:
                self._compact()
                compacted = True
            if not branched and turns >= 2 and done >= 0.5:
                self._navigate()
                branched, since_branch = True, 0
            last_is_bad = (
                bool(self.draft.malformed) and self.draft.malformed[-1] == len(self.draft.lines) - 1
            )
            if (
                done >= 1
                and branched
                and compacted
                and since_branch
                and not last_is_bad
                and not self.fail_next
            ):
                break
        return self._finish()

    def _turn(self) -> None:
        rng = self.rng
        roll = rng.random()
        if roll < 0.05:
            self._model_change()
        elif roll < 0.09:
            self.thinking = rng.choice(LEVELS)
            self._tick(500, 20_000)
            self._entry("thinking_level_change", {"thinkingLevel": self.thinking})
        elif roll < 0.15:
            self._bash_execution()
        elif roll < 0.17:
            self._tick(500, 20_000)
            self._entry("session_info", {"name": self.text.short(2, 6).capitalize()})
        elif roll < 0.2 and len(self.line_of) > 3:
            self._tick(500, 20_000)
            target = rng.choice(self._path())
            self._entry("label", {"targetId": target, "label": self.text.short(1, 3)})
        self._user()
        if rng.random() < 0.2:
            self._custom_message(display=rng.random() < 0.25)
        steps = rng.choice((1, 2, 2, 3, 3, 4, 5, 6, 8))
        if self.fail_next:
            steps = max(steps, 2)  # a forced failure needs a tool call
        for step in range(steps):
            final = step == steps - 1 or (self._remaining() <= 0 and not self.fail_next)
            if not final and rng.random() < 0.02:
                self._aborted()
                break
            pending = self._assistant(self._pick_tools() if not final else [], final=final)
            for p in pending:
                self._tool_result(p)
            if final:
                break
        if rng.random() < 0.25:
            self._tick(5, 200)
            self._entry(
                "custom",
                {"customType": "agent_end", "data": {"timestamp": self.now}},
                base_first=False,
            )

    # -- entries --------------------------------------------------------------------------------

    def _model_change(self) -> None:
        self.model = self.rng.choice(MODELS)
        self._tick(500, 30_000)
        self._entry("model_change", {"provider": self.model[0], "modelId": self.model[1]})

    def _user(self) -> None:
        rng, text = self.rng, self.text
        self._tick(15_000, 900_000)
        prompt = text.prose(int(rng.lognormvariate(5.3, 0.9)))
        if rng.random() < 0.15:
            prompt += f"\n\n```\n{text.code(rng.randint(2, 25))}\n```"
        content: Any
        path: FieldPath
        if rng.random() < 0.55:
            content, path = prompt, ("message", "content")
        else:
            content, path = [{"type": "text", "text": prompt}], ("message", "content", 0, "text")
            if rng.random() < 0.03:
                content.append(
                    {
                        "type": "image",
                        "data": text.opaque(rng.randint(800, 4000)),
                        "mimeType": "image/png",
                    }
                )
        eid, idx = self._entry(
            "message",
            {
                "message": {
                    "role": "user",
                    "content": content,
                    "timestamp": self.now - rng.randint(2, 60),
                }
            },
        )
        self.draft.carrier(idx, "user", eid, path)
        self.about[eid] = [AbandonedEntry(eid, "user")]

    def _custom_message(self, *, display: bool) -> None:
        self._tick(2, 40)
        fields = custom_message(self.text, display=display)
        eid, _ = self._entry("custom_message", fields, base_first=False)
        self.about[eid] = [AbandonedEntry(eid, "custom_message", custom_type=fields["customType"])]

    def _bash_execution(self) -> None:
        self._tick(5_000, 300_000)
        self._entry("message", {"message": bash_execution(self.text, self.project, self.now)})

    def _pick_tools(self) -> list[str]:
        rng = self.rng
        kinds = rng.choices(KINDS, WEIGHTS, k=rng.choice((1, 1, 1, 2, 3)))
        if self.fabric_next or (self.plan.fabric and rng.random() < 0.3):
            self.fabric_next = False
            kinds.insert(0, "fabric_exec")
        return kinds

    def _next_call_id(self, kind: str) -> str:
        self.calls += 1
        return call_id(self.text, self.model[2], kind, self.calls)

    def _message_base(self) -> dict[str, Any]:
        provider, model, api = self.model
        return {"api": api, "provider": provider, "model": model}

    def _aborted(self) -> None:
        start = self.now
        self._tick(500, 30_000)
        error = self.rng.random() < 0.4
        msg = {
            "role": "assistant",
            "content": [],
            **self._message_base(),
            "usage": zero_usage(),
            "stopReason": "error" if error else "aborted",
            "timestamp": start,
            "errorMessage": "Request timed out." if error else "Request was aborted.",
        }
        self._entry("message", {"message": msg})

    def _assistant(self, kinds: list[str], *, final: bool) -> list[_Pending]:
        rng, text = self.rng, self.text
        start = self.now
        self._tick(1_500, 45_000)
        content: list[dict[str, Any]] = []
        if self.thinking != "off" and rng.random() < 0.75:
            thought = "" if rng.random() < 0.15 else text.prose(int(rng.lognormvariate(5.8, 0.8)))
            content.append(
                {
                    "type": "thinking",
                    "thinking": thought,
                    "thinkingSignature": signature(self.text, self.model[2]),
                }
            )
        if final or rng.random() < 0.55:
            size = int(rng.lognormvariate(6.6 if final else 5.3, 0.8))
            content.append({"type": "text", "text": text.prose(size, markdown=final)})
        calls: list[tuple[str, str, dict[str, Any], ToolCall | None, Trace | None]] = []
        for kind in kinds:
            call_id = self._next_call_id(kind)
            if kind == "fabric_exec":
                trace = make_trace(text, self.project, self.defect)
                self.defect = None
                args: dict[str, Any] = {"code": fabric_code(text, trace)}
                calls.append((call_id, kind, args, None, trace))
            else:
                call = plan_call(kind, text, self.project)
                args = pi_args(call, rng)
                calls.append((call_id, kind, args, call, None))
            content.append({"type": "toolCall", "id": call_id, "name": kind, "arguments": args})
        msg = {
            "role": "assistant",
            "content": content,
            **self._message_base(),
            "usage": usage(self.rng),
            "stopReason": "toolUse" if calls else "stop",
            "timestamp": start,
        }
        if self.model[2] == "openai-completions":
            msg["responseId"] = "chatcmpl-" + text.hex(16)
        eid, idx = self._entry("message", {"message": msg})
        if self.header_time is None:
            self.header_time = self.now
        for i, block in enumerate(content):
            if block["type"] == "text":
                self.draft.carrier(idx, "assistant", eid, ("message", "content", i, "text"))
        self.about[eid] = []
        return [_Pending(eid, *c) for c in calls]

    def _big_output(self, kind: str) -> int:
        remaining = self._remaining()
        if kind in ("read", "bash") and remaining >= 80_000 and self.rng.random() < 0.15:
            return self.rng.randint(50_000, min(500_000, remaining * 4 // 5))
        return 0

    def _tool_result(self, p: _Pending) -> None:
        rng = self.rng
        self._tick(60, 25_000)
        details: dict[str, Any] | None = None
        defect: str | None = None
        if p.trace is not None:
            trace = p.trace
            is_error = trace.outcome != "succeeded" and trace.valid
            body = orjson.dumps(
                {
                    "ok": trace.outcome == "succeeded",
                    "operations": trace.operations,
                    "failed": trace.failed,
                    "note": self.text.sentence(),
                }
            ).decode()
            if trace.valid and rng.random() < 0.06:
                # The pre-trace projection: readers must not turn it into operation records.
                defect = "legacy_audits"
                audits = [
                    {"ref": op["ref"], "args": op["args"], "success": op["outcome"] == "succeeded"}
                    for op in trace.value["operations"]
                ]
                details = {"audits": audits}
            else:
                defect = trace.defect
                details = {"trace": trace.value}
        else:
            assert p.call is not None
            fail = self.fail_next or rng.random() < 0.07
            self.fail_next = False
            out = run_call(
                p.call, self.text, fail=fail, big=self._big_output(p.kind), now_ms=self.now
            )
            body, is_error = out.text, out.is_error
            if p.kind == "edit" and not is_error:
                diff = "\n".join(
                    [f"-{line}" for line in p.call.old.splitlines()]
                    + [f"+{line}" for line in p.call.new.splitlines()]
                )
                details = {"diff": diff, "firstChangedLine": rng.randint(1, 800)}
        msg: dict[str, Any] = {
            "role": "toolResult",
            "toolCallId": p.call_id,
            "toolName": p.kind,
            "content": [{"type": "text", "text": body}],
        }
        if details is not None:
            msg["details"] = details
        msg["isError"] = is_error
        msg["timestamp"] = self.now
        eid, idx = self._entry("message", {"message": msg})
        self.draft.carrier(idx, "toolResult", eid, ("message", "content", 0, "text"))
        if is_error:
            self.tool_errors.append((idx, eid, p.kind))
        outcome = "failed" if is_error else "succeeded"
        if p.trace is not None:
            self.traces.append((idx, eid, p.trace, defect))
            self.about[eid] = [
                AbandonedEntry(eid, "fabric_result", trace=p.trace if defect is None else None)
            ]
            outcome = p.trace.outcome
        self.about[p.assistant_id].append(
            AbandonedEntry(
                p.assistant_id,
                "tool_call",
                call_id=p.call_id,
                tool=p.kind,
                args=p.args,
                outcome=outcome,
            )
        )

    def _compact(self) -> None:
        path = self._path()
        users = [i for i in path if self.kind[i] == "user"]
        first_kept = users[-1] if users else path[len(path) // 2]
        self._tick(2_000, 60_000)
        files = self.project.files
        self._entry(
            "compaction",
            {
                "summary": self.text.prose(self.rng.randint(600, 4000), markdown=True),
                "firstKeptEntryId": first_kept,
                "tokensBefore": self.rng.randint(30_000, 190_000),
                "details": {
                    "readFiles": [f"{self.project.cwd}/{f}" for f in self.rng.sample(files, 3)],
                    "modifiedFiles": [f"{self.project.cwd}/{f}" for f in self.rng.sample(files, 2)],
                },
                "fromHook": False,
            },
        )

    def _navigate(self) -> None:
        """``/tree``: move the leaf back; the entries after that point are abandoned."""
        rng = self.rng
        path = self._path()
        users = [i for i in path if self.kind[i] == "user"]
        variant = rng.choices(("user_summary", "user_plain", "entry", "root"), (5, 2, 2, 1))[0]
        last_user = max((n for n, i in enumerate(path) if self.kind[i] == "user"), default=0)
        entries = [i for i in path[:last_user] if self.kind[i] == "assistant"]
        if variant == "entry" and not entries:
            variant = "user_summary"
        new_leaf: str | None
        if variant == "entry":
            pick = rng.choice(entries)
            new_leaf, abandoned = pick, path[path.index(pick) + 1 :]
        elif variant == "root":
            new_leaf, abandoned = None, path
        else:
            pick = rng.choice(users[1:] or users)
            new_leaf, abandoned = self.parent[pick], path[path.index(pick) :]
        old_leaf = self.leaf
        assert old_leaf is not None
        self.leaf = new_leaf
        if variant in ("user_plain", "entry"):
            return  # nothing is written until the next message
        self._tick(3_000, 90_000)
        envelope = rng.choice(("default", "v1", "v2", "v2"))
        details: dict[str, Any]
        if envelope == "default":
            details = {"readFiles": [], "modifiedFiles": []}
            facts = 0
        else:
            known = [e for i in abandoned for e in self.about.get(i, [])]
            details = branch_details(
                self.text, 1 if envelope == "v1" else 2, known, old_leaf, abandoned
            )
            facts = len(details["facts"])
        from_id = new_leaf or "root"
        fields: dict[str, Any] = {
            "fromId": from_id,
            "summary": self.text.prose(rng.randint(300, 2000), markdown=True),
            "details": details,
        }
        if rng.random() < 0.5:
            fields["fromHook"] = False
        eid, idx = self._entry("branch_summary", fields)
        self.summaries.append((idx, eid, envelope, facts, from_id))
        if rng.random() < 0.4:
            self._entry("label", {"targetId": eid, "label": self.text.short(1, 3)})

    def _malformed(self) -> None:
        self._tick(100, 5_000)
        eid = self._new_id()
        msg = {
            "role": "assistant",
            "content": [{"type": "text", "text": self.text.prose(self.rng.randint(200, 1500))}],
            **self._message_base(),
            "usage": usage(self.rng),
            "stopReason": "stop",
            "timestamp": self.now,
        }
        entry = {
            "type": "message",
            "id": eid,
            "parentId": self.leaf,
            "timestamp": iso(self.now),
            "message": msg,
        }
        self.draft.add_truncated(entry, self.rng)

    # -- output ---------------------------------------------------------------------------------

    def _finish(self) -> BuiltSession:
        draft = self.draft
        assert self.header_time is not None
        header_ts = iso(self.header_time)
        draft.lines[0]["timestamp"] = header_ts
        draft.reencode(0)
        active = {self.line_of[i] for i in self._path()}
        abandoned = set(self.line_of.values()) - active
        planted, stray = self._plant(active, abandoned)
        stamp = header_ts.replace(":", "-").replace(".", "-")
        rel = f"pi/{encode_cwd(self.project.cwd)}/{stamp}_{self.session_id}.jsonl"
        sid = self.session_id
        built = self._built(
            "pi", rel, sid, planted, self.tool_errors, off_branch=stray, branched=bool(abandoned)
        )
        built.fabric_traces = [
            FabricTrace(
                file=rel,
                session_id=sid,
                entry_id=eid,
                line=idx + 1,
                valid=defect is None,
                defect=defect,
                operations=trace.operations,
                failed_operations=trace.failed,
                outcome=trace.outcome,
                on_active_path=idx in active,
            )
            for idx, eid, trace, defect in self.traces
        ]
        built.branch_summaries = [
            BranchSummary(rel, sid, eid, idx + 1, envelope, facts, from_id)
            for idx, eid, envelope, facts, from_id in self.summaries
        ]
        return built


def build_pi(plan: SessionPlan, shared: Shared) -> BuiltSession:
    """One Pi session (a single file)."""
    return _Pi(plan, shared).run()
