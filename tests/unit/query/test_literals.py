"""Required literals of a regex: sound (every match holds them) and useful on real patterns."""

from __future__ import annotations

import re
import sys

from hypothesis import given, settings
from hypothesis import strategies as st

from query.literals import fold, required


def test_literals_of_everyday_patterns() -> None:
    assert required(r"qjjite7[a-z0-9]+") == (frozenset({"qjjite7"}),)
    assert required(r"dim[A-Z][a-z]+") == (frozenset({"dim"}),)
    assert required(r"ab+c") == (frozenset({"ab"}), frozenset({"bc"}))
    assert required(r"(foo|barbaz)Qux") == (frozenset({"foo", "barbaz"}), frozenset({"qux"}))
    assert required(r"(?:ERROR|warn(ing)?):\s+\d+") == (
        frozenset({"error", "warn"}),
        frozenset({":"}),
    )
    assert required(r"(?>atomic)x") == (frozenset({"atomicx"}),)
    assert required(r"(a)\1") == (frozenset({"a"}),)  # a backreference ends the run


def test_patterns_without_a_usable_literal() -> None:
    for pattern in (r".*", r"\d+", r"[a-z]{3}", r"(foo|)", r"(?=abc)", r"x*", r"a|b"):
        assert required(pattern) == (), pattern
    assert required("(unclosed") is None and required("[z-a]") is None


def test_fold_is_what_ignorecase_treats_as_equal() -> None:
    assert fold("ΟΔΟΣ") == fold("οδοσ") and fold("İx") == "ix"
    assert fold("\u017f") == "s" and fold("\u212a") == "k"  # long s, Kelvin sign
    cased = [chr(c) for c in range(0x3000) if chr(c).lower() != chr(c).upper()]
    for c in cased:
        rx = re.compile(re.escape(c), re.IGNORECASE)
        for t in {c.lower(), c.upper(), c.casefold(), c.title(), *cased[::97]}:
            if len(t) == 1 and rx.fullmatch(t) and len(fold(c)) == 1:
                assert fold(c) == fold(t), (c, t)


_ATOMS = st.sampled_from(
    ["a", "b", "k", "s", "σ", "ς", "Σ", "İ", "i", "ſ", "K", "ab", ".", "[ab]", r"\d", "x", " "]
)


@st.composite
def patterns(draw: st.DrawFn, depth: int = 0) -> str:
    parts = []
    for _ in range(draw(st.integers(1, 4))):
        kind = draw(st.integers(0, 5 if depth < 2 else 1))
        if kind <= 1:
            parts.append(draw(_ATOMS))
        elif kind == 2:
            parts.append(
                "("
                + draw(patterns(depth + 1))
                + ")"
                + draw(st.sampled_from(["", "+", "*", "?", "{2}", "{0,2}"]))
            )
        elif kind == 3:
            parts.append("(?:" + draw(patterns(depth + 1)) + "|" + draw(patterns(depth + 1)) + ")")
        elif kind == 4:
            parts.append(draw(_ATOMS) + draw(st.sampled_from(["+", "*", "?", "+?", "{1,3}"])))
        else:
            parts.append("(?>" + draw(patterns(depth + 1)) + ")")
    return "".join(parts)


@settings(max_examples=400, deadline=None)
@given(patterns(), st.lists(st.sampled_from(list("abkKsſσςΣİiı x1")), max_size=12).map("".join))
def test_every_match_holds_every_clause(pattern: str, text: str) -> None:
    clauses = required(pattern)
    assert clauses is not None
    for m in re.finditer(pattern, text, re.IGNORECASE):
        haystack = fold(text)
        for clause in clauses:
            assert any(s in haystack for s in clause), (pattern, text, m, clause)


def test_deep_nesting_is_no_literal_or_invalid() -> None:
    deep = "(" * (sys.getrecursionlimit()) + "a" + ")" * (sys.getrecursionlimit())
    assert required(deep) in (None, (), (frozenset({"a"}),))
