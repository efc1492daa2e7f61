"""The synthetic corpus: determinism, size, JSON validity, planted terms, each agent's format."""

from __future__ import annotations

import importlib.util
import os
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtools.corpus import generate, load_manifest, main
from devtools.corpus.manifest import CorpusManifest, PlantedTerm, ToolError
from devtools.corpus.pi import encode_cwd
from devtools.corpus.terms import TERM_PREFIX
from store.tokens import tokenize

SESSIONS, MEAN_KB, SEED = 10, 30, 11
ALL = ("pi", "claude", "codex")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, CorpusManifest]:
    out = tmp_path_factory.mktemp("corpus")
    return out, generate(out, sessions=SESSIONS, mean_kb=MEAN_KB, seed=SEED, agents=ALL)


def _files(root: Path) -> dict[str, bytes]:
    return {
        str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()
    }


def _lines(data: bytes) -> list[bytes]:
    assert data.endswith(b"\n")
    return data[:-1].split(b"\n")


def _records(root: Path, rel: str) -> Iterator[tuple[int, dict[str, Any]]]:
    """(1-based line, object) for every line that parses."""
    for n, raw in enumerate(_lines((root / rel).read_bytes()), 1):
        try:
            yield n, orjson.loads(raw)
        except orjson.JSONDecodeError:
            continue


def _line(root: Path, rel: str, line: int) -> dict[str, Any]:
    value = orjson.loads(_lines((root / rel).read_bytes())[line - 1])
    assert isinstance(value, dict)
    return value


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON value."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        value = list(value.values())
    if isinstance(value, list):
        return [s for item in value for s in _strings(item)]
    return []


def _sessions(manifest: CorpusManifest, agent: str) -> list[str]:
    return [s.file for s in manifest.sessions if s.agent == agent and s.parent_file is None]


# -- determinism and size --------------------------------------------------------------------------


def test_same_arguments_give_identical_bytes_and_mtimes(tmp_path: Path) -> None:
    kwargs: dict[str, Any] = {"sessions": 5, "mean_kb": 20, "seed": 3, "agents": ALL}
    generate(tmp_path / "a", **kwargs)
    generate(tmp_path / "b", **kwargs)
    a, b = _files(tmp_path / "a"), _files(tmp_path / "b")
    assert a == b
    for rel in a:
        assert (
            os.stat(tmp_path / "a" / rel).st_mtime_ns == os.stat(tmp_path / "b" / rel).st_mtime_ns
        )


def test_another_seed_gives_another_corpus(tmp_path: Path) -> None:
    generate(tmp_path / "a", sessions=3, mean_kb=10, seed=1)
    generate(tmp_path / "b", sessions=3, mean_kb=10, seed=2)
    assert set(_files(tmp_path / "a")) != set(_files(tmp_path / "b"))


def test_total_size_is_near_target_and_sessions_vary(corpus: tuple[Path, CorpusManifest]) -> None:
    root, manifest = corpus
    target = SESSIONS * MEAN_KB * 1024
    assert abs(manifest.totals.bytes - target) <= 0.15 * target
    for s in manifest.sessions:
        assert (root / s.file).stat().st_size == s.bytes
    sizes = [s.bytes for s in manifest.sessions if s.parent_file is None]
    assert max(sizes) > 2 * min(sizes)


def test_mtimes_are_distinct_seconds_apart_and_recorded(
    corpus: tuple[Path, CorpusManifest],
) -> None:
    root, manifest = corpus
    mtimes = sorted(s.mtime_ns for s in manifest.sessions)
    assert all(b - a >= 1_000_000_000 for a, b in zip(mtimes, mtimes[1:], strict=False))
    for s in manifest.sessions:
        assert (root / s.file).stat().st_mtime_ns == s.mtime_ns


def test_sessions_split_across_agents_and_projects(corpus: tuple[Path, CorpusManifest]) -> None:
    _, manifest = corpus
    mains = [s for s in manifest.sessions if s.parent_file is None]
    assert Counter(s.agent for s in mains) == {"pi": 6, "claude": 2, "codex": 2}
    assert manifest.totals.sessions == SESSIONS
    assert len({s.cwd for s in mains}) > 1
    assert manifest.roots == {"pi": "pi", "claude": "claude", "codex": "codex"}


def test_manifest_round_trips_and_sits_outside_the_agent_roots(
    corpus: tuple[Path, CorpusManifest],
) -> None:
    root, manifest = corpus
    assert load_manifest(root) == manifest
    assert sorted(p.name for p in root.iterdir()) == ["claude", "codex", "corpus.json", "pi"]


