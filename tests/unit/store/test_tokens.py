"""The one canonical tokenizer: NFKC, runs of letters/numbers/_, lowercased, CJK bigrams."""

from __future__ import annotations

import random
import re
import unicodedata

from hypothesis import given, settings
from hypothesis import strategies as st

from store.tokens import (
    _CJK_RANGES,
    _SPLIT_TABLE,
    _wide_chunks,
    normalize_text,
    term_counts,
    term_set,
    tokenize,
    unique_terms,
)

# Each example is microseconds of work, but the spelled-out reference looks up every
# character's Unicode name, and a loaded machine can stall one call past hypothesis's 200 ms
# deadline: no test may depend on machine load.
UNTIMED = settings(deadline=None)


def is_cjk(ch: str) -> bool:
    return any(a <= ord(ch) <= b for a, b in _CJK_RANGES)


def is_hangul(ch: str) -> bool:
    # by the character's Unicode name: syllables, jamo, compatibility letters
    return unicodedata.name(ch, "").startswith("HANGUL ")


def hangul_cut(token: str) -> list[str]:
    # the Korean extension spelled out: cut where Hangul meets a character that is not
    out: list[str] = []
    for ch in token:
        if out and is_hangul(ch) == is_hangul(out[-1][-1]):
            out[-1] += ch
        else:
            out.append(ch)
    return out


def bigrams(token: str) -> list[str]:
    # the extension spelled out character by character: CJK runs of a token become bigrams
    out: list[str] = []
    piece = ""
    for ch in token + "\0":
        if piece and (ch == "\0" or is_cjk(ch) != is_cjk(piece[0])):
            if is_cjk(piece[0]) and len(piece) > 1:
                out.extend(piece[i] + piece[i + 1] for i in range(len(piece) - 1))
            else:
                out.append(piece)
            piece = ""
        piece += ch
    return out


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
    return [b for t in out for h in hangul_cut(t) for b in bigrams(h)]


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


@UNTIMED
@given(st.text())
def test_matches_the_seed_definition(text: str) -> None:
    assert tokenize(text) == reference(text)


@UNTIMED
@given(st.text(alphabet=st.characters(max_codepoint=127)))
def test_ascii_fast_path_equals_the_general_path(text: str) -> None:
    general = [t.lower() for t in re.findall(r"\w+", unicodedata.normalize("NFKC", text))]
    assert tokenize(text) == general


def test_the_ascii_byte_table_splits_at_every_non_word_character() -> None:
    # every ASCII character between two words, and runs of them: the table's split gives
    # what \w+ gives (control characters, \x1c-\x1f that str.split also splits at, "_")
    every = "".join(chr(c) for c in range(128))
    text = "".join(f"Ab{chr(c)}9z" for c in range(128)) + every + "x__Y " + every[::-1]
    assert tokenize(text) == re.findall(r"\w+", text.lower())
    assert tokenize("\x1cA\x1dB\x1e_\x1f") == ["a", "b", "_"]


def test_context_sensitive_lowercasing_takes_the_token_by_token_path() -> None:
    # final sigma depends on what follows the token; İ lowercases to two code points
    assert tokenize("ΑΣ'Β") == ["ας", "β"]
    assert tokenize("ΟΔΟΣ x") == ["οδος", "x"]
    assert tokenize("İi") == ["i̇i"]


@UNTIMED
@given(st.text(alphabet=st.sampled_from(list("ΑΣσςΒ'’ .İi1_aé\u0301"))))
def test_greek_and_turkish_edge_text_matches_the_seed_definition(text: str) -> None:
    assert tokenize(text) == reference(text)


def reference_set(texts: list[str]) -> set[bytes]:
    return {t.encode("utf-8") for text in texts for t in reference(text)}


# Characters where a byte-level split could go wrong: ASCII that composes with a following mark
# under NFKC, compatibility forms that become ASCII, marks, final sigma, dotted I, a lone
# surrogate, multi-byte non-word characters, and ASCII word and non-word bytes.
EDGES = list("<>=\u0338\u0301ﬁＡ１①…→✓ΑΣσςİiIé_aZ9 -\n\t\x00") + ["\ud800", "\U0001f600", "中"]
# Chinese, Japanese (kana, the prolonged sound mark, halfwidth katakana, a compatibility
# ideograph, an extension-B ideograph), Korean, and what sits beside them.
CJK_EDGES = list("中文技術スタックーｽﾀひらがな々〇한국어豈a1_ -。、\u3099") + ["\U00020000"]


@UNTIMED
@given(st.lists(st.text(), max_size=4))
def test_term_set_is_the_set_of_every_token(texts: list[str]) -> None:
    assert term_set(texts) == reference_set(texts)


