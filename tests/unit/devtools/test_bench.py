"""Smoke test of ``ops/bench`` on a tiny corpus: the harness runs end to end, runs the quality
checks, and its last line is the JSON object; ``--check`` exits 1 exactly when a check fails.

It starts real processes (the pipeline, ``query serve``, FTS5, the freshness loop), hence the
``integration`` mark; the corpus is small enough for the whole run to take a few seconds.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from devtools import ROOT
from devtools.bench.bytecode import compile_bytecode
from devtools.bench.corpus import append_entry
from devtools.bench.floor import socket_floor
from devtools.bench.groups import GROUPS, build_groups
from devtools.bench.procs import percentiles, resident_kb, rss_kb, run_measured
from devtools.bench.report import evaluate
from devtools.bench.workdir import OLD_PREFIX, clear_aside, set_aside


def test_percentiles_are_nearest_rank() -> None:
    values = [float(v) for v in range(1, 101)]
    p = percentiles(values)
    assert (p["p50"], p["p95"], p["p99"], p["n"]) == (50.0, 95.0, 99.0, 100)
    assert percentiles([3.0]) == {"n": 1, "p50": 3.0, "p95": 3.0, "p99": 3.0, "mean": 3.0}
    assert percentiles([]) == {"n": 0}


def test_run_measured_sees_a_child_tree_and_its_writes(tmp_path: Path) -> None:
    grandchild = tmp_path / "grandchild.py"
    # It lives until the sampler has seen it: the peak is sampled, and a loaded machine may
    # not run the sampler thread at all while a process that exits at once is alive.
    grandchild.write_text(
        f"open({str(tmp_path / 'out.bin')!r}, 'wb').write(b'x' * 65536)\n"
        f"import time; time.sleep(0.5)\n"
    )
    code = f"import subprocess, sys; subprocess.run([sys.executable, {str(grandchild)!r}])"
    m = run_measured([sys.executable, "-c", code])
    assert m.returncode == 0
    assert m.peak_rss_kb > 0
    assert m.wchar >= 65536  # the grandchild's write reached us when it was reaped


def test_resident_size_is_vmrss() -> None:
    own = resident_kb(os.getpid())
    assert abs(own - rss_kb(os.getpid())) <= 4096  # both read now: allow a little growth
    assert resident_kb(2**22 + 12345) == 0  # no such process


def test_run_measured_sums_the_rss_of_the_whole_tree(tmp_path: Path) -> None:
    grandchild = tmp_path / "grandchild.py"
    # 96 MiB with every page written stays resident until the process exits.
    grandchild.write_text(
        "b = bytearray(96 << 20)\nb[::4096] = b'x' * (len(b) // 4096)\n"
        "import time; time.sleep(0.8)\n"
    )
    code = f"import subprocess, sys; subprocess.run([sys.executable, {str(grandchild)!r}])"
    m = run_measured([sys.executable, "-c", code])
    assert m.returncode == 0
    assert m.peak_rss_kb > 96 << 10  # the grandchild's memory, found by a later tree lookup


def _manifest() -> dict[str, object]:
    planted = [
        {
            "term": f"qjterm{i:06d}",
            "agent": "pi",
            "session_id": f"s{i}",
            "file": f"pi/x/s{i}.jsonl",
            "role": "user",
            "text": f"alpha beta gamma qjterm{i:06d} delta epsilon",
        }
        for i in range(4)
    ]
    return {"planted": planted, "negative_controls": ["qjnope000001"]}


def test_every_group_is_built_and_only_expressible_forms_are_set() -> None:
    queries = build_groups(_manifest(), per_group=3, seed=1)
    assert {q.group for q in queries} == set(GROUPS)
    for q in queries:
        assert q.ours["scope"] == "global"
        if q.group in ("structural", "combined"):
            assert q.fts5 is None and q.rg is None and q.agentsview is None
        if q.group == "regex":
            assert q.fts5 is None
    phrase = next(q for q in queries if q.group == "phrase")
    assert phrase.ours["queryMode"] == "phrase" and len(phrase.label.split()) == 3


def test_targets_report_ratios_and_misses() -> None:
    res = {
        "corpus": {"bytes": 100_000_000},
        "build": {
            "cold": {"seconds": 10.0},
            "noop": {
                "seconds": 1.0,
                "report_bytes_written": 0,
                "index_bytes_changed": 0,
                "kernel_write_bytes": 0,
            },
        },
        "fts5_build": {"seconds": 20.0},
        "latency": {
            "ours": {"planted": {"n": 5, "p50": 1.0, "p95": 2.0}},
            "fts5": {"planted": {"n": 5, "p50": 1.0, "p95": 3.0}},
        },
        "fresh": {"latency_ms": {"p95": 100.0}, "missed": 0},
    }
    got = {t["name"]: t for t in evaluate(res)}
    assert got["build_vs_fts5"]["measured"] == 2.0 and got["build_vs_fts5"]["met"]
    assert got["p95_vs_fts5.planted"]["met"] is False  # 2/3 > 0.5
    assert got["noop_share"]["met"] is False  # 10 % of the cold build
    assert got["noop_bytes"]["met"] and got["fresh_p95_ms"]["met"]
    # a write call counts though the kernel's count (a second rerun's) is 0
    res["build"]["noop"]["write_syscall_bytes"] = 100  # type: ignore[index]
    assert {t["name"]: t for t in evaluate(res)}["noop_bytes"]["met"] is False
    res["build"]["noop"]["write_syscall_bytes"] = 0  # type: ignore[index]
    assert got["p95_vs_fts5.planted"]["limit_ms"] == 1.5
    assert "below_socket_floor" not in got["p95_vs_fts5.planted"]
    res["fresh_start"] = {
        "rounds": 3,
        "first_missed": 0,
        "first_median_ms": 120.0,
        "next_ms": {"n": 27, "p50": 100.0, "p95": 130.0},
    }
    assert {t["name"]: t for t in evaluate(res)}["fresh_first_while_starting_ms"]["met"]
    res["fresh_start"]["first_median_ms"] = 140.0  # above the p95 of the appends after it
    assert not {t["name"]: t for t in evaluate(res)}["fresh_first_while_starting_ms"]["met"]
    res["socket_floor"] = {"n": 100, "p50": 1.0, "p95": 1.6, "p99": 2.0}
    floored = {t["name"]: t for t in evaluate(res)}["p95_vs_fts5.planted"]
    assert floored["below_socket_floor"] and floored["met"] is False  # still a miss


def test_a_claude_reply_continued_on_its_own_line_changes_the_entry_it_began(
    tmp_path: Path,
) -> None:
    from stages.claude.source import read_claude
    from stages.lineage import lineage
    from stages.normalize import normalize
    from stages.parse import parse
    from stages.policy import Policy

    path = tmp_path / "c0ffee00-0000-4000-8000-000000000002.jsonl"
    first = {
        "type": "user",
        "uuid": "u0",
        "parentUuid": None,
        "sessionId": "c0ffee00-0000-4000-8000-000000000002",
        "cwd": "/w",
        "timestamp": "2026-01-01T00:00:00.000Z",
        "message": {"role": "user", "content": "hello"},
    }
    path.write_bytes(json.dumps(first).encode() + b"\n")
    append_entry(path, "claude", "assistant", "begun alpha")
    append_entry(path, "claude", "assistant-continued", "continued bravo")
    lines = [json.loads(x) for x in path.read_bytes().splitlines()]
    assert lines[1]["message"]["id"] == lines[2]["message"]["id"]
    assert lines[2]["parentUuid"] == lines[1]["uuid"]
    session = read_claude(parse(path.read_bytes()), str(path))
    entries = normalize(session, lineage(session, "active"), Policy()).entries
    replies = [e for e in entries if e.role == "assistant"]
    assert len(replies) == 1 and "alpha" in replies[0].text and "bravo" in replies[0].text
    append_entry(path, "claude", "user", "next")
    append_entry(path, "claude", "assistant-continued", "no reply to continue: a new one")
    lines = [json.loads(x) for x in path.read_bytes().splitlines()]
    assert lines[-1]["message"]["id"] != lines[1]["message"]["id"]


def test_the_socket_floor_is_a_round_trip_to_an_echo_process() -> None:
    floor = socket_floor(count=50, warmup=5)
    assert floor["n"] == 50 and 0 < floor["p50"] <= floor["p95"] <= floor["p99"]


@pytest.mark.slow
@pytest.mark.integration
def test_bench_runs_end_to_end_on_a_tiny_corpus(tmp_path: Path) -> None:
    # What an earlier run left: set aside before the builds, deleted after the measurements.
    (tmp_path / "index" / "records").mkdir(parents=True)
    (tmp_path / "index" / "records" / "old").write_bytes(b"x")
    (tmp_path / "corpus" / "pi").mkdir(parents=True)
    (tmp_path / "corpus" / "pi" / "stale.jsonl").write_bytes(b"{}\n")
    argv = [sys.executable, "-m", "devtools.bench", "--sessions", "12", "--mean-kb", "12"]
    argv += ["--work", str(tmp_path), "--reps", "1", "--per-group", "3", "--cli-runs", "1"]
    argv += ["--fresh-count", "3", "--fresh-rate", "20", "--no-rg", "--hot-sessions", "4"]
    argv += ["--check", "--archive-pairs", "1", "--start-rounds", "1"]
    # a bound on a hang, not a measurement: a loaded machine took over 120 s for this run
    proc = subprocess.run(argv, capture_output=True, text=True, cwd=ROOT, timeout=1800)
    assert proc.stdout.strip(), proc.stderr[-2000:]
    result = json.loads(proc.stdout.strip().splitlines()[-1])
    quality = result["quality"]
    assert set(quality) == {
        "planted_hit1",
        "off_branch_hidden",
        "negative_zero",
        "regex_planted_hit1",
        "structural_truth",
        "no_leaks",
    }
    assert quality["planted_hit1"]["n"] > 0 and quality["no_leaks"]["n"] > 0
    assert quality["regex_planted_hit1"]["n"] > 0
    assert proc.returncode == (0 if all(q["ok"] for q in quality.values()) else 1), proc.stderr
    assert result["build"]["cold"]["report"]["indexed"] == result["corpus"]["files"]
    assert result["size_"]["cold"] > 0 and result["size_"]["hot"] == 4
    assert result["latency"]["ours"]["planted"]["n"] == 3
    assert result["fresh"]["appends"] == 3
    # the first append right after `pipeline run` started is timed on its own
    assert result["fresh"]["first_missed"] is False and result["fresh"]["first_ms"] > 0
    # and the first one made while query serve and pipeline run start together
    start = result["fresh_start"]
    assert start["rounds"] == 1 and start["first_missed"] == 0 and start["next_missed"] == 0
    assert start["next_ms"]["n"] == 9 and "first append while `query serve`" in proc.stdout
    assert "fresh_first_while_starting_ms" in {t["name"] for t in result["targets"]}
    assert "rg skipped: --no-rg" in result["notes"]
    assert {t["name"] for t in result["targets"]} >= {"build_vs_fts5", "noop_bytes"}
    assert "Quality (fails --check)" in proc.stdout
    assert result["build"]["cold"]["user_s"] > 0 and result["fts5_build"]["user_s"] > 0
    assert "CPU s user / sys" in proc.stdout
    assert result["socket_floor"]["n"] > 0 and "socket floor" in proc.stdout
    assert result["http"]["http"]["n"] > 0 and "recall over HTTP" in proc.stdout
    assert result["http"]["mismatches"] == 0
    archive = result["archive"]
    assert 0 < archive["bytes_per_source_byte"] < 1 and len(archive["pairs"]) == 1
    assert "archive:" in proc.stdout and "archive_build_ratio" in {
        t["name"] for t in result["targets"]
    }
    assert not (tmp_path / "index" / "records" / "old").exists()
    assert not (tmp_path / "corpus" / "pi" / "stale.jsonl").exists()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(OLD_PREFIX)]


def test_an_earlier_run_is_set_aside_whole_and_cleared_later(tmp_path: Path) -> None:
    assert set_aside(tmp_path, ("index", "corpus")) is None
    (tmp_path / "index").mkdir()
    (tmp_path / "index" / "CURRENT").write_text("1")
    (tmp_path / "fts5.db").write_bytes(b"db")
    (tmp_path / "keep").write_bytes(b"mine")
    aside = set_aside(tmp_path, ("index", "corpus", "fts5.db"))
    assert aside is not None and aside.name.startswith(OLD_PREFIX)
    assert (aside / "index" / "CURRENT").read_text() == "1"
    assert (aside / "fts5.db").read_bytes() == b"db"
    assert not (tmp_path / "index").exists() and not (tmp_path / "fts5.db").exists()
    clear_aside(tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["keep"]


def test_a_miss_is_excused_only_past_a_vocabulary_cut_the_index_can_still_find() -> None:
    from devtools.bench.quality import _negative, _planted

    planted = {
        "term": "qjx",
        "file": "pi/a.jsonl",
        "agent": "pi",
        "session_id": "s",
        "entry_id": "e",
    }
    hit = {"kind": "entry", "sessionId": "pi:s", "entryId": "e", "snippet": "qjx"}

    def answers(global_reasons: list[str], own_hits: list[dict]) -> Any:
        def ask(req: dict) -> dict:
            scope = req["args"]["scope"]
            if scope == "global":
                return {"hits": [], "total": 0, "reasons": global_reasons, "complete": False}
            return {"hits": own_hits, "total": len(own_hits), "reasons": [], "complete": True}

        return ask

    corpus = Path("/c")
    cut = _planted(answers(["max_cold_vocabulary_bytes"], [hit]), {"planted": [planted]}, corpus)
    assert cut["ok"] and cut["excused"] == 1 and cut["value"] == 0.0
    lost = _planted(answers(["max_cold_vocabulary_bytes"], []), {"planted": [planted]}, corpus)
    assert not lost["ok"]  # the index cannot find it even in its own session: a real miss
    plain = _planted(answers([], [hit]), {"planted": [planted]}, corpus)
    assert not plain["ok"]  # no cut named: nothing excuses it
    neg = {"negative_controls": ["qjn"]}
    assert _negative(answers(["max_cold_vocabulary_bytes"], []), neg)["ok"]
    assert not _negative(answers(["stale_session"], []), neg)["ok"]


def test_a_base_is_given_only_the_agents_it_knows(tmp_path: Path) -> None:
    from devtools.bench.basecmp import _known_sources

    # an older pipeline: refuses a config naming an agent it lacks, one key at a time
    fake = tmp_path / "pipeline"
    fake.write_text(
        "#!/bin/sh\n"
        'for a in $(sed -n "s/ = .*//p" "$3"); do case $a in pi|claude|indexDir) ;; *)\n'
        '  echo "pipeline: $3: unknown key sources.$a (one of pi, claude)" >&2; exit 2;;\n'
        "esac; done\n"
    )
    fake.chmod(0o755)
    cfg = tmp_path / "c.toml"
    cfg.write_text('[sources]\npi = "/p"\nomp = "/o"\nclaude = "/c"\nqwen = "/q"\n\n[memory]\n')
    _known_sources(fake, cfg)
    assert cfg.read_text() == '[sources]\npi = "/p"\nclaude = "/c"\n\n[memory]\n'
    _known_sources(fake, cfg)  # accepted as it is: left alone
    assert cfg.read_text() == '[sources]\npi = "/p"\nclaude = "/c"\n\n[memory]\n'


def test_the_checkouts_bytecode_is_compiled_even_where_python_writes_none(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """With PYTHONDONTWRITEBYTECODE set, every timed process compiled every module of the
    checkout again; an installed sessiondex never does (bench.bytecode)."""
    monkeypatch.setenv("PYTHONDONTWRITEBYTECODE", "1")
    (tmp_path / "store").mkdir()
    (tmp_path / "store" / "thing.py").write_text("X = 1\n")
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "other.py").write_text("Y = 2\n")
    note = compile_bytecode(sys.executable, tmp_path)
    assert list((tmp_path / "store" / "__pycache__").glob("thing.*.pyc"))
    assert not (tmp_path / "elsewhere" / "__pycache__").exists()  # not one of the packages
    assert "PYTHONDONTWRITEBYTECODE set" in note