# -- lines, malformed lines, planted terms ---------------------------------------------------------


def test_every_line_is_json_except_the_recorded_malformed_ones(
    corpus: tuple[Path, CorpusManifest],
) -> None:
    root, manifest = corpus
    bad: set[tuple[str, int]] = set()
    for s in manifest.sessions:
        lines = _lines((root / s.file).read_bytes())
        assert len(lines) == s.lines
        for n, raw in enumerate(lines, 1):
            try:
                assert isinstance(orjson.loads(raw), dict)
            except orjson.JSONDecodeError:
                bad.add((s.file, n))
    assert bad == {(m.file, m.line) for m in manifest.malformed}
    assert len(bad) == 1  # ceil(10 / 50)


def _all_terms(manifest: CorpusManifest) -> list[PlantedTerm]:
    return [*manifest.planted, *manifest.off_branch]


def test_planted_terms_occur_exactly_where_recorded(corpus: tuple[Path, CorpusManifest]) -> None:
    root, manifest = corpus
    files = {s.file: (root / s.file).read_bytes().lower() for s in manifest.sessions}
    everything = b"".join(files.values())
    terms = _all_terms(manifest)
    assert len({p.term for p in terms}) == len(terms)
    for p in terms:
        needle = p.term.encode()
        assert everything.count(needle) == p.occurrences, p.term
        lines = {n for n, raw in enumerate(_lines(files[p.file]), 1) if needle in raw}
        assert lines == {p.line, *p.mirror_lines}
    # Nothing but planted terms holds the prefix: uniqueness by construction.
    assert everything.count(TERM_PREFIX.encode()) == sum(p.occurrences for p in terms)
    for term in manifest.negative_controls:
        assert term.encode() not in everything


def test_each_term_is_one_token_of_its_recorded_text(corpus: tuple[Path, CorpusManifest]) -> None:
    root, manifest = corpus
    for p in _all_terms(manifest):
        assert p.term.isascii() and p.term.isalnum() and p.term == p.term.lower()
        assert tokenize(p.text).count(p.term) == 1
        assert p.text in _strings(_line(root, p.file, p.line))


def test_terms_are_planted_in_every_role_and_agent(corpus: tuple[Path, CorpusManifest]) -> None:
    _, manifest = corpus
    roles = {(p.agent, p.role) for p in manifest.planted}
    assert {("claude", "user"), ("codex", "user")} <= roles
    assert {r for _, r in roles} == {"user", "assistant", "toolResult"}
    assert {p.agent for p in manifest.off_branch} >= {"pi"}
    assert {t.agent for t in manifest.tool_errors} == set(ALL)


def test_entry_ids_name_the_carrying_record(corpus: tuple[Path, CorpusManifest]) -> None:
    root, manifest = corpus
    marks: list[PlantedTerm | ToolError] = [*_all_terms(manifest), *manifest.tool_errors]
    for p in marks:
        record = _line(root, p.file, p.line)
        if p.agent == "pi":
            assert record["id"] == p.entry_id
        elif p.agent == "claude":
            assert record["uuid"] == p.entry_id
        else:
            assert p.entry_id == str(p.line)


# -- Pi --------------------------------------------------------------------------------------------


def _pi_tree(
    root: Path, rel: str
) -> tuple[dict[str, Any], dict[str, str | None], dict[str, int], str]:
    records = list(_records(root, rel))
    (first, header), entries = records[0], records[1:]
    assert first == 1
    parent: dict[str, str | None] = {}
    line_of: dict[str, int] = {}
    for n, e in entries:
        assert e["id"] not in parent, "duplicate id"
        parent[e["id"]] = e["parentId"]
        line_of[e["id"]] = n
    return header, parent, line_of, entries[-1][1]["id"]


def _active(parent: dict[str, str | None], leaf: str) -> set[str]:
    path: set[str] = set()
    node: str | None = leaf
    while node is not None:
        assert node not in path, "cycle"
        path.add(node)
        node = parent[node]
    return path


