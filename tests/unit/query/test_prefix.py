"""Prefix terms ``term*``: expanded over the sorted vocabularies, bounded, named when cut."""

from __future__ import annotations

from pathlib import Path

import pytest

from query.errors import InvalidArgument
from query.prefix import MAX_EXPANSIONS, prefixes_of
from query.vocabulary import TermIndex
from tests.helpers import header, user
from tests.unit.query.kit import CWD, T0, Kit


def test_the_merged_term_index_lists_terms_by_prefix() -> None:
    index = TermIndex([b"ab\nabc\nb", b"abd\nac", b""])
    assert index.with_prefix(b"ab", 10) == [b"ab", b"abc", b"abd"]
    assert index.with_prefix(b"ab", 2) == [b"ab", b"abc"]
    assert index.with_prefix(b"b", 10) == [b"b"] and index.with_prefix(b"c", 10) == []
    assert index.with_prefix(b"", 10) == [b"ab", b"abc", b"abd", b"ac", b"b"]


def test_which_words_are_prefixes() -> None:
    assert prefixes_of("optim* cache", "any") == ("optim",)
    assert prefixes_of("src/Foo** foo*", "any") == ("foo",)
    assert prefixes_of("* .* a.* plain", "any") == ()
    with pytest.raises(InvalidArgument, match="queryMatch any"):
        prefixes_of("optim* cache", "all")


@pytest.mark.parametrize("hot", [10, 0], ids=["hot", "cold"])
def test_prefix_finds_the_terms_it_begins_and_exact_stays_exact(tmp_path: Path, hot: int) -> None:
    kit = Kit(tmp_path / "k", hotSessions=hot)
    try:
        kit.session("a", [header("a", CWD), user("u", None, "optimize the loop", T0)], mtime_s=30)
        kit.session("b", [header("b", CWD), user("u", None, "an optimizer pass", T0)], mtime_s=20)
        kit.session("c", [header("c", CWD), user("u", None, "opt out of it", T0)], mtime_s=10)
        words = " ".join(f"zz{i:03d}" for i in range(MAX_EXPANSIONS + 5))
        kit.session("d", [header("d", CWD), user("u", None, words, T0)], mtime_s=5)
        kit.build()

        def found(query: str) -> tuple[set[str], list[str]]:
            page = kit.recall(query=query, scope="project")
            return {h["sessionId"] for h in page["hits"]}, page["coverage"]["reasons"]

        assert found("optim*")[0] == {"pi:a", "pi:b"}
        assert found("optim")[0] == set()  # without the star a token is exact
        assert found("optimizer*")[0] == {"pi:b"}
        sessions, reasons = found("zz*")
        assert sessions == {"pi:d"} and "prefix_expansion_limit" in reasons
        assert "prefix_expansion_limit" not in found("optim*")[1]
        with pytest.raises(InvalidArgument, match="queryMatch any"):
            kit.recall(query="optim* loop", queryMatch="all", scope="project")
    finally:
        kit.close()
