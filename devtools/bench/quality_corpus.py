"""The retrieval-quality corpus: the public real sessions plus a small generated corpus.

``assemble(work)`` lays both out under ``work/corpus/{pi,claude,codex}`` (real files under
``real/``, generated under ``gen/``) so one index, one FTS5 table and one LIKE scan see the same
files. ``entries(corpus)`` reads every file through our own stages (active branch, default
policy) and yields each entry as the unit the quality sets judge: corpus-relative file, the
session label recall prints, the entry id recall prints, the source lines the entry came from
(for the line-level baselines) and its text.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import orjson

from devtools import ROOT

__all__ = ["GENERATED", "REAL", "Judged", "assemble", "entries"]

AGENTS = ("pi", "claude", "codex")
REAL = Path(__file__).resolve().parents[2] / ".." / "shared" / "fixtures" / "real"
# The generated half: deterministic (the generator is seeded), never stored in the repo.
GENERATED = {"sessions": 24, "mean_kb": 24, "seed": 14}


@dataclass(frozen=True, slots=True)
class Judged:
    file: str
    session: str
    entry: str
    lines: tuple[int, ...]
    role: str | None
    tool: str | None
    text: str


def real_root() -> Path | None:
    env = os.environ.get("SESSIONDEX_REAL_FIXTURES")
    root = Path(env) if env else REAL
    return root.resolve() if root.is_dir() else None


def assemble(work: Path) -> Path:
    """``work/corpus`` with the real fixtures (when present) and the generated sessions."""
    corpus = work / "corpus"
    if corpus.exists():
        shutil.rmtree(corpus)
    real = real_root()
    for agent in AGENTS:
        (corpus / agent).mkdir(parents=True)
        if real is not None and (real / agent).is_dir():
            shutil.copytree(real / agent, corpus / agent / "real")
    gen = work / "generated"
    if not (gen / "corpus.json").exists():
        subprocess.run(
            [
                sys.executable,
                "-m",
                "devtools.corpus",
                "--out",
                str(gen),
                "--sessions",
                str(GENERATED["sessions"]),
                "--mean-kb",
                str(GENERATED["mean_kb"]),
                "--seed",
                str(GENERATED["seed"]),
                "--agents",
                ",".join(AGENTS),
            ],
            check=True,
            stdout=subprocess.DEVNULL,
            cwd=ROOT,
        )
    for agent in AGENTS:
        if (gen / agent).is_dir():
            shutil.copytree(gen / agent, corpus / agent / "gen")
    for folder, _, names in os.walk(corpus):
        os.chmod(folder, 0o755)
        for name in names:
            os.chmod(os.path.join(folder, name), 0o644)
    return corpus


def _label(agent: str, session_id: str) -> str:
    # a subagent file's id already names its parent (``<parent uuid>/agent-<id>``)
    return f"{agent}:{session_id}"


def _claude_groups(data: bytes) -> dict[int, tuple[int, ...]]:
    """Line → every line of the same assistant response (Claude splits one over lines)."""
    by_id: dict[str, list[int]] = {}
    first: dict[int, str] = {}
    for number, raw in enumerate(data.splitlines(), 1):
        try:
            value = orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue
        message = value.get("message") if isinstance(value, dict) else None
        mid = message.get("id") if isinstance(message, dict) else None
        if isinstance(mid, str):
            by_id.setdefault(mid, []).append(number)
            first[number] = mid
    return {n: tuple(by_id[mid]) for n, mid in first.items()}


def entries(corpus: Path) -> Iterator[Judged]:
    """Every entry of every session under *corpus*, in file order, as the sets judge them."""
    from stages.lineage import lineage
    from stages.normalize import normalize
    from stages.policy import Policy
    from stages.read import read_session

    policy = Policy()
    for agent in AGENTS:
        root = corpus / agent
        for path in sorted(root.rglob("*.jsonl")):
            rel = str(path.relative_to(corpus))
            data = path.read_bytes()
            session = read_session(data, str(path), agent)
            result = normalize(session, lineage(session, "active"), policy)
            groups = _claude_groups(data) if agent == "claude" else {}
            label = _label(agent, session.session_id)
            for e in result.entries:
                if not e.text.strip():
                    continue
                key = e.entry_id if e.entry_id is not None else f"L{e.line}"
                yield Judged(rel, label, key, groups.get(e.line, (e.line,)), e.role, e.tool, e.text)