def test_pi_files_are_v3_trees_whose_active_path_holds_the_planted_terms(
    corpus: tuple[Path, CorpusManifest],
) -> None:
    root, manifest = corpus
    branched = 0
    for rel in _sessions(manifest, "pi"):
        header, parent, line_of, leaf = _pi_tree(root, rel)
        session = next(s for s in manifest.sessions if s.file == rel)
        assert header["type"] == "session" and header["version"] == 3
        assert header["id"] == session.id and header["cwd"] == session.cwd
        stamp = header["timestamp"].replace(":", "-").replace(".", "-")
        assert rel == f"pi/{encode_cwd(header['cwd'])}/{stamp}_{header['id']}.jsonl"
        assert all(p is None or p in parent for p in parent.values())
        active = {line_of[i] for i in _active(parent, leaf)}
        assert {p.line for p in manifest.planted if p.file == rel} <= active
        off = {p.line for p in manifest.off_branch if p.file == rel}
        assert not off & active
        if session.branched:
            branched += 1
            assert set(line_of.values()) - active
        else:
            assert set(line_of.values()) == active
    assert branched >= 1


def test_pi_cwd_encoding_matches_pi() -> None:
    assert encode_cwd("/Users/a/proj") == "--Users-a-proj--"
    assert encode_cwd("/home/x/my-app.v2") == "--home-x-my-app.v2--"
    assert encode_cwd("C:\\work\\app") == "--C--work-app--"


def _trace_is_valid(trace: Any) -> bool:
    """The FabricExecutionTraceV1 key and ordering rules (reference §2.2)."""
    top = {"kind", "version", "outcome", "phases", "operations", "counts", "error"}
    op_keys = {
        "type", "sequence", "ref", "provider", "action", "args", "outcome",
        "normalization", "failureStage", "error", "result", "resultTruncated",
    }  # fmt: skip
    outcomes = {"succeeded", "failed", "aborted", "timed_out"}
    if not isinstance(trace, dict) or set(trace) - top:
        return False
    if trace.get("kind") != "pi-fabric.execution" or trace.get("version") != 1:
        return False
    if trace.get("outcome") not in outcomes:
        return False
    sequences = [op["sequence"] for op in trace["operations"]]
    if any(b <= a for a, b in zip(sequences, sequences[1:], strict=False)):
        return False
    return all(not set(op) - op_keys and op["outcome"] in outcomes for op in trace["operations"])


def test_fabric_traces_are_valid_unless_a_defect_is_recorded(
    corpus: tuple[Path, CorpusManifest],
) -> None:
    root, manifest = corpus
    assert manifest.fabric_traces
    for t in manifest.fabric_traces:
        message = _line(root, t.file, t.line)["message"]
        assert message["role"] == "toolResult" and message["toolName"] == "fabric_exec"
        details = message["details"]
        if t.defect == "legacy_audits":
            assert "trace" not in details and details["audits"]
            continue
        assert _trace_is_valid(details["trace"]) is t.valid
        assert len(details["trace"]["operations"]) == t.operations
    assert {t.valid for t in manifest.fabric_traces} == {True, False}


def test_branch_summaries_carry_well_formed_envelopes(corpus: tuple[Path, CorpusManifest]) -> None:
    root, manifest = corpus
    assert manifest.branch_summaries
    for b in manifest.branch_summaries:
        record = _line(root, b.file, b.line)
        assert record["type"] == "branch_summary" and record["id"] == b.entry_id
        assert record["fromId"] == b.from_id == (record["parentId"] or "root")
        details = record["details"]
        if b.envelope == "default":
            assert set(details) == {"readFiles", "modifiedFiles"}
            continue
        assert details["kind"] == "pi-fabric.branch-summary"
        assert details["version"] == int(b.envelope[1])
        facts = details["facts"]
        assert len(facts) == b.facts
        addresses = [f["address"] for f in facts]
        assert len(set(addresses)) == len(addresses)
        assert all(f["address"] == f"{f['entryId']}/{f['subordinal']}" for f in facts)
        if b.envelope == "v1":
            assert all(f["kind"] != "fabricRun" for f in facts)


# -- Claude Code and Codex -------------------------------------------------------------------------


