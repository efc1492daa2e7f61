"""Human-readable rendering of results (search is not printing: the engine returns data).

The text form is for reading on a terminal; scripts and agents use ``--json``, which prints
the seed's result objects unchanged. Every continuation is shown as the command that follows
it, so a person can page and expand without assembling JSON by hand.
"""

from __future__ import annotations

import os
import re
import shlex
import sys
from collections.abc import Iterable, Sequence
from datetime import datetime
from typing import Any, Final

import orjson

from store.reasons import MAX_ENTRY_CHARS, READ_NOTES
from store.tokens import normalize_text, unique_terms

__all__ = ["mark_terms", "printable", "render"]

# What a terminal would act on instead of print: CSI (``ESC [ … final``, colours, cursor moves,
# ``?25l`` hiding the cursor), OSC (``ESC ] … BEL|ST``, titles, hyperlinks), other two-byte
# escapes, and the C0/C1 controls but tab and newline. Tool output is full of them; a person's
# terminal must not run them. Only the human renderings strip: JSON and expand keep the text.
_CONTROL: Final = re.compile(
    r"\x1b\[[0-?]*[ -/]*[@-~]"
    r"|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?"
    r"|\x1b[@-Z\\-_]"
    r"|\x9b[0-?]*[ -/]*[@-~]"
    r"|[\x00-\x08\x0b-\x1f\x7f-\x9f]"
)
_BLANK_RUN: Final = re.compile(r"\n(?:[ \t]*\n){2,}")


def printable(text: str) -> str:
    """*text* without terminal control sequences; a carriage return that would overwrite a
    line (progress bars) starts a new one; runs of blank lines become one."""
    if not text.isprintable():
        text = text.replace("\r\n", "\n").replace("\r", "\n")
        text = _CONTROL.sub("", text)
    return _BLANK_RUN.sub("\n\n", text)


def _emphasis() -> tuple[str, str]:
    """Bold on a terminal that takes colour; guillemets where escapes would be noise (they
    rarely occur in code or logs, where brackets would be read as part of the text)."""
    if sys.stdout.isatty() and not os.environ.get("NO_COLOR") and os.environ.get("TERM") != "dumb":
        return "\x1b[1m", "\x1b[22m"
    return "«", "»"


# Marks that survive ``printable`` (private-use characters), made bold (or brackets) last.
_OPEN, _CLOSE = "\ue000", "\ue001"


def _finish(text: str) -> str:
    left, right = _emphasis()
    return printable(text).replace(_OPEN, left).replace(_CLOSE, right)


def mark_terms(text: str, terms: Iterable[str], marks: tuple[str, str] = (_OPEN, _CLOSE)) -> str:
    """Each whole-token occurrence of a query term in *text* wrapped in *marks* (bold).

    Tokens are compared the way the index compares them (NFKC, lowercase); a term that is
    not a whole token here (a CJK bigram inside a run) is marked where it occurs."""
    wanted = {t for t in terms if t}
    if not wanted or not text:
        return text
    left, right = marks
    spans: list[tuple[int, int]] = []
    for m in re.finditer(r"\w+", text):
        token = normalize_text(m.group())
        if token in wanted:
            spans.append(m.span())
        elif not token.isascii():
            for term in wanted:
                if not term.isascii():
                    at = token.find(term)
                    while at >= 0:
                        spans.append((m.start() + at, m.start() + at + len(term)))
                        at = token.find(term, at + len(term))
    if not spans:
        return text
    out: list[str] = []
    last = 0
    for start, end in sorted(set(spans)):
        if start < last:
            continue
        out += [text[last:start], left, text[start:end], right]
        last = end
    out.append(text[last:])
    return "".join(out)


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
        text = f"coverage complete ({head})"
    else:
        reasons = ", ".join(coverage.get("reasons", [])) or "unknown"
        text = f"coverage INCOMPLETE ({head}): {reasons}"
        error = coverage.get("error")
        if error:
            text += f"\n  {error['code']}: {error['message']}"
    if MAX_ENTRY_CHARS in coverage.get("notes", []):
        text += (
            "\n  (some entries are shown cut to maxEntryChars; the search read their whole text)"
        )
    read = [n for n in coverage.get("notes", []) if n in READ_NOTES]
    if read:
        text += f"\n  (notes on how some sessions were read, no gap: {', '.join(read)})"
    archived = coverage.get("archived")
    if archived:
        text += (
            f"\n  ({archived['sessions']} sessions read from the archive: their files were "
            f"deleted, sessiondex kept a copy in {archived['copies']})"
        )
    for hint in coverage.get("hints", []):
        text += f"\n  try: {hint['message']}"
    return text


