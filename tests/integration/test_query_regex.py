"""Explicit regex runs in a worker process that is killed at the hard timeout."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from query.regex import RegexLimits, RegexRunner
from tests.helpers import header, user
from tests.unit.query.kit import CWD, T0, Kit

pytestmark = pytest.mark.integration


@pytest.fixture
def runner() -> Iterator[RegexRunner]:
    # The clock covers the search only (not the worker's start or the compile) and counts
    # the worker's CPU time: a trivial search meets 250 ms on a loaded machine, backtracking
    # never does.
    r = RegexRunner(RegexLimits(timeout_ms=250))
    yield r
    r.close()


def test_catastrophic_backtracking_is_killed_and_the_runner_recovers(runner: RegexRunner) -> None:
    first = runner.run("b+", ["abba"])
    assert first.matched == (0,), first.error  # warm worker: time only the kill
    started = time.monotonic()
    outcome = runner.run("(a+)+$", ["a" * 80_000 + "b"])
    elapsed = time.monotonic() - started
    assert outcome.error is not None and outcome.error["code"] == "regex_timeout"
    assert outcome.matched == ()
    assert elapsed < 20.0  # 250 ms of CPU + kill; generous for a loaded CI machine
    assert runner.run("needle", ["hay", "a needle", "NEEDLE"]).matched == (1, 2)


def test_a_cold_worker_and_the_compile_are_not_on_the_clock() -> None:
    # 1 ms is less than an interpreter takes to start: the first query still answers, and a
    # pattern that does not compile is invalid_regex, never a timeout.
    r = RegexRunner(RegexLimits(timeout_ms=1))
    try:
        for _ in range(3):
            bad = r.run("(unclosed", ["x"])
            assert bad.error is not None and bad.error["code"] == "invalid_regex"
    finally:
        r.close()


def test_a_killed_worker_is_replaced_before_the_next_query(runner: RegexRunner) -> None:
    assert runner.run("(a+)+$", ["a" * 80_000 + "b"]).error is not None
    successor = runner._worker
    assert successor is not None and successor.alive
    assert runner.run("b+", ["abba", "x"]).matched == (0,)
    assert runner._worker is successor


def test_invalid_and_oversized_patterns(runner: RegexRunner) -> None:
    bad = runner.run("(unclosed", ["x"])
    assert bad.error is not None and bad.error["code"] == "invalid_regex"
    small = RegexRunner(RegexLimits(max_pattern_bytes=4))
    try:
        big = small.run("abcde", ["x"])
        assert big.error == {
            "code": "regex_pattern_too_large",
            "message": "Regex pattern is 5 bytes; limit is 4.",
        }
    finally:
        small.close()
    assert runner.run("x", ["x"]).matched == (0,)


def test_recall_reports_regex_limits_as_coverage(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "k", regexTimeoutMs=250)
    try:
        kit.session(
            "s",
            [
                header("s", CWD),
                user("u", None, "a" * 80_000 + "b", T0),
                user("v", "u", "code 42", T0 + 1),
            ],
        )
        kit.session("t", [header("t", CWD), user("u", None, "other", T0)], mtime_s=10)
        kit.build()
        ok = kit.recall(query=r"code \d+", queryMode="regex", scope="session")
        assert [h["index"] for h in ok["hits"]] == [1] and ok["coverage"]["complete"] is True
        slow = kit.recall(query="(a+)+$", queryMode="regex", scope="session")
        assert slow["hits"] == [] and slow["total"] == 0
        assert slow["coverage"]["complete"] is False
        assert slow["coverage"]["reasons"] == ["regex_timeout"]
        assert slow["coverage"]["error"]["code"] == "regex_timeout"
        again = kit.recall(query=r"code \d+", queryMode="regex", scope="session")
        assert again["coverage"]["complete"] is True
        invalid = kit.recall(query="(?<name>x)", queryMode="regex", scope="session")
        assert invalid["coverage"]["error"]["code"] == "invalid_regex"
        # The limits apply to candidates: a pattern's literal picks the one entry holding it,
        # and a pattern without one is capped by the whole scope.
        kit.configure(regexMaxHaystackTerms=1)
        capped = kit.recall(query=r"\w+", queryMode="regex", scope="project")
        assert "regex_max_haystack_terms" in capped["coverage"]["reasons"]
        picked = kit.recall(query="oth[e]r", queryMode="regex", scope="project")
        assert picked["total"] == 1 and picked["coverage"]["reasons"] == ["max_entry_chars"]
        kit.configure(regexMaxHaystackTerms=20_000, regexMaxHaystackBytes=1024)
        capped = kit.recall(query=r"\w+", queryMode="regex", scope="project")
        assert "regex_max_haystack_bytes" in capped["coverage"]["reasons"]
        picked = kit.recall(query="code", queryMode="regex", scope="project")
        assert picked["total"] == 1 and picked["coverage"]["reasons"] == ["max_entry_chars"]
    finally:
        kit.close()


def test_cold_regex_haystack_is_the_vocabulary(tmp_path: Path) -> None:
    kit = Kit(tmp_path / "k", hotSessions=0)
    try:
        kit.session("a", [header("a", CWD), user("u", None, "zebra crossing", T0)], mtime_s=20)
        kit.session("b", [header("b", CWD), user("u", None, "zebras and zeal", T0)], mtime_s=10)
        kit.build()
        page = kit.recall(query="^ze", queryMode="regex", scope="project")
        scores = {h["sessionId"]: (h["score"], h["matchedTerms"]) for h in page["hits"]}
        assert scores == {"pi:a": (1, 1), "pi:b": (2, 2)}
        assert all(h["kind"] == "session" for h in page["hits"])
        # a prose phrase spans terms: the vocabulary cannot match it
        assert kit.recall(query="zebra crossing", queryMode="regex", scope="project")["total"] == 0
    finally:
        kit.close()


@pytest.mark.parametrize("hot", [10, 0], ids=["hot", "cold"])
def test_candidates_by_literal_find_what_the_pattern_matches(tmp_path: Path, hot: int) -> None:
    kit = Kit(tmp_path / "k", hotSessions=hot, regexMaxHaystackTerms=2)
    try:
        kit.session("g", [header("g", CWD), user("u", None, "ΟΔΟΣ and Straße", T0)], mtime_s=30)
        kit.session("p", [header("p", CWD), user("u", None, "planted qjabcdefgh1", T0)], mtime_s=20)
        words = " ".join(f"filler{i}" for i in range(50))
        kit.session("f", [header("f", CWD), user("u", None, words, T0)], mtime_s=10)
        kit.build()

        def hits(pattern: str) -> tuple[list[str], list[str]]:
            page = kit.recall(query=pattern, queryMode="regex", scope="project")
            return [h["sessionId"] for h in page["hits"]], page["coverage"]["reasons"]

        # 2 haystacks at most, 3 entries or 50+ terms in scope: only candidates fit
        assert hits(r"qjabcde[a-z0-9]+") == (["pi:p"], [])
        assert hits(r"οδοσ")[0] == ["pi:g"]  # σ and ς are one letter under IGNORECASE
        assert hits(r"STRA(ss|ß)e")[0] == ["pi:g"]
        assert hits(r"nowhere\d")[0] == []
        assert "regex_max_haystack_terms" in hits(r"\w+")[1]  # no literal: the whole scope
    finally:
        kit.close()
