"""Shapes of Pi's records: provider ids, signatures, usage, tool arguments, directory names."""

from __future__ import annotations

import random
from typing import Any

import orjson

from devtools.corpus.project import Project
from devtools.corpus.tools import ToolCall
from devtools.corpus.words import Text

__all__ = [
    "bash_execution",
    "custom_message",
    "LEVELS",
    "MODELS",
    "call_id",
    "encode_cwd",
    "pi_args",
    "signature",
    "usage",
    "zero_usage",
]

MODELS = (
    ("anthropic", "claude-opus-4-5", "anthropic-messages"),
    ("anthropic", "claude-sonnet-4-5", "anthropic-messages"),
    ("openai", "gpt-5.1-codex", "openai-responses"),
    ("google", "gemini-2.5-pro", "google-generative-ai"),
    ("kimchi-dev", "kimi-k2.5", "openai-completions"),
)
LEVELS = ("off", "minimal", "low", "medium", "high")


def encode_cwd(cwd: str) -> str:
    """Pi's per-project directory name: ``/Users/a/proj`` → ``--Users-a-proj--``."""
    return "--" + cwd.lstrip("/").replace("/", "-").replace("\\", "-").replace(":", "-") + "--"


def call_id(text: Text, api: str, kind: str, n: int) -> str:
    """The provider's tool-call id for the ``n``-th call (1-based) of a session."""
    if api == "anthropic-messages":
        return "toolu_01" + text.alnum(22)
    if api == "openai-responses":
        return f"call_{text.alnum(24)}|fc_{text.hex(48)}"
    if api == "openai-completions":
        return f"functions.{kind}:{n - 1}"
    return f"{kind}_{n}"


def signature(text: Text, api: str) -> str:
    """A thinking block's opaque signature (OpenAI keeps the whole reasoning item there)."""
    size = min(12_000, max(200, int(text.rng.lognormvariate(6.9, 0.7))))
    if api == "openai-responses":
        item = {
            "type": "reasoning",
            "id": "rs_" + text.hex(48),
            "summary": [],
            "encrypted_content": text.opaque(size),
        }
        return orjson.dumps(item).decode()
    return text.opaque(size)


def usage(rng: random.Random) -> dict[str, Any]:
    """Token counts and their cost, as ``pi-ai`` records them per response."""
    inp, out = rng.randint(1, 4000), rng.randint(20, 3000)
    read, write = rng.randint(0, 180_000), rng.randint(0, 8000)
    cost = {
        "input": inp * 5e-06,
        "output": out * 2.5e-05,
        "cacheRead": read * 5e-07,
        "cacheWrite": write * 6.25e-06,
    }
    cost["total"] = sum(cost.values())
    return {
        "input": inp,
        "output": out,
        "cacheRead": read,
        "cacheWrite": write,
        "totalTokens": inp + out + read + write,
        "cost": cost,
    }


def zero_usage() -> dict[str, Any]:
    """The usage of a request that produced nothing (aborted, or failed)."""
    tokens: dict[str, Any] = {k: 0 for k in ("input", "output", "cacheRead", "cacheWrite")}
    cost = {k: 0 for k in ("input", "output", "cacheRead", "cacheWrite", "total")}
    return {**tokens, "totalTokens": 0, "cost": cost}


def pi_args(call: ToolCall, rng: random.Random) -> dict[str, Any]:
    """The ``arguments`` of a ``toolCall`` block (both ``edit`` shapes occur on disk)."""
    kind = call.kind
    if kind == "read":
        args: dict[str, Any] = {"path": call.path}
        if rng.random() < 0.2:
            args["offset"] = rng.randint(1, 400)
            args["limit"] = rng.choice((50, 100, 200))
        return args
    if kind == "edit":
        if rng.random() < 0.7:
            return {"path": call.path, "edits": [{"oldText": call.old, "newText": call.new}]}
        return {"path": call.path, "oldText": call.old, "newText": call.new}
    if kind == "write":
        return {"path": call.path, "content": call.content}
    if kind == "bash":
        return (
            {"command": call.command, "timeout": 120}
            if rng.random() < 0.3
            else {"command": call.command}
        )
    if kind in ("grep", "find"):
        return {"pattern": call.pattern, "path": call.path}
    return {"path": call.path}


def custom_message(text: Text, *, display: bool) -> dict[str, Any]:
    """The fields of a ``custom_message`` entry: a visible notice or a hidden prompt addition."""
    if display:
        return {
            "customType": "pi-fabric-agent-complete",
            "content": f"Agent completed: {text.sentence()}",
            "display": True,
            "details": {"status": "completed", "agent": text.word()},
        }
    body = text.prose(text.rng.randint(300, 2500), markdown=True)
    return {
        "customType": "enriched-prompt",
        "content": [{"type": "text", "text": body}],
        "display": False,
    }


def bash_execution(text: Text, project: Project, now_ms: int) -> dict[str, Any]:
    """A user-run ``!command`` message: exit 0, non-zero, or cancelled (no ``exitCode`` key)."""
    rng = text.rng
    fields: dict[str, Any] = {
        "role": "bashExecution",
        "command": project.command(text),
        "output": text.log(int(rng.lognormvariate(2.3, 1.0)) + 1, now_ms),
    }
    roll = rng.random()
    if roll < 0.6:
        fields["exitCode"] = 0
        fields["cancelled"] = False
    elif roll < 0.85:
        fields["exitCode"] = rng.choice((1, 2, 127))
        fields["cancelled"] = False
    else:
        fields["cancelled"] = True
    fields["truncated"] = False
    if rng.random() < 0.15:
        fields["excludeFromContext"] = True
    fields["timestamp"] = now_ms
    return fields
