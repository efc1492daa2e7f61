"""The retrieval-quality bench: its scores, and sets that still name entries our stages make.

The sets are judged against entry ids; a change to a normalizer that renames or merges
entries must show here, not as a silent drop in ``ops/bench --quality-only``.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from devtools.bench.quality_corpus import assemble, entries, real_root
from devtools.bench.quality_ir import SETS, _score
from store.tokens import tokenize


def test_scores_are_mrr_at_10_and_hits_at_1_and_5() -> None:
    got = _score([1, None, 3, 12])
    assert got["n"] == 4
    assert got["mrr10"] == pytest.approx((1 + 1 / 3) / 4)
    assert (got["hit1"], got["hit5"]) == (0.25, 0.5)


@pytest.mark.real
def test_every_judged_entry_is_one_our_stages_make(tmp_path: Path) -> None:
    if real_root() is None:
        pytest.skip("real fixtures not found (../shared/fixtures/real is absent)")
    made = {(j.file, j.entry): j for j in entries(assemble(tmp_path))}
    for name in ("known_item.json", "natural.json"):
        for item in json.loads((SETS / name).read_text())["items"]:
            for judged in item["relevant"]:
                entry = made.get((judged["file"], judged["entry"]))
                assert entry is not None, (name, item["query"], judged["entry"])
                assert entry.session == judged["session"]
            if name == "known_item.json":
                file, _, entry_id = item["target"].partition("#")
                assert set(tokenize(item["query"])) <= set(tokenize(made[(file, entry_id)].text))
