"""A session file being assembled: its lines, their encoded size, and where terms may go.

Builders append JSON objects (encoded once, so the running size is exact) and register
*carriers*: string fields inside a line that hold one message part (a user prompt, an assistant
text block, a tool output). After the session is complete, ``plant_terms`` inserts terms into
chosen carriers and re-encodes just those lines, so a term can never leak into copies made
earlier (a branch-summary fact, a mirrored event) unless the carrier names that mirror.
"""

from __future__ import annotations

import random
from collections.abc import Collection, Sequence
from dataclasses import dataclass, field
from typing import Any

import orjson

from devtools.corpus.terms import TermPool

__all__ = ["Carrier", "Draft", "Plant", "plant_terms"]

FieldPath = tuple[str | int, ...]
ROLES = ("user", "assistant", "toolResult")
# Carriers above this size are not planted in: the manifest records the carrier text verbatim.
MAX_CARRIER_CHARS = 4096


@dataclass(frozen=True, slots=True)
class Carrier:
    """One message part: ``draft.lines[line]`` at ``path``, plus verbatim copies the agent wrote."""

    line: int
    role: str
    entry_id: str
    path: FieldPath
    mirrors: tuple[tuple[int, FieldPath], ...] = ()
    # Terms go at or after this offset: text before it is a machine-written envelope (a
    # Codex exec header) whose typed lines a reader parses and a term must not break.
    start: int = 0


@dataclass(frozen=True, slots=True)
class Plant:
    """A term as planted: ``line`` is 1-based, ``text`` the whole carrying part afterwards."""

    term: str
    line: int
    role: str
    entry_id: str
    text: str
    occurrences: int
    mirror_lines: tuple[int, ...]


@dataclass(slots=True)
class Draft:
    """Lines of one session file (a ``dict`` per JSON line, ``bytes`` for a malformed one)."""

    lines: list[Any] = field(default_factory=list)
    encoded: list[bytes] = field(default_factory=list)
    size: int = 0
    carriers: list[Carrier] = field(default_factory=list)
    malformed: list[int] = field(default_factory=list)

    def add(self, obj: dict[str, Any]) -> int:
        """Append ``obj`` as the next line; returns its 0-based index."""
        data = orjson.dumps(obj)
        self.lines.append(obj)
        self.encoded.append(data)
        self.size += len(data) + 1
        return len(self.lines) - 1

    def add_truncated(self, obj: dict[str, Any], rng: random.Random) -> int:
        """Append ``obj`` cut short, as a writer killed mid-line leaves it before the next append.

        The cut lands on an ASCII byte between 40% and 90% of the line, so the line is invalid
        JSON (its closing brace is gone) but valid UTF-8.
        """
        data = orjson.dumps(obj)
        cut = rng.randint(len(data) * 2 // 5, len(data) * 9 // 10)
        while data[cut] >= 0x80:
            cut -= 1
        raw = data[:cut]
        self.lines.append(raw)
        self.encoded.append(raw)
        self.size += len(raw) + 1
        self.malformed.append(len(self.lines) - 1)
        return len(self.lines) - 1

    def carrier(
        self,
        line: int,
        role: str,
        entry_id: str,
        path: FieldPath,
        mirrors: Sequence[tuple[int, FieldPath]] = (),
        start: int = 0,
    ) -> None:
        self.carriers.append(Carrier(line, role, entry_id, path, tuple(mirrors), start))

    def reencode(self, line: int) -> None:
        data = orjson.dumps(self.lines[line])
        self.size += len(data) - len(self.encoded[line])
        self.encoded[line] = data

    def text_at(self, line: int, path: FieldPath) -> str:
        container, key = _resolve(self.lines[line], path)
        value = container[key]
        assert isinstance(value, str)
        return value

    def set_text(self, line: int, path: FieldPath, text: str) -> None:
        container, key = _resolve(self.lines[line], path)
        container[key] = text
        self.reencode(line)

    def data(self) -> bytes:
        return b"\n".join(self.encoded) + b"\n"


def _resolve(obj: Any, path: FieldPath) -> tuple[Any, str | int]:
    for key in path[:-1]:
        obj = obj[key]
    return obj, path[-1]


def _insert(text: str, term: str, rng: random.Random, start: int = 0) -> str:
    """``text`` with `` term`` inserted before a space at or after *start*, so the term
    stands alone as a token."""
    if not text:
        return term
    pos = text.find(" ", start + rng.randrange(max(len(text) - start, 1)))
    if pos < 0:
        return f"{text} {term}"
    return f"{text[:pos]} {term}{text[pos:]}"


def _plant(draft: Draft, carrier: Carrier, term: str, rng: random.Random) -> Plant:
    before = draft.text_at(carrier.line, carrier.path)
    after = _insert(before, term, rng, carrier.start)
    draft.set_text(carrier.line, carrier.path, after)
    for line, path in carrier.mirrors:
        # A mirror is the agent's verbatim copy; it must still be one.
        assert draft.text_at(line, path) == before
        draft.set_text(line, path, after)
    needle = term.encode()
    hits = [(i, data.count(needle)) for i, data in enumerate(draft.encoded) if needle in data]
    return Plant(
        term=term,
        line=carrier.line + 1,
        role=carrier.role,
        entry_id=carrier.entry_id,
        text=after,
        occurrences=sum(n for _, n in hits),
        mirror_lines=tuple(i + 1 for i, _ in hits if i != carrier.line),
    )


def _choose(
    draft: Draft,
    candidates: list[Carrier],
    roles: Sequence[str],
    rng: random.Random,
) -> list[Carrier]:
    by_role: dict[str, list[Carrier]] = {}
    for c in candidates:
        by_role.setdefault(c.role, []).append(c)
    chosen: list[Carrier] = []
    used: set[tuple[int, FieldPath]] = set()
    for role in roles:
        pool = by_role.get(role) or [c for group in by_role.values() for c in group]
        pool = [c for c in pool if (c.line, c.path) not in used]
        if not pool:
            break
        pick = pool[rng.randrange(len(pool))]
        used.add((pick.line, pick.path))
        chosen.append(pick)
    return chosen


def plant_terms(
    draft: Draft,
    rng: random.Random,
    pool: TermPool,
    *,
    plantable: Collection[int],
    abandoned: Collection[int] = (),
    force_user: bool = False,
) -> tuple[list[Plant], list[Plant]]:
    """Plant 1–3 terms in carriers on ``plantable`` lines and 1–2 on ``abandoned`` ones.

    ``force_user`` makes the first term go into a user prompt. Returns (on-path, off-path).
    """

    def fits(c: Carrier) -> bool:
        return len(draft.text_at(c.line, c.path)) <= MAX_CARRIER_CHARS

    on = [c for c in draft.carriers if c.line in plantable and fits(c)]
    off = [c for c in draft.carriers if c.line in abandoned and fits(c)]
    roles = list(ROLES)
    rng.shuffle(roles)
    count = rng.choice((1, 2, 2, 3))
    wanted = (["user"] if force_user else []) + [roles[i % 3] for i in range(count)]
    planted = [_plant(draft, c, pool.new(), rng) for c in _choose(draft, on, wanted[:3], rng)]
    off_roles = [roles[i % 3] for i in range(rng.choice((1, 1, 2)))]
    stray = [_plant(draft, c, pool.new(), rng) for c in _choose(draft, off, off_roles, rng)]
    return planted, stray
