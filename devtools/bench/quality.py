"""The quality checks that fail ``--check``, each against truth the bench knows independently.

* ``planted_hit1``: every planted term (``corpus.json``) comes back with its own session
  (and, for an entry hit, its own entry) at rank 1.
* ``off_branch_hidden``: a term planted only on an abandoned branch has no hit by default.
* ``negative_zero``: a negative control has zero hits and complete coverage.
* ``regex_planted_hit1``: a global regex for a planted term (its first 7 characters, then
  ``[a-z0-9]+``) finds the term's session (and entry) at rank 1, for a seeded sample of 12.

Two limits of the spec make a global answer honestly incomplete rather than wrong: a cold
session whose vocabulary passed ``maxColdVocabularyBytes`` (or its digest
``maxColdCacheBytes``) keeps only part of its terms, and the answer names that reason. A
planted term missed globally is *excused* only when the answer names such a cut and the
term is found at rank 1 by a recall scoped to its own session (so the index does hold it);
a negative control's incomplete coverage is excused only when those cuts are its only
reasons. Excused cases are counted in the result, never silently dropped.
* ``structural_truth``: failed tool results, per session, equal the generator's list of the
  tool errors it wrote plus those the bench counts itself in Claude subagent transcripts
  (which the manifest does not list); ``branches: all`` so no lineage rule is involved.
* ``no_leaks``: no canary (injected context, thinking, extension state) is found.
"""

from __future__ import annotations

import json
import random
from collections.abc import Callable
from pathlib import Path
from typing import Any

from devtools.bench.corpus import Canary

__all__ = ["run_quality"]

Ask = Callable[[dict[str, Any]], dict[str, Any]]


def _entry_key(p: dict[str, Any]) -> str:
    return f"L{p['line']}" if p["agent"] == "codex" else str(p["entry_id"])


def _expected_session(p: dict[str, Any]) -> str:
    file = str(p["file"])
    if "/subagents/" in file:
        return f"claude:{p['session_id']}/{Path(file).stem}"
    return f"{p['agent']}:{p['session_id']}"


CUT_REASONS = frozenset({"max_cold_vocabulary_bytes", "max_cold_cache_bytes"})


def _hit1(r: dict[str, Any], p: dict[str, Any]) -> bool:
    top = r["hits"][0] if r["hits"] else None
    ok = top is not None and top["sessionId"] == _expected_session(p)
    if ok and top is not None and top["kind"] == "entry":
        # The entry holding the term: its id, or (where a normalized entry merges several
        # lines, as Claude's split replies do) its snippet shows the unique term.
        ok = top["entryId"] == _entry_key(p) or p["term"] in top["snippet"].lower()
    return ok


def _planted(ask: Ask, manifest: dict[str, Any], corpus: Path) -> dict[str, Any]:
    misses = []
    excused = []
    for p in manifest["planted"]:
        r = ask({"op": "recall", "args": {"query": p["term"], "scope": "global"}})
        if _hit1(r, p):
            continue
        miss = {"term": p["term"], "file": p["file"], "top": r["hits"][:1], "total": r["total"]}
        if CUT_REASONS & set(r["reasons"]):
            own = ask(
                {
                    "op": "recall",
                    "args": {"query": p["term"], "scope": f"session:{corpus / p['file']}"},
                }
            )
            if _hit1(own, p):
                excused.append({**miss, "reasons": r["reasons"]})
                continue
        misses.append(miss)
    n = len(manifest["planted"])
    return {
        "ok": not misses and n > 0,
        "value": (n - len(misses) - len(excused)) / n if n else 0.0,
        "n": n,
        "excused": len(excused),
        "misses": misses[:10],
        "excused_examples": excused[:3],
    }


def _off_branch(ask: Ask, manifest: dict[str, Any]) -> dict[str, Any]:
    leaks = []
    for p in manifest["off_branch"]:
        r = ask({"op": "recall", "args": {"query": p["term"], "scope": "global"}})
        if r["total"]:
            leaks.append({"term": p["term"], "file": p["file"], "top": r["hits"][:1]})
    return {"ok": not leaks, "n": len(manifest["off_branch"]), "leaks": leaks[:10]}


def _negative(ask: Ask, manifest: dict[str, Any]) -> dict[str, Any]:
    bad = []
    excused = 0
    for term in manifest["negative_controls"]:
        r = ask({"op": "recall", "args": {"query": term, "scope": "global"}})
        if not r["total"] and not r["complete"] and set(r["reasons"]) <= CUT_REASONS:
            excused += 1  # zero hits; the absence cannot be proven past a vocabulary cut
        elif r["total"] or not r["complete"]:
            bad.append({"term": term, "total": r["total"], "reasons": r["reasons"]})
    n = len(manifest["negative_controls"])
    return {"ok": not bad, "n": n, "excused": excused, "bad": bad}


