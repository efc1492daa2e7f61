"""The bench corpus: the project's generator, the bench's canaries, the configuration.

Canaries are unique terms the bench itself writes where no search may find them: Claude
injected context (``<system-reminder>``, ``<local-command-stdout>``), Codex injected context
(``<environment_context>``, ``# AGENTS.md instructions``, a ``developer`` message), Pi thinking
(not indexed by default) and a Pi ``custom`` entry (extension state, never in context). They are
appended to one old (cold) and one new (hot) main session per agent, chained onto the last
entry so the active path keeps them, and the file's mtime is restored so no session changes
tier. ``append_entry`` writes the ordinary user messages the freshness measurement looks for.
"""

from __future__ import annotations

import copy
import hashlib
import json
import os
import random
import subprocess
import time
import uuid
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from devtools import ROOT
from store.agents import agent_names

__all__ = [
    "SIZES",
    "Canary",
    "append_entry",
    "ensure_corpus",
    "plant_canaries",
    "write_config",
]

# name: (sessions, mean KB); ~105 MB and ~1.05 GB of session files.
SIZES = {"S": (800, 128), "M": (8000, 128)}
AGENTS = ("pi", "claude", "codex")


@dataclass(frozen=True, slots=True)
class Canary:
    term: str
    agent: str
    file: str  # absolute
    where: str


def ensure_corpus(
    out: Path, sessions: int, mean_kb: int, seed: int, python: str
) -> tuple[dict[str, Any], float]:
    """Generate the corpus afresh (an earlier run appended to it); returns (manifest, seconds)."""
    (out / "bench-canaries.json").unlink(missing_ok=True)
    started = time.perf_counter()
    subprocess.run(
        [
            python,
            "-m",
            "devtools.corpus",
            "--out",
            str(out),
            "--sessions",
            str(sessions),
            "--mean-kb",
            str(mean_kb),
            "--seed",
            str(seed),
            "--agents",
            ",".join(AGENTS),
            "--no-malformed",
            "--force",
        ],
        check=True,
        stdout=subprocess.DEVNULL,
        cwd=ROOT,
    )
    seconds = time.perf_counter() - started
    return json.loads((out / "corpus.json").read_bytes()), seconds


def write_config(path: Path, corpus: Path, index: Path, **memory: object) -> None:
    lines = ["[sources]"]
    # every registered agent gets a root in the corpus (missing: empty), so a default root
    # (~/.gemini/tmp, …) never adds the machine's own sessions to a measurement
    lines += [f'{a} = "{corpus / a}"' for a in agent_names()]
    lines += ["", "[memory]", f'indexDir = "{index}"']
    lines += [f"{k} = {json.dumps(v)}" for k, v in memory.items()]
    path.write_text("\n".join(lines) + "\n")


# -- appending entries -------------------------------------------------------------------------


