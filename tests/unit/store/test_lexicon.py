"""Cold lexicon segments: every lookup equals a scan of the vocabularies; damage is refused."""

from __future__ import annotations

from pathlib import Path

import msgpack
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.errors import CorruptRecord, SchemaVersionError
from store.lexicon import (
    BLOCK_TERMS,
    IN_ACTIVE,
    IN_ALL,
    LEXICON_VERSION,
    DigestVocabulary,
    LexiconSegment,
    encode_lexicon,
)

terms_ = st.sets(
    st.text(alphabet="abcdefghé_0123456789", min_size=1, max_size=6).map(
        lambda t: t.encode("utf-8")
    ),
    max_size=40,
)


def blob(terms: set[bytes]) -> bytes:
    return b"\n".join(sorted(terms))


def vocabularies(draw: st.DrawFn) -> list[tuple[set[bytes], set[bytes] | None]]:
    out: list[tuple[set[bytes], set[bytes] | None]] = []
    for _ in range(draw(st.integers(0, 12))):
        active = draw(terms_)
        branched = draw(st.booleans())
        # the all view usually extends the active one, but a size cap may cut either
        every = (active | draw(terms_)) - draw(terms_) if branched else None
        out.append((active, every))
    return out


@st.composite
def digests(draw: st.DrawFn) -> list[DigestVocabulary]:
    return [
        DigestVocabulary(f"{i:064x}.digest", blob(active), None if every is None else blob(every))
        for i, (active, every) in enumerate(vocabularies(draw))
    ]


def write(tmp: Path, data: bytes, name: str = "seg.lexicon") -> Path:
    path = tmp / name
    path.write_bytes(data)
    return path


def truth(ds: list[DigestVocabulary], term: bytes, flag: int) -> list[int]:
    out = []
    for i, d in enumerate(ds):
        view = d.active if flag == IN_ACTIVE or d.all_terms is None else d.all_terms
        if term in (view.split(b"\n") if view else []):
            out.append(i)
    return out


@settings(max_examples=150, deadline=None)
@given(ds=digests(), probes=st.lists(terms_, max_size=3))
def test_holders_equal_a_scan_of_every_vocabulary(
    tmp_path_factory: pytest.TempPathFactory, ds: list[DigestVocabulary], probes: list[set[bytes]]
) -> None:
    tmp = tmp_path_factory.mktemp("lex")
    data = encode_lexicon(ds)
    assert encode_lexicon(ds) == data  # deterministic: records are named by content
    lex = LexiconSegment(write(tmp, data))
    assert lex.digests == tuple(d.name for d in ds)
    every_term: set[bytes] = set()
    for d in ds:
        for b in (d.active, d.all_terms or b""):
            every_term.update(b.split(b"\n") if b else [])
    asked = every_term | {t for p in probes for t in p} | {b"", b"zzzzzzzz", b"\x00"}
    for term in asked:
        for flag in (IN_ACTIVE, IN_ALL):
            assert lex.holders(term, flag) == truth(ds, term, flag)
    walked = [t for t, _ in lex.iter_terms()]
    assert walked == sorted(every_term)
    assert lex.terms == len(every_term)
    lex.close()


def test_many_blocks_and_a_term_on_every_block_edge(tmp_path: Path) -> None:
    vocab = sorted(f"t{i:05d}".encode() for i in range(BLOCK_TERMS * 3 + 7))
    ds = [
        DigestVocabulary("a" * 64 + ".digest", b"\n".join(vocab[::2])),
        DigestVocabulary("b" * 64 + ".digest", b"\n".join(vocab[1::2])),
        DigestVocabulary("c" * 64 + ".digest", b"\n".join(vocab)),
    ]
    lex = LexiconSegment(write(tmp_path, encode_lexicon(ds)))
    for i, term in enumerate(vocab):
        assert lex.holders(term, IN_ACTIVE) == [i % 2, 2]
    assert lex.holders(b"t", IN_ACTIVE) == []
    assert lex.holders(b"u", IN_ALL) == []
    # prefix search crosses block edges and stops at the limit or the last match
    for prefix in (b"t", b"t001", b"t0012", b"t00", b"s", b"u", b""):
        every = [t for t in vocab if t.startswith(prefix)]
        assert lex.with_prefix(prefix, 10_000) == every
        assert lex.with_prefix(prefix, 5) == every[:5]