@UNTIMED
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


@UNTIMED
@given(st.lists(st.text(alphabet=st.sampled_from(CJK_EDGES)), max_size=4))
def test_term_set_and_tokenize_agree_on_cjk_text(texts: list[str]) -> None:
    assert term_set(texts) == reference_set(texts)
    for text in texts:
        assert tokenize(text) == reference(text)


def test_hangul_is_cut_from_another_script_and_nothing_else() -> None:
    assert tokenize("GitHub Pages를 활성화") == ["github", "pages", "를", "활성화"]
    assert tokenize("README를 만들어줘 x1가") == ["readme", "를", "만들어줘", "x1", "가"]
    assert tokenize("서브에이전트로 팩트체크") == ["서브에이전트로", "팩트체크"]  # no stemming
    assert term_set(["Pages를"]) == {b"pages", "를".encode()}


def test_chinese_and_japanese_runs_become_bigrams() -> None:
    assert tokenize("技術スタック 更新") == ["技術", "術ス", "スタ", "タッ", "ック", "更新"]
    assert tokenize("优化 readme") == ["优化", "readme"]
    assert tokenize("优化README文") == ["优化", "readme", "文"]  # one-character run kept
    assert tokenize("データー") == ["デー", "ータ", "ター"]
    assert tokenize("ｽﾀｯｸ") == ["スタ", "タッ", "ック"]  # NFKC first: halfwidth katakana
    assert tokenize("中、文。") == ["中", "文"]  # punctuation still splits
    assert unique_terms("東京 東京都") == ["東京", "京都"]


def test_korean_keeps_its_space_separated_words() -> None:
    assert tokenize("한국어 텍스트 검색") == ["한국어", "텍스트", "검색"]


def test_the_cjk_table_holds_exactly_the_scripts_it_names() -> None:
    # Python has no script property; character names say the same for these scripts.
    named = ("CJK UNIFIED IDEOGRAPH", "CJK COMPATIBILITY IDEOGRAPH", "HIRAGANA", "KATAKANA")
    for cp in range(0x323B0):
        ch = chr(cp)
        if not (ch.isalnum() and unicodedata.normalize("NFKC", ch) == ch):
            continue  # only word characters that survive NFKC reach the split
        name = unicodedata.name(ch, "")
        if name.startswith(named):
            assert is_cjk(ch), name
        elif is_cjk(ch):
            allowed = ("IDEOGRAPHIC", "HANGZHOU", "VERTICAL", "HENTAIGANA", "OLD CHINESE")
            assert name.startswith(allowed), name


@UNTIMED
@given(st.text(alphabet=st.one_of(st.characters(), st.sampled_from(CJK_EDGES))))
def test_term_set_is_tokenize_on_arbitrary_text(text: str) -> None:
    assert term_set([text]) == {t.encode("utf-8") for t in tokenize(text)}


_ASCII_WORDS = st.lists(st.text(alphabet="abcXYZ019_ .,-\n\t", max_size=8), max_size=40)
_WIDE = ["é", "café", "naïve✓", "✓", "技術", "한국어", "Ⅻ", "x\u0301"]
_WIDE_WORDS = st.lists(st.sampled_from(_WIDE), max_size=6)


@UNTIMED
@given(_ASCII_WORDS, _WIDE_WORDS, st.randoms(use_true_random=False))
def test_the_few_chunks_past_ascii_are_cut_out_as_a_test_per_chunk_finds_them(
    plain: list[str], wide: list[str], rnd: random.Random
) -> None:
    # mostly ASCII with a few other characters anywhere (first, last, between separators):
    # the walk over the marked bytes; many of them: the test of every chunk
    words = plain + wide
    rnd.shuffle(words)
    text = " ".join(words)
    data = text.encode("utf-8").translate(_SPLIT_TABLE)
    chunks = set(data.split())
    assert _wide_chunks(data, chunks) == {c for c in chunks if not c.isascii()}
    assert term_set([text]) == {t.encode() for t in tokenize(text)}


def test_a_chunk_past_ascii_at_either_end_of_the_text_is_found() -> None:
    base = " ".join(f"w{i}" for i in range(50))  # few bytes past ASCII: the walk is taken
    for text in (f"é {base}", f"{base} é", f"{base} abc\u2713", f"\u2713abc {base}", "é abc"):
        data = text.encode("utf-8").translate(_SPLIT_TABLE)
        chunks = set(data.split())
        assert _wide_chunks(data, chunks) == {c for c in chunks if not c.isascii()}, text
        assert term_set([text]) == {t.encode() for t in tokenize(text)}, text
