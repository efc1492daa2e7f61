"""Seeded text: a Zipf-weighted pseudo-word lexicon and the prose, code and logs built from it.

No generated string ever holds the letter pair ``qj``: lexicon words use ``q`` only as ``qu``,
and the opaque alphabets leave out ``q`` and ``Q``. Planted terms all start with ``qj``
(``devtools.corpus.terms``), so they are unique in the corpus by construction, not by luck.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Sequence

__all__ = ["OPAQUE_ALPHABET", "Lexicon", "Text"]


# Common English and programming words take the top Zipf ranks, as they do in real sessions.
def _split(words: str) -> tuple[str, ...]:
    return tuple(words.split())


_COMMON = _split(
    "the to a of and in is it that for we this you be on with as not are can file test "
    "error if or but so now let me will from by at use should check run need then add fix "
    "function value type return line code change update build new all one when which there "
    "make just also have was what see like case path config default data result output "
    "input name list set get call user session index cache query request queue sequence "
    "unique equal quick quite require server client module import export tests failing "
    "passes branch commit diff merge parser token entry record field number string object "
    "array empty missing null true false async await promise handler event stream buffer "
    "write read edit patch log warn debug trace info status option flag command script"
)

_ONSETS = (
    *_split(
        "b c d f g h j k l m n p r s t v w x z br ch cl dr fl fr gl gr kr pl pr sh sk sl sn sp"
    ),
    *_split("st sw th tr vl zh"),
    "",
)
_NUCLEI = _split("a e i o u y ai au ea ee ei ie io oa oo ou")
_CODAS = ("", "", "", "n", "r", "s", "t", "l", "m", "k", "x", "nd", "rt", "st", "ng", "sh")
_ACCENTS = {"a": "á", "e": "é", "i": "í", "o": "ö", "u": "ü", "n": "ñ", "c": "ç"}

# 62 symbols, no q/Q: base64's look without its "q".
OPAQUE_ALPHABET = "ABCDEFGHIJKLMNOPRSTUVWXYZabcdefghijklmnoprstuvwxyz0123456789+/"
_OPAQUE_TABLE = bytes(ord(OPAQUE_ALPHABET[i % len(OPAQUE_ALPHABET)]) for i in range(256))
_ALNUM = "ABCDEFGHIJKLMNOPRSTUVWXYZabcdefghijklmnoprstuvwxyz0123456789"
_ALNUM_TABLE = bytes(ord(_ALNUM[i % len(_ALNUM)]) for i in range(256))

_CJK_RANGES = ((0x4E00, 0x9FA5), (0x3041, 0x3093), (0xAC00, 0xD7A3))
_WORD_BATCH = 4096


def _syllable(rng: random.Random) -> str:
    return rng.choice(_ONSETS) + rng.choice(_NUCLEI) + rng.choice(_CODAS)


def pseudo_word(rng: random.Random, syllables: int) -> str:
    """A pronounceable non-word (never containing ``q``)."""
    return "".join(_syllable(rng) for _ in range(syllables))


class Lexicon:
    """A fixed vocabulary with Zipf weights (rank r has weight 1/(r+2.7)^1.05)."""

    __slots__ = ("cum_weights", "words")

    def __init__(self, rng: random.Random, size: int = 30_000) -> None:
        words = list(dict.fromkeys(_COMMON))
        seen = set(words)
        while len(words) < size:
            word = pseudo_word(rng, rng.choice((1, 1, 2, 2, 2, 3, 3, 4)))
            if rng.random() < 0.03:
                word = "".join(_ACCENTS.get(ch, ch) if rng.random() < 0.3 else ch for ch in word)
            if len(word) > 1 and word not in seen:
                seen.add(word)
                words.append(word)
        head, tail = words[: len(_COMMON)], words[len(_COMMON) :]
        # Shorter words are more frequent in real text: sort the tail by a noisy length.
        tail.sort(key=lambda w: len(w) + rng.random() * 4)
        self.words: tuple[str, ...] = tuple(head + tail)
        self.cum_weights: tuple[float, ...] = tuple(
            itertools.accumulate(1.0 / (rank + 2.7) ** 1.05 for rank in range(len(self.words)))
        )


class Text:
    """One session's text source: the shared lexicon drawn with the session's own RNG."""

    __slots__ = ("_buffer", "_lexicon", "_pos", "rng")

    def __init__(self, lexicon: Lexicon, rng: random.Random) -> None:
        self._lexicon = lexicon
        self.rng = rng
        self._buffer: list[str] = []
        self._pos = 0

    # -- words -----------------------------------------------------------------------------

    def words(self, n: int) -> list[str]:
        """``n`` Zipf-distributed lexicon words."""
        if self._pos + n > len(self._buffer):
            lex = self._lexicon
            self._buffer = self._buffer[self._pos :] + self.rng.choices(
                lex.words, cum_weights=lex.cum_weights, k=max(_WORD_BATCH, n)
            )
            self._pos = 0
        out = self._buffer[self._pos : self._pos + n]
        self._pos += n
        return out

    def word(self) -> str:
        return self.words(1)[0]

    def plain_word(self) -> str:
        """A lexicon word in plain ASCII (for names that end up in directory names)."""
        while not (word := self.word()).isascii():
            pass
        return word

    def fresh_word(self) -> str:
        """A word outside the lexicon: rare words keep the vocabulary growing like real text."""
        return pseudo_word(self.rng, self.rng.randint(2, 4))

    def identifier(self) -> str:
        parts = self.words(self.rng.randint(2, 3))
        style = self.rng.random()
        if style < 0.45:
            return "_".join(parts)
        if style < 0.9:
            return parts[0] + "".join(p.capitalize() for p in parts[1:])
        return "".join(p.capitalize() for p in parts)

    def cjk(self) -> str:
        lo, hi = self.rng.choice(_CJK_RANGES)
        return "".join(chr(self.rng.randint(lo, hi)) for _ in range(self.rng.randint(2, 7)))

    # -- prose -----------------------------------------------------------------------------

    def sentence(self) -> str:
        rng = self.rng
        words = self.words(rng.randint(4, 20))
        roll = rng.random()
        if roll < 0.12:
            words.insert(rng.randrange(len(words)), f"`{self.identifier()}`")
        elif roll < 0.2:
            words.insert(rng.randrange(len(words)), self.fresh_word())
        elif roll < 0.26:
            words.insert(rng.randrange(len(words)), str(rng.randint(0, 5000)))
        elif roll < 0.28:
            words.append(self.cjk())
        first = words[0]
        words[0] = first[:1].upper() + first[1:]
        return " ".join(words) + rng.choice(".....?!:")

    def paragraph(self, sentences: int) -> str:
        return " ".join(self.sentence() for _ in range(sentences))

    def prose(self, chars: int, *, markdown: bool = False) -> str:
        """Paragraphs (and, with ``markdown``, headings, bullets and fences) of about ``chars``."""
        rng = self.rng
        parts: list[str] = []
        size = 0
        while size < chars:
            roll = rng.random() if markdown else 1.0
            if roll < 0.08:
                block = "## " + " ".join(self.words(rng.randint(2, 5))).capitalize()
            elif roll < 0.22:
                block = "\n".join(f"- {self.sentence()}" for _ in range(rng.randint(2, 5)))
            elif roll < 0.28:
                block = "```\n" + "\n".join(self.code_line() for _ in range(rng.randint(2, 8)))
                block += "\n```"
            else:
                block = self.paragraph(rng.randint(1, 5))
            parts.append(block)
            size += len(block) + 2
        return "\n\n".join(parts)

    def short(self, lo: int = 3, hi: int = 9) -> str:
        return " ".join(self.words(self.rng.randint(lo, hi)))

    # -- code and logs ---------------------------------------------------------------------

    def code_line(self) -> str:
        rng = self.rng
        w = self.words(4)
        ident = self.identifier()
        pick = rng.randrange(14)
        if pick == 0:
            return f"def {ident}({w[0]}, {w[1]}={w[2]!r}):"
        if pick == 1:
            return f"    {w[0]} = {ident}({w[1]}, {w[2]})"
        if pick == 2:
            return f"    if not {w[0]}:\n        return {w[1]}"
        if pick == 3:
            return f"export async function {ident}({w[0]}: {w[1].capitalize()}) {{"
        if pick == 4:
            return f"  const {w[0]} = await {ident}({w[1]}, {rng.randint(0, 99)});"
        if pick == 5:
            return f"    // {' '.join(self.words(rng.randint(3, 10)))}"
        if pick == 6:
            return f"    # {' '.join(self.words(rng.randint(3, 10)))}"
        if pick == 7:
            return f"pub fn {ident}(&self, {w[0]}: &str) -> Result<{w[1].capitalize()}> {{"
        if pick == 8:
            return f'        raise ValueError("{" ".join(self.words(rng.randint(2, 6)))}")'
        if pick == 9:
            return f"import {{ {ident} }} from './{w[0]}/{w[1]}';"
        if pick == 10:
            return f"\t{w[0]}, err := {ident}({w[1]})\n\tif err != nil {{\n\t\treturn err\n\t}}"
        if pick == 11:
            return "  }" if rng.random() < 0.5 else "}"
        if pick == 12:
            return f"    for {w[0]} in {w[1]}.{w[2]}():"
        return f"    return {ident}.{w[0]}"

    def code(self, lines: int) -> str:
        return "\n".join(self.code_line() for _ in range(lines))

    def log_line(self, ms: int) -> str:
        rng = self.rng
        pick = rng.randrange(8)
        secs, frac = divmod(ms + rng.randint(0, 999), 1000)
        stamp = f"{secs % 86400 // 3600:02d}:{secs % 3600 // 60:02d}:{secs % 60:02d}.{frac:03d}"
        if pick < 3:
            level = rng.choice(("INFO", "INFO", "DEBUG", "WARN", "ERROR"))
            return f"{stamp} {level:<5} [{self.word()}] {self.short(3, 12)} id={self.hex(8)}"
        if pick == 3:
            return f"  ✓ {self.short(3, 8)} ({rng.randint(1, 900)} ms)"
        if pick == 4:
            return (
                f"  at {self.identifier()} ({self.word()}/{self.word()}.ts:{rng.randint(1, 900)})"
            )
        if pick == 5:
            return f"{self.word()}/{self.identifier()}.py::test_{self.identifier()} PASSED"
        if pick == 6:
            n = rng.randint(1000, 9999)
            return (
                f"error[E{n % 1000:04d}]: {self.short(3, 9)}\n  --> src/{self.word()}.rs:{n % 300}"
            )
        return f"{self.word()} {self.short(1, 5)} {rng.randint(0, 10**6)} {self.word()}"

    def log(self, lines: int, ms: int) -> str:
        return "\n".join(self.log_line(ms + i * 7) for i in range(lines))

    # -- opaque strings --------------------------------------------------------------------

    def opaque(self, chars: int) -> str:
        """Base64-looking noise (signatures, encrypted reasoning)."""
        return self.rng.randbytes(chars).translate(_OPAQUE_TABLE).decode("ascii")

    def alnum(self, chars: int) -> str:
        return self.rng.randbytes(chars).translate(_ALNUM_TABLE).decode("ascii")

    def hex(self, chars: int) -> str:
        return self.rng.randbytes((chars + 1) // 2).hex()[:chars]

    def pick(self, seq: Sequence[str]) -> str:
        return seq[self.rng.randrange(len(seq))]