def test_claude_files_follow_the_transcript_format(corpus: tuple[Path, CorpusManifest]) -> None:
    root, manifest = corpus
    subagents = [s for s in manifest.sessions if s.parent_file]
    assert subagents
    for s in manifest.sessions:
        if s.agent != "claude":
            continue
        slug = "".join(c if c.isascii() and c.isalnum() else "-" for c in s.cwd)
        assert s.file.startswith(f"claude/{slug}/")
        records = [r for _, r in _records(root, s.file)]
        uuids = {r["uuid"] for r in records if "uuid" in r}
        uses: set[str] = set()
        results: set[str] = set()
        for r in records:
            if "uuid" not in r:
                assert r["type"] in {"file-history-snapshot", "ai-title"}
                continue
            assert r["sessionId"] == s.id and r["cwd"] == s.cwd
            assert r["isSidechain"] is (s.parent_file is not None)
            assert r["parentUuid"] is None or r["parentUuid"] in uuids
            if r["parentUuid"] is None and r.get("subtype") == "compact_boundary":
                assert r["logicalParentUuid"] in uuids
            content = r.get("message", {}).get("content")
            if r["type"] == "assistant":
                assert len(content) == 1
                uses |= {b["id"] for b in content if b["type"] == "tool_use"}
            elif r["type"] == "user" and isinstance(content, list):
                results |= {b["tool_use_id"] for b in content if b["type"] == "tool_result"}
        assert uses == results
    for s in subagents:
        assert s.file.startswith(s.parent_file.removesuffix(".jsonl") + "/subagents/agent-")  # type: ignore[union-attr]


def test_claude_rewinds_leave_records_off_the_active_thread(
    corpus: tuple[Path, CorpusManifest],
) -> None:
    root, manifest = corpus
    for p in manifest.off_branch:
        if p.agent != "claude":
            continue
        records = [r for _, r in _records(root, p.file)]
        parent = {
            r["uuid"]: r["parentUuid"] or r.get("logicalParentUuid") for r in records if "uuid" in r
        }
        leaf = [r["uuid"] for r in records if r.get("type") in {"user", "assistant", "system"}][-1]
        assert p.entry_id not in _active(parent, leaf)


def test_codex_files_follow_the_rollout_format(corpus: tuple[Path, CorpusManifest]) -> None:
    root, manifest = corpus
    for rel in _sessions(manifest, "codex"):
        session = next(s for s in manifest.sessions if s.file == rel)
        records = [r for _, r in _records(root, rel)]
        assert records[0]["type"] == "session_meta"
        assert records[0]["payload"]["id"] == session.id
        stamp = records[0]["payload"]["timestamp"][:19].replace(":", "-")
        assert (
            rel
            == f"codex/{stamp[:4]}/{stamp[5:7]}/{stamp[8:10]}/rollout-{stamp}-{session.id}.jsonl"
        )
        calls: list[str] = []
        outputs: list[str] = []
        for r in records:
            assert set(r) == {"timestamp", "type", "payload"}
            payload = r["payload"]
            if payload.get("type") in ("function_call", "custom_tool_call"):
                calls.append(payload["call_id"])
                if payload["type"] == "function_call":
                    assert isinstance(orjson.loads(payload["arguments"]), dict)
            elif payload.get("type") in ("function_call_output", "custom_tool_call_output"):
                outputs.append(payload["call_id"])
        assert calls == outputs and len(set(calls)) == len(calls)
    for e in manifest.tool_errors:
        if e.agent == "codex":
            output = _line(root, e.file, e.line)["payload"]["output"]
            assert "Process exited with code 0" not in output and '"exit_code":0' not in output


# -- CLI and arguments -----------------------------------------------------------------------------


def test_cli_refuses_a_non_empty_directory_unless_forced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keep.txt").write_text("x")
    argv = ["--out", str(tmp_path), "--sessions", "2", "--mean-kb", "8", "--seed", "5"]
    assert main(argv) == 2
    assert "not empty" in capsys.readouterr().err
    assert main([*argv, "--agents", "pi,codex", "--force"]) == 0
    assert "2 sessions" in capsys.readouterr().out
    manifest = load_manifest(tmp_path)
    assert {s.agent for s in manifest.sessions} == {"pi", "codex"}
    # --force replaced the earlier corpus only: other files stay, stale sessions go.
    assert main([*argv, "--seed", "6", "--force"]) == 0
    written = set(_files(tmp_path)) - {"keep.txt", "corpus.json"}
    assert written == {s.file for s in load_manifest(tmp_path).sessions}


def test_bad_arguments_are_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError):
        generate(tmp_path / "a", sessions=0, mean_kb=10, seed=1)
    with pytest.raises(ValueError):
        generate(tmp_path / "b", sessions=2, mean_kb=10, seed=1, agents=("pi", "msn"))
    with pytest.raises(ValueError):
        generate(tmp_path / "c", sessions=2, mean_kb=10, seed=1, agents=())


