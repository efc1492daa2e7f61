"""The one canonical tokenizer: NFKC, runs of letters/numbers/_, lowercased."""

from __future__ import annotations

import re
import unicodedata

from hypothesis import given
from hypothesis import strategies as st

from store.tokens import normalize_text, term_counts, term_set, tokenize, unique_terms


def reference(text: str) -> list[str]:
    # the seed's definition spelled out: NFKC, [\p{L}\p{N}_]+, then lowercase each token
    out: list[str] = []
    run: list[str] = []
    for ch in unicodedata.normalize("NFKC", text):
        cat = unicodedata.category(ch)
        if cat[0] in "LN" or ch == "_":
            run.append(ch)
        elif run:
            out.append("".join(run).lower())
            run = []
    if run:
        out.append("".join(run).lower())
    return out


def test_paths_stay_literal_terms() -> None:
    assert tokenize("src/foo.ts") == ["src", "foo", "ts"]
    assert unique_terms('"Use CEF" "Stage 1" use') == ["use", "cef", "stage", "1"]


def test_nfkc_case_and_marks() -> None:
    assert tokenize("ﬁle Ｆｕｌｌ１２") == ["file", "full12"]
    assert tokenize("snake_case MixedCase") == ["snake_case", "mixedcase"]
    assert tokenize("e\u0301t\u00e9") == ["\u00e9t\u00e9"]  # NFKC composes e + acute
    assert tokenize("a\u0903b") == ["a", "b"]  # a spacing mark (Mc) splits
    assert tokenize("İstanbul") == ["i̇stanbul"]  # lowercased after matching, as JS does
    assert tokenize("") == [] and tokenize("... --- ...") == []


def test_counts_and_phrase_form() -> None:
    counts, length = term_counts("a b a")
    assert counts == {"a": 2, "b": 1} and length == 3
    assert normalize_text("Ｈｅｌｌｏ World") == "hello world"


@given(st.text())
def test_matches_the_seed_definition(text: str) -> None:
    assert tokenize(text) == reference(text)


@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_fast_path_equals_the_general_path(text: str) -> None:
    general = [t.lower() for t in re.findall(r"\w+", unicodedata.normalize("NFKC", text))]
    assert tokenize(text) == general


def test_context_sensitive_lowercasing_takes_the_token_by_token_path() -> None:
    # final sigma depends on what follows the token; İ lowercases to two code points
    assert tokenize("ΑΣ'Β") == ["ας", "β"]
    assert tokenize("ΟΔΟΣ x") == ["οδος", "x"]
    assert tokenize("İi") == ["i̇i"]


@given(st.text(alphabet=st.sampled_from(list("ΑΣσςΒ'’ .İi1_aé\u0301"))))
def test_greek_and_turkish_edge_text_matches_the_seed_definition(text: str) -> None:
    assert tokenize(text) == reference(text)


def reference_set(texts: list[str]) -> set[bytes]:
    return {t.encode("utf-8") for text in texts for t in reference(text)}


# Characters where a byte-level split could go wrong: ASCII that composes with a following mark
# under NFKC, compatibility forms that become ASCII, marks, final sigma, dotted I, a lone
# surrogate, multi-byte non-word characters, and ASCII word and non-word bytes.
EDGES = list("<>=\u0338\u0301ﬁＡ１①…→✓ΑΣσςİiIé_aZ9 -\n\t\x00") + ["\ud800", "\U0001f600", "中"]


@given(st.lists(st.text(), max_size=4))
def test_term_set_is_the_set_of_every_token(texts: list[str]) -> None:
    assert term_set(texts) == reference_set(texts)


@given(st.lists(st.text(alphabet=st.sampled_from(EDGES)), max_size=4))
def test_term_set_on_edge_characters(texts: list[str]) -> None:
    assert term_set(texts) == reference_set(texts)


def test_term_set_examples() -> None:
    assert term_set([]) == set() and term_set(["", "--"]) == set()
    assert term_set(["Hello wORLD_1", "hello"]) == {b"hello", b"world_1"}
    assert term_set(["na\u00efve caf\u00e9\u2192OK"]) == {b"na\xc3\xafve", b"caf\xc3\xa9", b"ok"}
    assert term_set(["<\u0338 =\u0338"]) == set()  # NFKC makes both one symbol, no token
    assert term_set(["ΟΔΟΣ x", "x\ud800y"]) == {"οδος".encode(), b"x", b"y"}
    assert term_set(["ﬁle Ｆｕｌｌ１２"]) == {b"file", b"full12"}
    assert term_set(["  12\u2192def x\u2192\u0338y"]) == {b"12", b"def", b"x", b"y"}
