"""The literal text a regex requires, so candidates can be found before the worker runs.

``required(pattern)`` parses the pattern with the standard library's own parser (the one
``re.compile`` uses; parsing runs no pattern against text) and returns the conditions every
match must meet, as clauses: a match contains at least one string of each clause, compared
under ``fold``. ``()`` means the pattern requires nothing usable (``.*``, ``\\d+``), ``None``
that it did not parse (the worker still says ``invalid_regex``).

The extraction is sound, never complete: each node either contributes strings it is sure of
or ends the literal run, so a text the regex matches always holds every clause. What it knows:
concatenated literals; groups and atomic groups (their content is part of the match); a
repeat that must occur at least once (its literal content is required, and joins the text
before and after); an alternation (one literal per branch, any of them). Everything else —
classes, ``.``, anchors, lookarounds, backreferences, conditionals — ends the run.

Matching is ``re.IGNORECASE`` on ``str``, where two characters match when their simple
lowercase forms are equal or ``re`` lists them as extra cases (``s``/``ſ``, ``k``/``K``,
``σ``/``ς``…). ``fold`` maps every character to one representative of that class, so
containment after ``fold`` is implied by a match.
"""

from __future__ import annotations

import importlib
import re
from typing import Any, Final

__all__ = ["Clauses", "fold", "required"]

Clauses = tuple[frozenset[str], ...]

# The parser re.compile itself uses (sre_parse's home since 3.11; typeshed has no stubs).
_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")
_casefix: Any = importlib.import_module("re._casefix")


def _extra_table() -> dict[int, int]:
    # Union the groups re treats as equal under IGNORECASE; each maps to its smallest member.
    parent: dict[int, int] = {}

    def root(x: int) -> int:
        while parent.get(x, x) != x:
            x = parent[x]
        return x

    for lower, others in _casefix._EXTRA_CASES.items():
        for other in others:
            a, b = root(lower), root(other)
            if a != b:
                parent[max(a, b)] = min(a, b)
    members = set(parent) | set(parent.values())
    return {m: root(m) for m in members if root(m) != m}


_EXTRA: Final = _extra_table()
# str.lower is the full mapping; re uses the simple one, which differs only for U+0130.
_BEFORE_LOWER: Final = {0x130: ord("i")}


# The characters _EXTRA replaces (never ASCII: an ASCII member is its class's smallest).
_REPLACED: Final = re.compile("[" + "".join(re.escape(chr(c)) for c in sorted(_EXTRA)) + "]")
_REPLACEMENT: Final = {chr(a): chr(b) for a, b in _EXTRA.items()}


def _replace(m: re.Match[str]) -> str:
    return _REPLACEMENT[m.group()]


def fold(text: str) -> str:
    """*text* with every character replaced by its IGNORECASE class's representative."""
    if text.isascii():
        return text.lower()
    # str.translate with a dict costs a lookup per character; the few that change are found
    # by one C-level search instead
    low = (text.replace("\u0130", "i") if "\u0130" in text else text).lower()
    return _REPLACED.sub(_replace, low) if _REPLACED.search(low) else low


def _fold_char(code: int) -> str | None:
    low = chr(code).translate(_BEFORE_LOWER).lower()
    return low.translate(_EXTRA) if len(low) == 1 else None


_REPEATS: Final = (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT)


class _Run:
    """Walks one sequence, collecting the current literal run and finished clauses."""

    __slots__ = ("clauses", "run")

    def __init__(self) -> None:
        self.clauses: list[frozenset[str]] = []
        self.run = ""

    def end(self) -> None:
        if self.run:
            self.clauses.append(frozenset((self.run,)))
        self.run = ""

    def walk(self, items: Any) -> None:
        for op, av in items:
            if op is _c.LITERAL:
                ch = _fold_char(av)
                if ch is None:
                    self.end()
                else:
                    self.run += ch
            elif op is _c.SUBPATTERN:
                self.walk(av[3])
            elif op is _c.ATOMIC_GROUP:
                self.walk(av)
            elif op in _REPEATS:
                low, _high, item = av
                exact = _exact(item)
                if low >= 1 and exact:
                    # "ab+c": "ab" then "bc" are both in any match
                    self.run += exact
                    self.end()
                    self.run = exact
                else:
                    self.end()
                    if low >= 1:
                        self.clauses.extend(_clauses(item))
            elif op is _c.BRANCH:
                self.end()
                self.clauses.extend(_branch(av[1]))
            else:
                self.end()


def _exact(items: Any) -> str:
    """The folded text *items* always match exactly, or "" when it is not a plain literal."""
    out = ""
    for op, av in items:
        if op is _c.LITERAL and (ch := _fold_char(av)) is not None:
            out += ch
        elif op is _c.SUBPATTERN and (inner := _exact(av[3])):
            out += inner
        else:
            return ""
    return out


def _clauses(items: Any) -> list[frozenset[str]]:
    walker = _Run()
    walker.walk(items)
    walker.end()
    return walker.clauses


def _branch(alternatives: Any) -> list[frozenset[str]]:
    """One clause: each alternative's longest required string; none if one has nothing."""
    best: set[str] = set()
    for alternative in alternatives:
        found = [s for clause in _clauses(alternative) if len(clause) == 1 for s in clause]
        if not found:
            return []
        best.add(max(found, key=len))
    return [frozenset(best)]


def required(pattern: str) -> Clauses | None:
    """The clauses every match of *pattern* meets (see the module docstring)."""
    try:
        parsed = _parser.parse(pattern, re.IGNORECASE)
    except (re.error, RecursionError, OverflowError, ValueError, TypeError):
        return None
    try:
        found = _clauses(parsed)
    except RecursionError:
        return ()
    return tuple(dict.fromkeys(found))