@pytest.mark.slow
@settings(
    max_examples=15, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(
    seed=st.integers(0, 2**32),
    sessions=st.integers(1, 5),
    agents=st.sets(st.sampled_from(ALL), min_size=1).map(lambda s: tuple(a for a in ALL if a in s)),
)
def test_any_seed_keeps_the_invariants(
    tmp_path_factory: pytest.TempPathFactory, seed: int, sessions: int, agents: tuple[str, ...]
) -> None:
    root = tmp_path_factory.mktemp("any")
    manifest = generate(root, sessions=sessions, mean_kb=6, seed=seed, agents=agents)
    data = b"".join((root / s.file).read_bytes() for s in manifest.sessions).lower()
    assert data.count(TERM_PREFIX.encode()) == sum(p.occurrences for p in _all_terms(manifest))
    assert len(manifest.planted) >= sessions
    assert len(manifest.malformed) == 1
    assert {s.agent for s in manifest.sessions} == set(agents) or sessions < len(agents)


# -- against the real reader (skipped until it exists) ---------------------------------------------


def _importable(name: str) -> bool:
    try:
        return importlib.util.find_spec(name) is not None
    except ModuleNotFoundError:
        return False


@pytest.mark.skipif(not _importable("stages.read"), reason="stages.read is not written yet")
def test_the_reader_flags_only_the_planted_malformed_lines(
    corpus: tuple[Path, CorpusManifest],
) -> None:
    from stages.parse import parse
    from stages.read import read_session

    root, manifest = corpus
    for s in manifest.sessions:
        data = (root / s.file).read_bytes()
        assert parse(data).malformed_lines == s.malformed_lines
        session = read_session(data, str(root / s.file), s.agent)
        assert ("malformed_line" in session.reasons) is bool(s.malformed_lines), s.file


@pytest.mark.skipif(not _importable("stages.lineage"), reason="stages.lineage is not written yet")
def test_the_lineage_stage_agrees_on_the_active_path(corpus: tuple[Path, CorpusManifest]) -> None:
    from stages.lineage import lineage
    from stages.read import read_session

    root, manifest = corpus
    for s in manifest.sessions:
        source = read_session((root / s.file).read_bytes(), str(root / s.file), s.agent)
        selected = set(lineage(source, "active").selected)
        active = {r.line for r in source.records if r.position in selected}
        assert {p.line for p in manifest.planted if p.file == s.file} <= active
        assert not {p.line for p in manifest.off_branch if p.file == s.file} & active


def _stage_function(name: str, *modules: str) -> Any:
    """``name`` from the first of ``modules`` that has it (the Pi Fabric readers are moving)."""
    for module in modules:
        if _importable(module):
            found = getattr(importlib.import_module(module), name, None)
            if found is not None:
                return found
    pytest.skip(f"no {name} in {modules} yet")


def test_the_fabric_readers_agree_on_validity(corpus: tuple[Path, CorpusManifest]) -> None:
    read_trace = _stage_function("read_trace", "stages.pi.fabric")
    read_branch_details = _stage_function(
        "read_branch_details", "stages.pi.branch_details", "stages.pi.fabric"
    )
    root, manifest = corpus
    for t in manifest.fabric_traces:
        details = _line(root, t.file, t.line)["message"]["details"]
        assert (read_trace(details) is not None) is t.valid, t
    for b in manifest.branch_summaries:
        envelope = read_branch_details(_line(root, b.file, b.line)["details"])
        version = None if envelope is None else f"v{envelope.version}"
        assert version == (None if b.envelope == "default" else b.envelope)


def test_no_malformed_leaves_every_line_valid(tmp_path: Path) -> None:
    with_bad = generate(tmp_path / "a", sessions=60, mean_kb=12, seed=3)
    clean = generate(tmp_path / "b", sessions=60, mean_kb=12, seed=3, malformed_lines=False)
    assert with_bad.malformed and not clean.malformed
    for f in (tmp_path / "b").rglob("*.jsonl"):
        for line in f.read_bytes().splitlines():
            orjson.loads(line)
    assert len(clean.sessions) == len(with_bad.sessions)
    assert all(not s.malformed_lines for s in clean.sessions)


def test_terms_never_break_a_codex_exec_envelope(tmp_path: Path) -> None:
    manifest = generate(tmp_path / "c", sessions=60, mean_kb=20, seed=8, agents=("codex",))
    outputs = [p for p in manifest.planted if p.role == "toolResult"]
    assert outputs
    for p in outputs:
        if p.text.startswith("Chunk ID:"):
            header, _, _ = p.text.partition("Output:\n")
            assert p.term not in header, p.text[:200]
