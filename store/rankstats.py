"""The ranking statistics a record stores per entry and per cold session.

An entry's text has up to two fields, told apart by typed fields only:

* **prose**: what a person or the model wrote (user, assistant, compaction and custom text);
* **plumbing**: tool output (``toolResult``, ``fabricOperation`` entries) and tool calls. An
  assistant entry that carries a call (``tool`` set) holds its calls as the lines the
  normalizers render for each one, ``Tool: <name>(<args>)``; those lines are plumbing and the
  rest of the message stays prose. (This reads the normalizers' own rendering of typed
  ``toolCall``/``tool_use`` blocks, not prose.)

**Hot postings** keep ``(entry position, tf)`` pairs, where ``tf`` packs the prose count in its
low 16 bits and the plumbing count in its high 16 bits; ``token_counts`` packs the two field
lengths the same way. Long fields are counted by their best passage: the count of a term is its
highest count in any window of ``PASSAGE`` tokens (windows start every ``PASSAGE // 2`` tokens)
and the length is capped at ``PASSAGE``. So a 50,000-token tool output holding a rare term once
scores like a passage holding it once, not like a 50,000-token document.

**Cold digests** keep one byte per vocabulary term (``term_stats``, in vocabulary order):
``PROSE_BIT`` when some entry has the term in prose, and in the low bits how many entries of
the session hold it, as ``min(n, 255).bit_length()`` (a bounded tf bucket: 1, 2-3, 4-7, ...).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable, Sequence
from typing import Final

from store.records import NormalizedEntry
from store.tokens import term_set, tokenize

__all__ = [
    "BUCKET_BITS",
    "FIELD_BITS",
    "PASSAGE",
    "PROSE_BIT",
    "entry_stats",
    "fields_of",
    "pack",
    "session_term_stats",
    "unpack",
]

PASSAGE: Final = 128
FIELD_BITS: Final = 16
_FIELD_MAX: Final = (1 << FIELD_BITS) - 1
PROSE_BIT: Final = 0x80
BUCKET_BITS: Final = 0x0F
_CALL_PREFIX: Final = "Tool: "
_PLUMBING_ROLES: Final = frozenset({"toolResult", "fabricOperation"})


def pack(prose: int, plumbing: int) -> int:
    return min(prose, _FIELD_MAX) | min(plumbing, _FIELD_MAX) << FIELD_BITS


def unpack(value: int) -> tuple[int, int]:
    return value & _FIELD_MAX, value >> FIELD_BITS


def fields_of(e: NormalizedEntry) -> tuple[str, str]:
    """(prose, plumbing) text of *e*."""
    if e.role in _PLUMBING_ROLES:
        return "", e.text
    if e.tool is None:
        return e.text, ""
    if e.role != "assistant":
        return "", e.text
    if _CALL_PREFIX not in e.text:
        return "", e.text  # a call entry of its own (Codex), or a call the text does not show
    prose: list[str] = []
    calls: list[str] = []
    for line in e.text.split("\n"):
        (calls if line.startswith(_CALL_PREFIX) else prose).append(line)
    return "\n".join(prose), "\n".join(calls)


def _best_passage(tokens: Sequence[str]) -> tuple[Counter[str], int]:
    """Each term's highest count in a window of PASSAGE tokens, and the capped length."""
    n = len(tokens)
    if n <= PASSAGE:
        return Counter(tokens), n
    step = PASSAGE // 2
    best: Counter[str] = Counter()
    for start in range(0, n - step, step):
        window = Counter(tokens[start : start + PASSAGE])
        for term, tf in window.items():
            if tf > best[term]:
                best[term] = tf
    return best, PASSAGE


def entry_stats(e: NormalizedEntry) -> tuple[dict[str, int], int]:
    """Packed per-term counts and packed field lengths of *e* (see the module docstring)."""
    prose, plumbing = fields_of(e)
    if not plumbing:
        counts, length = _best_passage(tokenize(prose))
        return dict(counts), length
    if not prose:
        counts, length = _best_passage(tokenize(plumbing))
        return {t: tf << FIELD_BITS for t, tf in counts.items()}, length << FIELD_BITS
    p_counts, p_len = _best_passage(tokenize(prose))
    c_counts, c_len = _best_passage(tokenize(plumbing))
    out = dict(p_counts)
    for term, tf in c_counts.items():
        out[term] = out.get(term, 0) | tf << FIELD_BITS
    return out, p_len | c_len << FIELD_BITS


def session_term_stats(entries: Iterable[NormalizedEntry]) -> dict[bytes, int]:
    """Every term of *entries* (UTF-8, as ``term_set`` gives them) with its ``term_stats`` byte."""
    held: Counter[bytes] = Counter()
    in_prose: set[bytes] = set()
    for e in entries:
        prose, plumbing = fields_of(e)
        if prose and plumbing:
            p = term_set((prose,))
            in_prose |= p
            held.update(p | term_set((plumbing,)))
        elif prose:
            p = term_set((prose,))
            in_prose |= p
            held.update(p)
        elif plumbing:
            held.update(term_set((plumbing,)))
    return {
        t: (min(n, 255).bit_length() | (PROSE_BIT if t in in_prose else 0)) for t, n in held.items()
    }