def _iso(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


def _lines(path: Path) -> list[dict[str, Any]]:
    out = []
    for raw in path.read_bytes().splitlines():
        try:
            value = json.loads(raw)
        except ValueError:
            continue
        if isinstance(value, dict):
            out.append(value)
    return out


def _last_ms(records: list[dict[str, Any]]) -> int:
    for r in reversed(records):
        ts = r.get("timestamp")
        if isinstance(ts, str):
            try:
                return int(datetime.fromisoformat(ts.replace("Z", "+00:00")).timestamp() * 1000)
            except ValueError:
                continue
    return int(time.time() * 1000)


def _pi_id(seed: str) -> str:
    return hashlib.blake2b(seed.encode(), digest_size=4).hexdigest()


def _pi(records: list[dict[str, Any]], kind: str, text: str, ms: int) -> list[dict[str, Any]]:
    parent = next((r["id"] for r in reversed(records) if r.get("type") != "session"), None)
    new_id = _pi_id(f"{parent}/{text}")
    base = {"id": new_id, "parentId": parent, "timestamp": _iso(ms)}
    if kind == "user":
        msg = {"role": "user", "content": [{"type": "text", "text": text}], "timestamp": ms}
        return [{"type": "message", **base, "message": msg}]
    if kind == "thinking":
        template = next(
            (
                r
                for r in reversed(records)
                if r.get("type") == "message" and r["message"].get("role") == "assistant"
            ),
            None,
        )
        msg = copy.deepcopy(template["message"]) if template else {"role": "assistant"}
        msg["content"] = [
            {"type": "thinking", "thinking": text},
            {"type": "text", "text": "Done."},
        ]
        msg["timestamp"] = ms
        return [{"type": "message", **base, "message": msg}]
    if kind == "custom":
        return [{"type": "custom", **base, "customType": "bench-state", "data": {"note": text}}]
    raise ValueError(kind)


def _claude(records: list[dict[str, Any]], kind: str, text: str, ms: int) -> list[dict[str, Any]]:
    last = next(r for r in reversed(records) if "uuid" in r and "sessionId" in r)
    line = {
        k: last[k]
        for k in ("isSidechain", "userType", "cwd", "sessionId", "version", "gitBranch")
        if k in last
    }
    line.update(
        parentUuid=last["uuid"],
        uuid=str(uuid.UUID(int=random.Random(text).getrandbits(128), version=4)),
        timestamp=_iso(ms),
    )
    if kind in ("assistant", "assistant-continued"):
        # Claude Code streams a reply one content block per line, all with the reply's
        # message id: a continued reply changes the entry its first line made.
        reply = last.get("message") if last.get("type") == "assistant" else None
        reply_id = reply.get("id") if kind == "assistant-continued" and reply else None
        if not isinstance(reply_id, str):
            reply_id = "msg_bench_" + hashlib.blake2b(text.encode(), digest_size=8).hexdigest()
        block = {"type": "text", "text": text}
        line.update(
            type="assistant", message={"id": reply_id, "role": "assistant", "content": [block]}
        )
        return [line]
    if kind == "user":
        content: Any = [{"type": "text", "text": text}]
    elif kind == "system-reminder":
        content = f"<system-reminder>\n{text}\n</system-reminder>"
    elif kind == "local-command-stdout":
        content = f"<local-command-stdout>{text}</local-command-stdout>"
    else:
        raise ValueError(kind)
    line.update(type="user", message={"role": "user", "content": content})
    return [line]


def _codex(records: list[dict[str, Any]], kind: str, text: str, ms: int) -> list[dict[str, Any]]:
    role = "user"
    if kind == "user":
        body = text
    elif kind == "environment_context":
        body = f"<environment_context>\n  <cwd>/tmp/{text}</cwd>\n</environment_context>"
    elif kind == "agents_md":
        body = f"# AGENTS.md instructions for /tmp\n\n<INSTRUCTIONS>\n{text}\n</INSTRUCTIONS>"
    elif kind == "developer":
        role, body = "developer", f"<permissions instructions>\n{text}\n</permissions instructions>"
    else:
        raise ValueError(kind)
    part = "input_text"
    payload = {"type": "message", "role": role, "content": [{"type": part, "text": body}]}
    return [{"timestamp": _iso(ms), "type": "response_item", "payload": payload}]


_BUILDERS = {"pi": _pi, "claude": _claude, "codex": _codex}


def append_entry(
    path: Path, agent: str, kind: str, text: str, *, keep_mtime: bool = False, ms: int | None = None
) -> None:
    """Append one entry of ``kind`` holding ``text`` to a session file, as its agent would."""
    records = _lines(path)
    stamp = path.stat()
    when = ms if ms is not None else max(_last_ms(records) + 1000, int(time.time() * 1000))
    lines = _BUILDERS[agent](records, kind, text, when)
    data = b"".join(json.dumps(r, ensure_ascii=False).encode() + b"\n" for r in lines)
    with open(path, "ab") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())
    if keep_mtime:
        os.utime(path, ns=(stamp.st_atime_ns, stamp.st_mtime_ns))


# -- canaries ----------------------------------------------------------------------------------

_CANARY_KINDS = {
    "pi": ("thinking", "custom"),
    "claude": ("system-reminder", "local-command-stdout"),
    "codex": ("environment_context", "agents_md", "developer"),
}


def canary_term(rng: random.Random) -> str:
    # 'q' never occurs in a planted term's body nor in generated words: no collision possible.
    return "qjq" + "".join(rng.choices("abcdefghijklmnoprstuvwxyz0123456789", k=9))


def plant_canaries(corpus: Path, manifest: dict[str, Any], seed: int) -> list[Canary]:
    """Write the canaries once per corpus (a stamp file records them) and return them."""
    stamp = corpus / "bench-canaries.json"
    if stamp.exists():
        return [Canary(**c) for c in json.loads(stamp.read_bytes())]
    rng = random.Random(seed * 7919 + 17)
    canaries: list[Canary] = []
    for agent in AGENTS:
        mains = [
            s for s in manifest["sessions"] if s["agent"] == agent and not s.get("parent_file")
        ]
        if not mains:
            continue
        mains.sort(key=lambda s: s["mtime_ns"])
        chosen = [mains[0], mains[-1]] if len(mains) > 1 else mains[:1]
        for session in chosen:
            path = corpus / session["file"]
            for kind in _CANARY_KINDS[agent]:
                term = canary_term(rng)
                append_entry(
                    path, agent, kind, f"bench canary {term} never searchable", keep_mtime=True
                )
                canaries.append(Canary(term, agent, str(path), kind))
    stamp.write_text(json.dumps([asdict(c) for c in canaries], indent=1))
    return canaries
