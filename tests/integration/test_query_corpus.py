"""Issue acceptance on a generated corpus: planted terms, negatives, staleness, exact counts.

A small deterministic corpus of Pi, Claude Code and Codex sessions (devtools.corpus) is
indexed with the real pipeline, split across both tiers, and queried through the engine and,
for the call tokens, through the ``query`` CLI in a subprocess.
"""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import orjson
import pytest

from devtools.corpus import CorpusManifest, generate
from pipeline.catchup import catch_up
from query.engine import Engine
from store.config import Config
from store.reader import open_snapshot
from store.records import SessionEntries

pytestmark = pytest.mark.integration


@dataclass
class Corpus:
    dir: Path
    manifest: CorpusManifest
    config: Config
    config_path: Path
    engine: Engine


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Corpus]:
    base = tmp_path_factory.mktemp("corpus")
    manifest = generate(
        base / "c", sessions=36, mean_kb=6, seed=5, agents=("pi", "claude", "codex"),
        malformed_lines=False,
    )  # fmt: skip
    roots = {agent: str(base / "c" / rel) for agent, rel in manifest.roots.items()}
    text = "[sources]\n" + "".join(f'{a} = "{r}"\n' for a, r in roots.items())
    text += f'[memory]\nindexDir = "{base / "index"}"\nhotSessions = 12\n'
    config_path = base / "config.toml"
    config_path.write_text(text)
    from store.config import load_config

    config = load_config(config_path)
    catch_up(config, processes=1)
    engine = Engine(config)
    yield Corpus(base / "c", manifest, config, config_path, engine)
    engine.close()


def cli(corpus: Corpus, *argv: str) -> tuple[int, dict[str, Any]]:
    proc = subprocess.run(
        [sys.executable, "-m", "query", *argv, "--config", str(corpus.config_path),
         "--json", "--no-server"],
        capture_output=True, timeout=60, check=False,
    )  # fmt: skip
    return proc.returncode, orjson.loads(proc.stdout) if proc.stdout else {}


def entry_text(corpus: Corpus, follow: dict[str, Any]) -> str:
    detail = corpus.engine.call(follow)
    assert "error" not in detail, detail
    assert detail["next"] is None  # planted parts are short: one chunk
    [entry] = detail["entries"]
    text: str = entry["text"]
    return text


def test_every_planted_term_is_found_at_rank_one(corpus: Corpus) -> None:
    tiers = {"entry": 0, "session": 0}
    for planted in corpus.manifest.planted:
        page = corpus.engine.recall({"query": planted.term, "scope": "global"}, cwd="/")
        assert page["hits"], planted
        top = page["hits"][0]
        tiers[top["kind"]] += 1
        if top["kind"] == "entry":
            follow = top["follow"]
        else:  # a cold session candidate: its follow call resolves the entry
            resolved = corpus.engine.call(top["follow"])
            assert resolved["hits"][0]["kind"] == "entry"
            assert resolved["coverage"]["complete"] is True
            follow = resolved["hits"][0]["follow"]
        assert planted.text in entry_text(corpus, follow), planted.term
    assert tiers["entry"] > 0 and tiers["session"] > 0  # both tiers were exercised


def test_call_tokens_run_through_the_cli(corpus: Corpus) -> None:
    planted = corpus.manifest.planted[0]
    code, page = cli(corpus, "recall", planted.term, "--scope", "global")
    assert code == 0
    token = page["hits"][0]["follow"]
    if page["hits"][0]["kind"] == "session":
        code, page = cli(corpus, "call", orjson.dumps(token).decode())
        assert code == 0
        token = page["hits"][0]["follow"]
    code, detail = cli(corpus, "call", orjson.dumps(token).decode())
    assert code == 0 and planted.text in detail["entries"][0]["text"]


def test_off_branch_terms_need_branches_all(corpus: Corpus) -> None:
    assert corpus.manifest.off_branch
    for planted in corpus.manifest.off_branch:
        active = corpus.engine.recall({"query": planted.term, "scope": "global"}, cwd="/")
        assert active["total"] == 0
        every = corpus.engine.recall(
            {"query": planted.term, "scope": "global", "branches": "all"}, cwd="/"
        )
        assert every["total"] >= 1


def test_absent_terms_are_authoritatively_absent(corpus: Corpus) -> None:
    assert corpus.manifest.negative_controls
    for term in corpus.manifest.negative_controls:
        page = corpus.engine.recall({"query": term, "scope": "global"}, cwd="/")
        assert page["hits"] == [] and page["total"] == 0
        assert page["coverage"]["complete"] is True, page["coverage"]


def test_structural_counts_are_exact(corpus: Corpus) -> None:
    snap = open_snapshot(corpus.config.index_dir)
    expected = 0
    for state in snap.manifest.sessions:
        entries = snap.load(state.entries_record, SessionEntries).view("active").entries
        expected += sum(1 for e in entries if e.tool == "bash" and e.outcome == "failed")
    assert expected > 0
    code, page = cli(corpus, "recall", "--scope", "global", "--tool", "bash", "--outcome", "failed")
    assert code == 0
    counted = 0
    while True:
        for hit in page["hits"]:
            counted += 1 if hit["kind"] == "entry" else hit["matchedStructuralEntries"]
        if page["next"] is None:
            break
        page = corpus.engine.call(page["next"], cwd="/")
    assert counted == expected
    assert page["coverage"]["complete"] is True


def test_append_without_reindex_is_reported_stale(corpus: Corpus) -> None:
    planted = next(p for p in corpus.manifest.planted if p.agent == "pi")
    path = corpus.dir / planted.file
    before = corpus.engine.recall({"query": planted.term, "scope": "global"}, cwd="/")
    assert before["coverage"]["complete"] is True
    original = path.read_bytes()
    try:
        with path.open("ab") as f:
            f.write(b'{"type":"custom","customType":"note","data":{}}\n')
        after = corpus.engine.recall({"query": planted.term, "scope": "global"}, cwd="/")
        assert after["coverage"]["staleSessions"] == 1
        assert after["coverage"]["complete"] is False
        assert "stale_session" in after["coverage"]["reasons"]
        assert after["hits"][0]["sessionId"] == before["hits"][0]["sessionId"]
    finally:
        path.write_bytes(original)
