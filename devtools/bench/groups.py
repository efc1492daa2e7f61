"""The query groups, each written once per system that can express it.

A group's queries come from the corpus manifest (planted terms, negative controls, phrases cut
from planted text) and from the generator's commonest words. ``None`` for a system means it
cannot express the group: a text-only FTS5 index has no roles, tools or outcomes, and a line
scan (``rg``) has no ``all`` across lines, no ranking and no structure.
"""

from __future__ import annotations

import random
import re
from dataclasses import dataclass, field
from typing import Any

from devtools.bench.quality import regex_for

__all__ = ["GROUPS", "Query", "build_groups"]

GROUPS = (
    "planted",
    "multi_any",
    "multi_all",
    "phrase",
    "regex",
    "structural",
    "combined",
    "negative",
)

# Words the generator draws most often (devtools.corpus.words._COMMON), in small bundles.
_MULTI = (
    ("missing", "config", "file"),
    ("cache", "query", "server"),
    ("async", "handler", "event"),
    ("commit", "diff", "merge"),
    ("parser", "token", "entry"),
    ("flag", "command", "script"),
)
_STRUCTURAL: tuple[dict[str, Any], ...] = (
    {"tool": "bash"},
    {"tool": "Bash"},
    {"tool": "exec_command"},
    {"outcome": "failed"},
    {"role": "user"},
    {"role": "toolResult", "outcome": "failed"},
)
_ASCII_WORD = re.compile(r"^[a-z]{3,}$")


@dataclass(frozen=True, slots=True)
class Query:
    group: str
    label: str
    ours: dict[str, Any]
    fts5: str | None = None
    rg: tuple[str, ...] | None = None  # arguments before the roots
    agentsview: tuple[str, dict[str, str]] | None = None  # (path, params)
    expect: dict[str, Any] = field(default_factory=dict)


def _fts_phrase(words: list[str] | tuple[str, ...]) -> str:
    return '"' + " ".join(words) + '"'


def _av_search(q: str) -> tuple[str, dict[str, str]]:
    return ("/api/v1/search", {"q": q, "limit": "10"})


def _phrase_of(text: str, term: str, rng: random.Random) -> list[str] | None:
    words = [w for w in re.split(r"\s+", text) if w]
    spans = []
    for i in range(len(words) - 2):
        three = words[i : i + 3]
        if all(_ASCII_WORD.match(w) for w in three) and term not in three:
            spans.append(three)
    return rng.choice(spans) if spans else None


def build_groups(manifest: dict[str, Any], *, per_group: int, seed: int) -> list[Query]:
    rng = random.Random(seed)
    planted = list(manifest["planted"])
    rng.shuffle(planted)
    out: list[Query] = []
    for p in planted[:per_group]:
        term = p["term"]
        out.append(
            Query(
                "planted",
                term,
                {"query": term},
                fts5=_fts_phrase([term]),
                rg=("-F", "-c", "--", term),
                agentsview=_av_search(term),
                expect={"session": f"{p['agent']}:{p['session_id']}", "file": p["file"]},
            )
        )
    for words in _MULTI:
        out.append(
            Query(
                "multi_any",
                " ".join(words),
                {"query": " ".join(words), "queryMatch": "any"},
                fts5=" OR ".join(words),
                rg=("-F", "-c", *(a for w in words for a in ("-e", w))),
                agentsview=_av_search(" OR ".join(words)),
            )
        )
        out.append(
            Query(
                "multi_all",
                " ".join(words),
                {"query": " ".join(words), "queryMatch": "all"},
                fts5=" AND ".join(words),
                agentsview=_av_search(" ".join(words)),
            )
        )
    phrases = 0
    for p in planted:
        if phrases >= min(per_group, 12):
            break
        phrase = _phrase_of(p["text"], p["term"], rng)
        if phrase is None:
            continue
        phrases += 1
        text = " ".join(phrase)
        out.append(
            Query(
                "phrase",
                text,
                {"query": text, "queryMode": "phrase"},
                fts5=_fts_phrase(phrase),
                rg=("-F", "-i", "-c", "--", text),
                agentsview=_av_search(_fts_phrase(phrase)),
            )
        )
    for p in planted[: min(per_group, 12)]:
        pattern = regex_for(p["term"])
        out.append(
            Query(
                "regex",
                pattern,
                {"query": pattern, "queryMode": "regex"},
                rg=("-c", "-e", pattern),
                agentsview=(
                    "/api/v1/search/content",
                    {"mode": "regex", "pattern": pattern, "limit": "10"},
                ),
                expect={"session": f"{p['agent']}:{p['session_id']}"},
            )
        )
    for filters in _STRUCTURAL:
        label = " ".join(f"{k}={v}" for k, v in filters.items())
        out.append(Query("structural", label, dict(filters)))
    for p in planted[: min(per_group, 12)]:
        out.append(
            Query(
                "combined",
                f"{p['term']} role={p['role']}",
                {"query": p["term"], "role": p["role"]},
                expect={"session": f"{p['agent']}:{p['session_id']}"},
            )
        )
    for words in _MULTI[:3]:
        out.append(
            Query(
                "combined",
                f"{words[0]} outcome=failed",
                {"query": words[0], "outcome": "failed"},
            )
        )
    for term in manifest["negative_controls"]:
        out.append(
            Query(
                "negative",
                term,
                {"query": term},
                fts5=_fts_phrase([term]),
                rg=("-F", "-c", "--", term),
                agentsview=_av_search(term),
                expect={"hits": 0},
            )
        )
    for q in out:
        q.ours.setdefault("scope", "global")
    return out