def test_an_empty_lexicon_answers_nothing(tmp_path: Path) -> None:
    lex = LexiconSegment(write(tmp_path, encode_lexicon([])))
    assert lex.digests == () and lex.holders(b"x", IN_ACTIVE) == []
    assert list(lex.iter_terms()) == []


def _damaged(data: bytes) -> list[bytes]:
    env = msgpack.unpackb(data, raw=False)
    header = env[3]
    out = [
        b"",
        data[: len(data) // 2],  # torn
        data[:-1],
        msgpack.packb([b"XXX", *env[1:]], use_bin_type=True),
        msgpack.packb([env[0], LEXICON_VERSION + 1, *env[2:]], use_bin_type=True),
        msgpack.packb([*env[:3], "not a map", env[4]], use_bin_type=True),
        msgpack.packb([*env[:3], {**header, "offsets": b"\x00" * 3}, env[4]], use_bin_type=True),
        msgpack.packb([*env[:3], header, b"\xff" + env[4][1:]], use_bin_type=True),  # bad zstd
    ]
    return out


def test_damaged_segments_are_refused_not_misread(tmp_path: Path) -> None:
    ds = [DigestVocabulary("a" * 64 + ".digest", b"alpha\nbeta\ngamma")]
    data = encode_lexicon(ds)
    for n, bad in enumerate(_damaged(data)):
        path = write(tmp_path, bad, f"bad{n}.lexicon")
        # (another version is refused as such: pipeline.upgrade derives it again)
        with pytest.raises((CorruptRecord, SchemaVersionError)):
            lex = LexiconSegment(path)
            lex.holders(b"beta", IN_ACTIVE)  # a damaged block shows when it is read


def test_tags_of_more_digests_than_four_nibbles_hold(tmp_path: Path) -> None:
    # Past 2**14 digests a posting tag needs eight nibbles while sorting.
    count = (1 << 14) + 3
    ds = [
        DigestVocabulary(f"{i:064x}.digest", b"shared\nt%d" % (i % 5), None if i % 2 else b"odd")
        for i in range(count)
    ]
    lex = LexiconSegment(write(tmp_path, encode_lexicon(ds)))
    assert lex.holders(b"shared", IN_ACTIVE) == list(range(count))
    assert lex.holders(b"shared", IN_ALL) == list(range(1, count, 2))
    assert lex.holders(b"odd", IN_ALL) == list(range(0, count, 2))
    assert lex.holders(b"t4", IN_ACTIVE) == list(range(4, count, 5))
    lex.close()


@pytest.mark.parametrize("term", [b"a\x00b", b"a\x01", b"\x1fz", b"tab\there"])
def test_a_term_with_a_control_character_is_refused(term: bytes) -> None:
    # Tokens are word characters; anything else would sort among the tags in the merge.
    ds = [DigestVocabulary("a" * 64 + ".digest", b"\n".join(sorted([b"fine", term])))]
    with pytest.raises(ValueError, match="control character"):
        encode_lexicon(ds)


def test_every_control_character_but_the_separator_is_refused_in_either_view() -> None:
    for c in range(0x20):
        if c == 0x0A:
            continue
        bad = b"x" + bytes([c]) + b"y"
        for active, every in ((bad, None), (b"fine", b"fine\n" + bad)):
            d = DigestVocabulary("b" * 64 + ".digest", active, every)
            with pytest.raises(ValueError, match="control character"):
                encode_lexicon([d])
    # word bytes and UTF-8 (every byte from 0x20 up) pass
    fine = b"\n".join(sorted({bytes([c]) + b"z" for c in range(0x20, 256)}))
    encode_lexicon([DigestVocabulary("c" * 64 + ".digest", fine)])
