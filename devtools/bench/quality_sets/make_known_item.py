"""Regenerate ``known_item.json`` (the deterministic half of the procedure; see README.md).

    .venv/bin/python -m devtools.bench.quality_sets.make_known_item WORK      (in the checkout)

Picks entries by a hash order, and for each the words a person would remember of it: one
distinctive word (lowest document frequency in the corpus) plus up to two ordinary words of
the same entry. ``dropped.json`` next to this file lists the items removed by hand review; they
stay out when the set is regenerated.
"""

from __future__ import annotations

import hashlib
import json
import sys
from collections import Counter
from pathlib import Path

from devtools.bench.quality_corpus import Judged, assemble, entries
from store.tokens import tokenize

HERE = Path(__file__).resolve().parent
PER_REAL_FILE = 4
PER_GENERATED_FILE = 1
MIN_TOKENS = 12


def _h(*parts: str) -> int:
    return int.from_bytes(hashlib.blake2b("\x00".join(parts).encode(), digest_size=8).digest())


def _memorable(term: str) -> bool:
    # What a person can recall and type: a word, not an id, a hash or a number.
    return term.isascii() and term.isalpha() and 4 <= len(term) <= 16


def main(work: Path) -> None:
    corpus = assemble(work)
    judged = list(entries(corpus))
    tokens = [set(tokenize(j.text)) for j in judged]
    df: Counter[str] = Counter()
    for t in tokens:
        df.update(t)
    n = len(judged)
    dropped = set(json.loads((HERE / "dropped.json").read_text()))
    by_file: dict[str, list[int]] = {}
    for i, j in enumerate(judged):
        if len(tokenize(j.text)) >= MIN_TOKENS:
            by_file.setdefault(j.file, []).append(i)
    items = []
    for file in sorted(by_file):
        per = PER_GENERATED_FILE if "/gen/" in file else PER_REAL_FILE
        picked = 0
        for i in sorted(by_file[file], key=lambda i: _h(file, judged[i].entry)):
            if picked == per:
                break
            j, own = judged[i], tokens[i]
            words = sorted((t for t in own if _memorable(t)), key=lambda t: (df[t], _h(j.entry, t)))
            if not words or df[words[0]] > 3:
                continue  # nothing distinctive to remember it by
            rare = words[0]
            # ordinary words: neither distinctive nor everywhere (between 0.2 % and 5 %)
            plain = [t for t in words[1:] if n * 0.002 <= df[t] <= n * 0.05]
            extra = _h(j.entry, "n") % 3
            plain.sort(key=lambda t: _h(j.entry, "plain", t))
            terms = [*plain[: extra // 2 + (extra > 0)], rare][: 1 + extra]
            query = " ".join(terms)
            key = f"{j.file}#{j.entry}"
            if key in dropped:
                continue
            relevant = [_ref(judged[k]) for k in range(n) if all(t in tokens[k] for t in terms)]
            items.append({"query": query, "target": key, "relevant": relevant})
            picked += 1
    out = {
        "made_by": "devtools/bench/quality_sets/make_known_item.py (see README.md)",
        "entries": n,
        "items": items,
    }
    (HERE / "known_item.json").write_text(json.dumps(out, indent=1) + "\n")
    print(f"{len(items)} known items over {n} entries")


def _ref(j: Judged) -> dict[str, object]:
    return {"file": j.file, "session": j.session, "entry": j.entry, "lines": list(j.lines)}


if __name__ == "__main__":
    main(Path(sys.argv[1]))
