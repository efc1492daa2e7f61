"""Builders shared by tests: Pi session lines, a tmp Pi root and a config pointing at it."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson

from store.agents import agent_names
from store.config import Config, load_config

ROOT = Path(__file__).resolve().parent.parent
SHARED_FIXTURES = ROOT.parent / "shared" / "fixtures" / "real"


def run_module(*argv: str, src: Path = ROOT, timeout: float = 300) -> Any:
    """``python -m ARGV…`` of the checkout at *src*, as a user's shell runs it: asserts exit 0
    and returns the parsed JSON when ``--json`` was asked for, the stdout bytes otherwise."""
    env = {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}
    done = subprocess.run(
        [sys.executable, "-m", *argv], capture_output=True, env=env, cwd=src, timeout=timeout
    )
    assert done.returncode == 0, (argv, done.stdout[-2000:], done.stderr[-4000:])
    return orjson.loads(done.stdout) if "--json" in argv else done.stdout


def iso(ms: int) -> str:
    from datetime import UTC, datetime

    return (
        datetime.fromtimestamp(ms / 1000, UTC)
        .isoformat(timespec="milliseconds")
        .replace("+00:00", "Z")
    )


def header(session_id: str, cwd: str, ms: int = 1_700_000_000_000) -> dict[str, Any]:
    return {"type": "session", "version": 3, "id": session_id, "timestamp": iso(ms), "cwd": cwd}


def message(entry_id: str, parent: str | None, role: str, ms: int, **fields: Any) -> dict[str, Any]:
    msg: dict[str, Any] = {"role": role, "timestamp": ms, **fields}
    return {
        "type": "message",
        "id": entry_id,
        "parentId": parent,
        "timestamp": iso(ms),
        "message": msg,
    }


def user(entry_id: str, parent: str | None, text: str, ms: int) -> dict[str, Any]:
    return message(entry_id, parent, "user", ms, content=text)


def assistant(entry_id: str, parent: str | None, text: str, ms: int, *calls: dict[str, Any]):
    content: list[dict[str, Any]] = [{"type": "text", "text": text}] if text else []
    content += [{"type": "toolCall", **c} for c in calls]
    return message(
        entry_id, parent, "assistant", ms, content=content, stopReason="stop",
        api="anthropic-messages", provider="anthropic", model="m",
    )  # fmt: skip


def tool_result(
    entry_id: str, parent: str | None, name: str, text: str, ms: int, *, error: bool = False
) -> dict[str, Any]:
    return message(
        entry_id, parent, "toolResult", ms, toolCallId=f"call-{entry_id}", toolName=name,
        content=[{"type": "text", "text": text}], isError=error,
    )  # fmt: skip


def bash(
    entry_id: str, parent: str | None, command: str, output: str, ms: int, exit_code: int = 0
) -> dict[str, Any]:
    return message(
        entry_id, parent, "bashExecution", ms, command=command, output=output,
        exitCode=exit_code, cancelled=False, truncated=False,
    )  # fmt: skip


def codex_said(role: str, text: str) -> dict[str, Any]:
    """A bare Codex message item (eras A and B)."""
    kind = "output_text" if role == "assistant" else "input_text"
    return {"type": "message", "role": role, "content": [{"type": kind, "text": text}]}


def codex_object_rollout(
    session_id: str,
    items: Iterable[Mapping[str, Any]],
    *,
    instructions: str = "",
    indent: bool = True,
) -> bytes:
    """A Codex era-A rollout as the TS CLI saved it (pretty-printed, two-space indents)."""
    session = {"timestamp": "2025-05-01T10:00:00.000Z", "id": session_id}
    session["instructions"] = instructions
    option = orjson.OPT_INDENT_2 if indent else 0
    return orjson.dumps({"session": session, "items": list(items)}, option=option)


def claude_line(
    kind: str, uuid: str, parent: str | None, ms: int, content: object, *,
    message_id: str | None = None, session: str = "c0ffee00-0000-4000-8000-000000000001",
    cwd: str = "/work/proj",
) -> dict[str, Any]:  # fmt: skip
    """One Claude Code line: a ``user`` or ``assistant`` message (``message_id`` groups the
    lines of one streamed reply, as Claude Code writes one content block per line)."""
    message: dict[str, Any] = {"role": kind, "content": content}
    if message_id is not None:
        message["id"] = message_id
    return {
        "type": kind,
        "uuid": uuid,
        "parentUuid": parent,
        "sessionId": session,
        "cwd": cwd,
        "isSidechain": False,
        "timestamp": iso(ms),
        "message": message,
    }


def grow_with_memo(raws: Any, read: Any, path: str, policies: Iterable[Any]) -> list[Any]:
    """Normalize every prefix of *raws* (read by *read* again each time, as the in-memory
    append path does) with a memo per policy and without, asserting both agree in both
    branch modes; returns the memos and the last session read."""
    from stages.lineage import lineage
    from stages.normalize import normalize
    from stages.normalized import EntryMemo
    from stages.source import ParseResult

    policies = list(policies)
    memos = [EntryMemo() for _ in policies]  # one per policy: another policy clears a memo
    grown = None
    for n in range(1, len(raws) + 1):
        grown = read(ParseResult(raws[:n], 0, n + 1, ()), path)
        for policy, memo in zip(policies, memos, strict=True):
            for branches in ("active", "all"):
                fresh = normalize(grown, lineage(grown, branches), policy)
                remembered = normalize(grown, lineage(grown, branches), policy, memo=memo)
                assert remembered == fresh, (n, branches, policy)
    return [memos, grown]


def elsewhere(config: Config, index_dir: Path) -> Config:
    """*config* indexing into *index_dir*, with the same archive: a clean rebuild of the same
    sources (the archive is a source too: it holds the sessions whose files are gone)."""
    from dataclasses import replace

    return replace(
        config,
        memory=replace(config.memory, index_dir=index_dir),
        archive=replace(config.archive, dir=config.archive_dir),
    )


def jsonl(records: Iterable[Mapping[str, Any]]) -> bytes:
    return b"".join(orjson.dumps(r) + b"\n" for r in records)


@dataclass
class PiRoot:
    """A temporary Pi sessions root plus an index folder and a config naming both."""

    base: Path

    @property
    def root(self) -> Path:
        return self.base / "pi"

    @property
    def index(self) -> Path:
        return self.base / "index"

    @property
    def config_path(self) -> Path:
        return self.base / "config.toml"

    def write_config(self, **memory: Any) -> Config:
        lines = [
            "[sources]",
            # every agent's root under the test folder: a default root (~/.gemini/tmp, …)
            # must never leak a developer's own sessions into a test
            *(f'{name} = "{self.base / name}"' for name in agent_names()),
            "[memory]",
            f'indexDir = "{self.index}"',
        ]
        for key, value in memory.items():
            lines.append(f"{key} = {str(value).lower() if isinstance(value, bool) else value}")
        self.config_path.write_text("\n".join(lines) + "\n")
        return load_config(self.config_path)

    def session(
        self, name: str, records: Iterable[Mapping[str, Any]], *, cwd: str = "/work/proj",
        mtime_s: float | None = None,
    ) -> Path:  # fmt: skip
        folder = self.root / ("--" + cwd.strip("/").replace("/", "-") + "--")
        folder.mkdir(parents=True, exist_ok=True)
        path = folder / f"{name}.jsonl"
        path.write_bytes(jsonl(records))
        if mtime_s is not None:
            os.utime(path, (mtime_s, mtime_s))
        return path


def generated(
    base: Path,
    *,
    sessions: int,
    mean_kb: int,
    seed: int,
    agents: tuple[str, ...] = ("pi", "claude", "codex"),
    hot_sessions: int = 50,
    malformed_lines: bool = False,
) -> tuple[Any, Config]:
    """A generated corpus under ``base/corpus`` and a config indexing it into ``base/index``.

    Returns (CorpusManifest, Config); the config file is ``base/config.toml``.
    """
    from devtools.corpus import generate

    out = base / "corpus"
    manifest = generate(
        out, sessions=sessions, mean_kb=mean_kb, seed=seed, agents=agents,
        malformed_lines=malformed_lines,
    )  # fmt: skip
    path = base / "config.toml"
    path.write_text(
        "[sources]\n"
        + "".join(f'{a} = "{out / rel}"\n' for a, rel in sorted(manifest.roots.items()))
        + f'[memory]\nindexDir = "{base / "index"}"\nhotSessions = {hot_sessions}\n'
    )
    return manifest, load_config(path)
