"""``ops/bench --base``: build time against another checkout, in A/B pairs, and how it reads."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from devtools.bench.basecmp import base_cost, base_pipeline
from devtools.bench.corpus import ensure_corpus, write_config
from devtools.bench.report import evaluate, render


def _result(vs_base: dict[str, object]) -> dict[str, object]:
    noop = {"seconds": 0.1, "report_bytes_written": 0, "index_bytes_changed": 0}
    return {
        "size": "S",
        "corpus": {"sessions": 1, "files": 1, "bytes": 10_000_000, "lines": 10},
        "machine": {"cpus": 2, "python": "3.11", "loadavg_start": [1.0]},
        "build": {
            "cold": {"seconds": 12.0, "user_s": 10.0, "sys_s": 2.0},
            "noop": {**noop, "kernel_write_bytes": 0, "index_files_changed": 0},
        },
        "fts5_build": {"seconds": 8.0, "user_s": 7.0, "sys_s": 1.0},
        "vs_base": vs_base,
    }


def test_the_ratios_against_fts5_and_the_base_are_printed_and_targeted() -> None:
    pairs = [
        {"wall_ratio": 1.2, "cpu_ratio": 1.05},
        {"wall_ratio": 1.3, "cpu_ratio": 1.15},
        {"wall_ratio": 1.25, "cpu_ratio": 1.08},
    ]
    vs = {"commit": "e10345c normalize", "pairs": pairs, "wall_ratio": 1.25, "cpu_ratio": 1.08}
    vs |= {"base_seconds": 10.0, "base_cpu_s": 9.0}
    res = _result(vs)
    got = {t["name"]: t for t in evaluate(res)}
    assert got["build_vs_base"]["measured"] == 1.25 and got["build_vs_base"]["met"] is False
    assert got["build_cpu_vs_base"]["met"] is True
    res["targets"] = list(got.values())
    text = render(res)
    # 12 s / 8 s wall, 12 / 8 CPU; the base 10 / 8 and 9 / 8
    assert "build time sessiondex / FTS5: wall 1.50x, CPU 1.50x" in text
    assert "(base commit: wall 1.25x, CPU 1.12x)" in text
    assert "/ base e10345c normalize: wall 1.250x, CPU 1.080x (medians of 3 A/B pairs" in text
    assert "wall 1.200, 1.300, 1.250; CPU 1.050, 1.150, 1.080" in text
    # without --base: only the FTS5 line, and no target against a base
    plain = _result({})
    assert "build_vs_base" not in {t["name"] for t in evaluate(plain)}
    assert "/ base " not in render(plain) and "sessiondex / FTS5" in render(plain)


def test_a_base_without_its_own_environment_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit, match="make its venv first"):
        base_pipeline(tmp_path)


@pytest.mark.integration
def test_pairs_build_the_same_corpus_with_both_sides(tmp_path: Path) -> None:
    ours = Path(sys.executable).parent / "pipeline"
    # a "base" checkout whose pipeline is ours: the ratios are measured, not assumed
    (tmp_path / "base" / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / "base" / ".venv" / "bin" / "pipeline").symlink_to(ours)
    (tmp_path / "base" / ".venv" / "bin" / "python").symlink_to(sys.executable)  # as a venv has
    corpus, cfg = tmp_path / "corpus", tmp_path / "config.toml"
    ensure_corpus(corpus, 6, 8, 3, sys.executable)
    write_config(cfg, corpus, tmp_path / "index")
    out = base_cost(ours, tmp_path / "base", cfg, tmp_path, pairs=2, processes=1)
    assert len(out["pairs"]) == 2
    for p in out["pairs"]:
        assert p["ours"]["seconds"] > 0 and p["base"]["cpu_s"] > 0
        assert p["wall_ratio"] == p["ours"]["seconds"] / p["base"]["seconds"]
    assert out["wall_ratio"] > 0 and out["cpu_ratio"] > 0 and out["base_seconds"] > 0
    assert not (tmp_path / "vs-ours").exists() and not (tmp_path / "vs-base").exists()