def _error(error: dict[str, Any]) -> str:
    lines = [f"error {error.get('code')}: {error.get('message')}"]
    for candidate in error.get("candidates", []):
        lines.append(f"  candidate: {candidate}")
    return "\n".join(lines)


def _recall(result: dict[str, Any], terms: Sequence[str]) -> str:
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
                f"{_when(hit['timestamp'])}  ({hit['tier']}"
                + (", archived: file deleted)" if hit.get("archived") else ")")
            )
            text = mark_terms(printable(hit["snippet"]).strip("\n"), terms)
            out.append(_indent(text + (" [truncated]" if hit["truncated"] else "")))
            args = hit["follow"]["args"]
            out.append(
                f"     → query expand {shlex.quote(args['session'])} --indices {args['indices'][0]}"
                + (" --branches all" if args.get("branches") == "all" else "")
            )
        else:
            out.append(
                f"{n:>3}. {hit['score']:<7.3g} {hit['sessionId']} (cold session, "
                f"{hit['matchedTerms']} terms, {hit['matchedStructuralEntries']} structural"
                + (", archived: file deleted" if hit.get("archived") else "")
                + ")  "
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
    if not result["entries"] and result.get("entryCount"):
        out.append(
            f"(no entries selected: add --indices, --range 0:{result['entryCount'] - 1}, "
            "--entry-id or --operation-address)"
        )
    if result.get("next"):
        out.append(f"next: {_token(result['next'])}")
    return "\n".join(out)


def _n(count: int, noun: str) -> str:
    return f"{count} {noun}" + ("" if count == 1 else "s")


def _sessions(result: dict[str, Any]) -> str:
    if "error" in result:
        return _error(result["error"])
    out = []
    for s in result["sessions"]:
        out.append(
            f"{_when(s['mtime'])}  {s['tier']:<4} {s['entryCount']:>6} entries  {s['id']}  "
            f"{s['cwd']}"
        )
        counts = s.get("counts")
        if counts:
            out[-1] += (
                f"  ({_n(counts['prompts'], 'prompt')}, "
                f"{_n(counts['toolResults'], 'tool result')}, {counts['failed']} failed)"
            )
        if s.get("sidechain"):
            out.append(f"    subagent of {s.get('parentSession') or 'an unknown session'}")
        if s.get("title"):
            out.append(f"    # {s['title']}")
        if s.get("firstPrompt"):
            out.append(f"    > {s['firstPrompt']}")
        out.append(f"    {s['file']}" + ("  (archived: file deleted)" if s.get("archived") else ""))
    if not out:
        out.append("no sessions in scope")
    if "coverage" in result:
        out.append(_coverage(result["coverage"]))
    return "\n".join(out)


def render(action: str, result: dict[str, Any], query: str | None = None) -> str:
    """The result for people; *query* (a literal or phrase recall's text) is marked in the
    snippets. Terminal control sequences are stripped from everything printed."""
    if action == "memory.recall":
        return _finish(_recall(result, unique_terms(query) if query else ()))
    if action == "memory.expand":
        return _finish(_expand(result))
    return _finish(_sessions(result))
