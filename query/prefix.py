"""Prefix terms (``optim*``) in literal mode: a documented extension of exact tokens.

A whitespace-separated word of a literal query that ends in ``*`` right after a word
character makes its last token a prefix; every other token stays exact. Before the search, a
prefix becomes the terms that start with it, taken in byte order from the sorted
vocabularies the query can see — the hot terms, the cold lexicon's segments (or the merged
term index), and the vocabularies of cold digests no lexicon covers — at most
``MAX_EXPANSIONS`` of them per prefix. Past that bound the answer says
``prefix_expansion_limit``: later terms (in byte order) were not searched.

Expansions are ordinary exact terms afterwards, so the search and its scoring are unchanged;
``queryMatch: all`` would need "any one of these terms" per prefix, which scoring does not
express, so it rejects prefixes with a clear error.
"""

from __future__ import annotations

import bisect
import itertools
import re
from collections.abc import Iterable, Iterator, Sequence
from typing import Final

from query.errors import InvalidArgument
from query.generation import ColdSession, HotIndex, RecordUnavailable
from query.lexicon import ColdLexicon
from query.vocabulary import TermIndex, blob_terms
from store.tokens import tokenize

__all__ = ["MAX_EXPANSIONS", "expand", "prefixes_of"]

MAX_EXPANSIONS: Final = 64
_STARRED = re.compile(r"\w\*+$")


def prefixes_of(query: str, match: str) -> tuple[str, ...]:
    """The prefix terms of a literal *query* (its starred words' last tokens)."""
    found: list[str] = []
    for word in query.split():
        if _STARRED.search(word):
            tokens = tokenize(word)
            if tokens:
                found.append(tokens[-1])
    if found and match == "all":
        raise InvalidArgument("recall prefix terms (term*) need queryMatch any")
    return tuple(dict.fromkeys(found))


# The sorted hot terms of the last hot index asked (held, so the identity stays valid).
_HOT_TERMS: list[tuple[HotIndex, list[str]]] = []


def _hot_terms(index: HotIndex) -> list[str]:
    if _HOT_TERMS and _HOT_TERMS[0][0] is index:
        return _HOT_TERMS[0][1]
    terms = sorted(set().union(*(s.postings.keys() for s in index.shards)))
    _HOT_TERMS[:] = [(index, terms)]
    return terms


def _from_sorted(terms: Sequence[str], prefix: str) -> Iterator[str]:
    for i in range(bisect.bisect_left(terms, prefix), len(terms)):
        if not terms[i].startswith(prefix):
            return
        yield terms[i]


def _decoded(terms: Iterable[bytes]) -> Iterator[str]:
    return (t.decode("utf-8", "replace") for t in terms)


def expand(
    prefix: str,
    *,
    hot: HotIndex | None,
    cold: Sequence[ColdSession],
    lexicon: ColdLexicon | None,
    term_index: TermIndex | None,
) -> tuple[list[str], bool]:
    """Up to ``MAX_EXPANSIONS`` terms starting with *prefix* (byte order), and False when
    more exist."""
    raw = prefix.encode("utf-8")
    found: set[str] = set()
    sources: list[Iterable[str]] = []
    if hot is not None:
        sources.append(_from_sorted(_hot_terms(hot), prefix))
    if lexicon is not None:
        sources.extend(
            _decoded(seg.with_prefix(raw, MAX_EXPANSIONS + 1)) for seg in lexicon.segments
        )
    if term_index is not None:
        sources.append(_decoded(term_index.with_prefix(raw, MAX_EXPANSIONS + 1)))
    for c in cold:
        if (lexicon is not None and c.name in lexicon.covered) or term_index is not None:
            continue
        try:
            vocabulary = blob_terms(c.vocabulary)
        except RecordUnavailable:
            continue  # the search notes the unreadable digest itself
        sources.append(_decoded(_bytes_from_sorted(vocabulary, raw)))
    # Each source is sorted, so the first MAX_EXPANSIONS + 1 of each hold the first of the
    # union in byte order (and tell whether there are more).
    for source in sources:
        found.update(itertools.islice(source, MAX_EXPANSIONS + 1))
    ordered = sorted(found, key=lambda t: t.encode("utf-8", "surrogatepass"))
    return ordered[:MAX_EXPANSIONS], len(ordered) <= MAX_EXPANSIONS


def _bytes_from_sorted(terms: Sequence[bytes], prefix: bytes) -> Iterator[bytes]:
    for i in range(bisect.bisect_left(terms, prefix), len(terms)):
        if not terms[i].startswith(prefix):
            return
        yield terms[i]
