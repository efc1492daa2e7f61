"""Human-readable rendering of results (search is not printing: the engine returns data).

The text form is for reading on a terminal; scripts and agents use ``--json``, which prints
the seed's result objects unchanged. Every continuation is shown as the command that follows
it, so a person can page and expand without assembling JSON by hand.
"""

from __future__ import annotations

import shlex
from datetime import datetime
from typing import Any

import orjson

__all__ = ["render"]


def _when(ms: int | None) -> str:
    if ms is None:
        return "-"
    return datetime.fromtimestamp(ms / 1000).strftime("%Y-%m-%d %H:%M")


def _token(call: dict[str, Any]) -> str:
    return "query call " + shlex.quote(orjson.dumps(call).decode("utf-8"))


def _indent(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])


def _coverage(coverage: dict[str, Any]) -> str:
    head = f"{coverage.get('indexedSessions', 0)}/{coverage.get('eligibleSessions', 0)} sessions"
    if coverage.get("staleSessions"):
        head += f", {coverage['staleSessions']} stale"
    if coverage.get("incompleteSessions"):
        head += f", {coverage['incompleteSessions']} incomplete"
    if coverage.get("complete"):
        return f"coverage complete ({head})"
    reasons = ", ".join(coverage.get("reasons", [])) or "unknown"
    text = f"coverage INCOMPLETE ({head}): {reasons}"
    error = coverage.get("error")
    if error:
        text += f"\n  {error['code']}: {error['message']}"
    return text


def _error(error: dict[str, Any]) -> str:
    lines = [f"error {error.get('code')}: {error.get('message')}"]
    for candidate in error.get("candidates", []):
        lines.append(f"  candidate: {candidate}")
    return "\n".join(lines)


def _recall(result: dict[str, Any]) -> str:
    out: list[str] = []
    if "error" in result:
        return _error(result["error"])
    for n, hit in enumerate(result["hits"], 1):
        if hit["kind"] == "entry":
            what = hit["role"] or hit["type"]
            if hit.get("tool"):
                what += f" {hit['tool']}"
            if hit.get("outcome"):
                what += f" [{hit['outcome']}]"
            out.append(
                f"{n:>3}. {hit['score']:<7.3g} {hit['sessionId']} #{hit['index']} {what}  "
                f"{_when(hit['timestamp'])}  ({hit['tier']})"
            )
            out.append(_indent(hit["snippet"] + (" [truncated]" if hit["truncated"] else "")))
            args = hit["follow"]["args"]
            out.append(
                f"     → query expand {shlex.quote(args['session'])} --indices {args['indices'][0]}"
                + (" --branches all" if args.get("branches") == "all" else "")
            )
        else:
            out.append(
                f"{n:>3}. {hit['score']:<7.3g} {hit['sessionId']} (cold session, "
                f"{hit['matchedTerms']} terms, {hit['matchedStructuralEntries']} structural)  "
                f"last {_when(hit['lastTimestamp'])}  {hit['cwd']}"
            )
            out.append(f"     → {_token(hit['follow'])}")
    if not result["hits"]:
        out.append(
            "no hits" + ("" if result["coverage"].get("complete") else " (not authoritative)")
        )
    out.append(f"total {result['total']} · {_coverage(result['coverage'])}")
    if result.get("next"):
        out.append(f"next: {_token(result['next'])}")
    return "\n".join(out)


def _expand(result: dict[str, Any]) -> str:
    if "error" in result:
        return _error(result["error"])
    out = [f"{result['session']}  ({result['entryCount']} entries, {result['branches']})"]
    for e in result["entries"]:
        r = e["textRange"]
        head = f"#{e['index']} {e['role'] or e['type']}"
        if e.get("tool"):
            head += f" {e['tool']}"
        if e.get("outcome"):
            head += f" [{e['outcome']}]"
        if e.get("anchor"):
            head += " (anchor)"
        head += f"  {_when(e['timestamp'])}"
        if not (r["start"] == 0 and r["complete"]):
            head += f"  chars {r['start']}..{r['end']} of {r['total']}"
        out.append(head)
        out.append(_indent(e["text"]))
    if result.get("next"):
        out.append(f"next: {_token(result['next'])}")
    return "\n".join(out)


def _sessions(result: dict[str, Any]) -> str:
    if "error" in result:
        return _error(result["error"])
    out = []
    for s in result["sessions"]:
        out.append(
            f"{_when(s['mtime'])}  {s['tier']:<4} {s['entryCount']:>6}  {s['id']}  {s['cwd']}\n"
            f"    {s['file']}"
        )
    if not out:
        out.append("no sessions in scope")
    if "coverage" in result:
        out.append(_coverage(result["coverage"]))
    return "\n".join(out)


def render(action: str, result: dict[str, Any]) -> str:
    if action == "memory.recall":
        return _recall(result)
    if action == "memory.expand":
        return _expand(result)
    return _sessions(result)