def _subagent_errors(corpus: Path, manifest: dict[str, Any]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for s in manifest["sessions"]:
        if not s.get("parent_file"):
            continue
        key = f"claude:{s['id']}/{Path(s['file']).stem}"
        for raw in (corpus / s["file"]).read_bytes().splitlines():
            try:
                line = json.loads(raw)
            except ValueError:
                continue
            content = (line.get("message") or {}).get("content")
            if line.get("type") != "user" or not isinstance(content, list):
                continue
            for block in content:
                if (
                    isinstance(block, dict)
                    and block.get("type") == "tool_result"
                    and block.get("is_error") is True
                ):
                    counts[key] = counts.get(key, 0) + 1
    return counts


def _structural(ask: Ask, corpus: Path, manifest: dict[str, Any]) -> dict[str, Any]:
    truth: dict[str, int] = {}
    for e in manifest["tool_errors"]:
        key = f"{e['agent']}:{e['session_id']}"
        truth[key] = truth.get(key, 0) + 1
    for key, n in _subagent_errors(corpus, manifest).items():
        truth[key] = truth.get(key, 0) + n
    args = {
        "scope": "global",
        "branches": "all",
        "role": "toolResult",
        "outcome": "failed",
        "pageSize": 50,
    }
    got = ask({"op": "recall_all", "args": args})
    counts: dict[str, int] = got["counts"]
    diff = {
        k: {"truth": truth.get(k, 0), "index": counts.get(k, 0)}
        for k in set(truth) | set(counts)
        if truth.get(k, 0) != counts.get(k, 0)
    }
    retained = got["kinds"]["entry"] + got["kinds"]["session"]
    return {
        "ok": not diff and got["total"] == retained,
        "truth_entries": sum(truth.values()),
        "index_entries": sum(counts.values()),
        "total": got["total"],
        "pages": got["pages"],
        "hot_entries": got["kinds"]["entry"],
        "cold_sessions": got["kinds"]["session"],
        "diff": dict(list(diff.items())[:10]),
    }


REGEX_SAMPLE = 12


def regex_for(term: str) -> str:
    """The benchmark's regex for a planted term: its prefix, then any term body."""
    return term[:7] + "[a-z0-9]+"


def _regex_planted(ask: Ask, manifest: dict[str, Any], seed: int) -> dict[str, Any]:
    planted = list(manifest["planted"])
    chosen = random.Random(seed).sample(planted, min(REGEX_SAMPLE, len(planted)))
    misses = []
    complete = 0
    for p in chosen:
        pattern = regex_for(p["term"])
        args = {"query": pattern, "queryMode": "regex", "scope": "global"}
        r = ask({"op": "recall", "args": args})
        complete += bool(r["complete"])
        if not _hit1(r, p):
            misses.append(
                {
                    "pattern": pattern,
                    "file": p["file"],
                    "top": r["hits"][:1],
                    "reasons": r["reasons"],
                }
            )
    n = len(chosen)
    return {
        "ok": not misses and n > 0,
        "value": (n - len(misses)) / n if n else 0.0,
        "n": n,
        "complete": complete,
        "misses": misses[:5],
    }


def _canaries(ask: Ask, canaries: list[Canary]) -> dict[str, Any]:
    leaks = []
    for c in canaries:
        r = ask({"op": "recall", "args": {"query": c.term, "scope": "global", "branches": "all"}})
        if r["total"]:
            leaks.append({"term": c.term, "agent": c.agent, "where": c.where})
    return {"ok": not leaks and bool(canaries), "n": len(canaries), "leaks": leaks}


def run_quality(
    ask: Ask,
    corpus: Path,
    manifest: dict[str, Any],
    canaries: list[Canary],
    *,
    sample: int | None = None,
    seed: int = 0,
) -> dict[str, dict[str, Any]]:
    """Every check; ``sample`` bounds the planted and off-branch terms asked (seeded)."""
    terms = manifest
    if sample is not None:
        rng = random.Random(seed)
        terms = {
            key: rng.sample(manifest[key], min(sample, len(manifest[key])))
            for key in ("planted", "off_branch")
        }
    out = {
        "planted_hit1": _planted(ask, terms, corpus),
        "off_branch_hidden": _off_branch(ask, terms),
        "negative_zero": _negative(ask, manifest),
        "regex_planted_hit1": _regex_planted(ask, manifest, seed),
        "structural_truth": _structural(ask, corpus, manifest),
        "no_leaks": _canaries(ask, canaries),
    }
    if sample is not None:
        for key, name in (("planted", "planted_hit1"), ("off_branch", "off_branch_hidden")):
            out[name]["of"] = len(manifest[key])
    return out
