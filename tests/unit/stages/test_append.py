"""The append path: base + deltas must equal indexing the whole file again, or decline.

Every scenario grows one Pi file in steps (split anywhere, mid-line included), extends the hot
session at each step (a refusal falls back to a whole build, as the worker does), and then
compares base + deltas with a whole build of the final bytes: records, summaries, hash.
"""

from __future__ import annotations

import copy
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import blake3
import orjson
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from devtools.corpus import generate
from pipeline.session_job import Job, build_session
from stages.appender import Delta, HotSession, commit, extend, hot_session
from stages.built import Built
from stages.policy import Policy
from store.codec import decode
from store.deltas import concat_entries, concat_shards
from store.layout import IndexLayout
from store.records import HotShard, SessionEntries
from store.writer import StoreWriter
from tests.helpers import assistant, bash, claude_line, header, tool_result, user

DATA = Path(__file__).resolve().parents[2] / "data" / "pi"
POLICY = Policy(max_entry_chars=120)
T0 = 1_700_000_000_000
# A file being written: its mtime is now, so a cut mid-line waits (``partial_line``) rather
# than being read as a settled last line.
LIVE_NS = time.time_ns() + 3600 * 1_000_000_000


def templates() -> list[dict[str, Any]]:
    found: list[dict[str, Any]] = []
    for name in ("normalize_basic", "normalize_trace", "normalize_dupes", "normalize_branch"):
        for line in (DATA / f"{name}.jsonl").read_bytes().splitlines():
            value = orjson.loads(line)
            if value.get("type") != "session":
                found.append(value)
    found += [
        user("x", None, "a long user message " * 20, T0),
        assistant("x", None, "calling", T0, {"id": "c", "name": "read", "arguments": {}}),
        bash("x", None, "ls", "out", T0),
        tool_result("x", None, "read", "body", T0),
        {"type": "model_change", "id": "x", "parentId": None, "provider": "p", "modelId": "m"},
    ]
    return found


TEMPLATES = templates()


class Grower:
    """A session file made of generated lines, indexed at chosen prefixes."""

    def __init__(self, index: Path, path: str = "/s/--work--/grow.jsonl", agent: str = "pi"):
        self.writer = StoreWriter(index)
        self.layout = IndexLayout(index)
        self.path = path
        self.agent = agent

    def build(self, data: bytes) -> Built:
        job = Job(self.path, self.agent, "hot", POLICY, str(self.layout.root))
        return build_session(job, data, (1, 2, len(data), LIVE_NS, 20), self.writer)

    def hot(self, data: bytes) -> HotSession:
        return hot_session(self.build(data), data, keep_parsed=True)

    def entries(self, name: str) -> SessionEntries:
        return decode(self.layout.record_path(name).read_bytes(), expect=SessionEntries)

    def grow(self, data: bytes, cuts: list[int]) -> tuple[HotSession, list[Delta], int]:
        """Index data[:cuts[0]] whole, then extend to each later cut and to the end."""
        hot = self.hot(data[: cuts[0]])
        deltas: list[Delta] = []
        fast = 0
        for cut in [*cuts[1:], len(data)]:
            if cut <= hot.state.size:
                continue
            appended = extend(
                hot,
                data[hot.consumed : cut],
                (1, 2, cut, LIVE_NS, 20),
                POLICY,
                expected_hash=blake3.blake3(data[:cut]).hexdigest(),
            )
            if appended is None:
                hot = self.hot(data[:cut])
                deltas = []
                continue
            fast += 1
            delta = None
            if appended.shard is not None and appended.entries is not None:
                shard_name, shard_bytes = self.writer.put(appended.shard)
                entries_name, entries_bytes = self.writer.put(appended.entries)
                delta = Delta(
                    appended.shard, appended.entries, shard_name, entries_name,
                    shard_bytes + entries_bytes,
                )  # fmt: skip
            commit(hot, appended, delta)
            if delta is not None:
                deltas.append(delta)
        return hot, deltas, fast

    def check(self, data: bytes, hot: HotSession, deltas: list[Delta]) -> None:
        whole = self.build(data)
        base = hot.state
        # Then the summaries, hash and size are those of a whole build
        assert base.views == whole.state.views
        assert (base.size, base.source_hash) == (len(data), whole.state.source_hash)
        assert base.title == whole.state.title
        # And base + deltas read in order are the whole build's records, field for field
        # (a record's source_hash is the file's as of its own last line: trailing blank or
        # partial lines move only the state's)
        base_shard = decode(
            self.layout.record_path(base.index_record).read_bytes(), expect=HotShard
        )
        shard = concat_shards([base_shard, *(d.shard for d in deltas)])
        assert replace(shard, source_hash=base.source_hash) == whole.record
        if len(deltas) > 1:  # compacting deltas first changes nothing
            folded = concat_shards([d.shard for d in deltas])
            assert concat_shards([base_shard, folded]) == shard
        entries = concat_entries([self.entries(base.entries_record), *(d.entries for d in deltas)])
        whole_entries = self.entries(whole.state.entries_record)
        assert replace(entries, source_hash=base.source_hash) == whole_entries


def lines(ops: list[tuple[str, int, int]]) -> bytes:
    out = [orjson.dumps(header("grow", "/work")) + b"\n"]
    ids: list[str] = []
    for n, (kind, template, ref) in enumerate(ops):
        if kind == "malformed":
            out.append(b'{"type":"message","id":\n')
            continue
        if kind == "blank":
            out.append(b"\n")
            continue
        value = copy.deepcopy(TEMPLATES[template % len(TEMPLATES)])
        entry_id = ids[ref % len(ids)] if kind == "dup" and ids else f"n{n}"
        value["id"] = entry_id
        if kind == "branch" and ids:
            value["parentId"] = ids[ref % len(ids)]
        else:
            value["parentId"] = ids[-1] if ids else None
        if kind == "noid":
            del value["id"]
        else:
            ids.append(entry_id)
        out.append(orjson.dumps(value) + b"\n")
    return b"".join(out)


OPS = st.lists(
    st.tuples(
        st.sampled_from(["next"] * 12 + ["branch", "dup", "malformed", "blank", "noid"]),
        st.integers(0, 500),
        st.integers(0, 500),
    ),
    min_size=1,
    max_size=25,
)


@pytest.fixture
def grower(tmp_path: Path) -> Grower:
    return Grower(tmp_path / "index")


@settings(
    max_examples=60, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(ops=OPS, fractions=st.lists(st.floats(0, 1), min_size=1, max_size=8))
def test_base_plus_deltas_equal_a_whole_build(
    grower: Grower, ops: list[tuple[str, int, int]], fractions: list[float]
) -> None:
    data = lines(ops)
    first = len(data.split(b"\n", 1)[0]) + 1
    cuts = sorted({first + int(f * (len(data) - first)) for f in fractions})
    hot, deltas, _ = grower.grow(data, cuts)
    grower.check(data, hot, deltas)


def linear(n: int, start: int = 0) -> list[tuple[str, int, int]]:
    return [("next", start + i, 0) for i in range(n)]


def test_a_linear_session_grows_by_deltas_only(grower: Grower) -> None:
    # Given a linear session appended to line by line (and mid-line)
    data = lines(linear(30))
    offsets = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    cuts = sorted({offsets[3], *offsets[4::3], *(o - 7 for o in offsets[6::5])})
    hot, deltas, fast = grower.grow(data, cuts)
    # Then every step took the append path, and the result is exact
    assert fast == len(cuts)
    added = [e for d in deltas for e in d.shard.views[0].entries]
    assert len(added) > 20
    assert [e.index for e in added] == list(range(added[0].index, added[0].index + len(added)))
    grower.check(data, hot, deltas)


def test_a_half_written_line_waits_for_its_newline(grower: Grower) -> None:
    data = lines(linear(3))
    before_last = data.rindex(b"\n", 0, len(data) - 1) + 1
    hot, deltas, fast = grower.grow(data, [before_last, len(data) - 10])
    assert fast == 2
    # The half line made no entry and no malformed_line; its completion made one entry
    assert len(deltas) == 1
    assert "malformed_line" not in hot.state.views[0].reasons
    assert "partial_line" not in hot.state.views[0].reasons
    # While it waited, the state said so (and no record did)
    half = grower.hot(data[: len(data) - 10])
    assert "partial_line" in half.state.views[0].reasons
    assert "malformed_line" not in half.state.views[0].reasons
    grower.check(data, hot, deltas)


def test_the_parent_of_a_bridged_child_arriving_later_is_declined(grower: Grower) -> None:
    """Issue 22, item 5: a child written before its parent was bridged by the whole build;
    when the parent came (with a child of the bridged node) the tail path appended to the
    bridged path, so the live session had 5 active entries and `bridged_parent` where a
    rebuild walks through the parent and has 7."""
    lines_ = [
        header("grow", "/work"),
        user("a", None, "hello", T0),
        assistant("b", "a", "reply", T0 + 1),
        assistant("d", "c", "child before its parent", T0 + 3),
        user("c", "b", "the parent", T0 + 2),
        user("f", "e", "another child first", T0 + 6),
        user("e", "d", "its parent", T0 + 5),
        user("g", "f", "after", T0 + 7),
    ]
    data = b"".join(orjson.dumps(v) + b"\n" for v in lines_)
    ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
    hot, deltas, _ = grower.grow(data, [ends[2], ends[3], ends[4], ends[5]])  # e and g together
    grower.check(data, hot, deltas)
    assert hot.state.view("active").entry_count == 7
    assert "bridged_parent" not in hot.state.view("active").reasons


def test_a_branch_switch_is_declined(grower: Grower) -> None:
    ops = linear(6) + [("branch", 1, 2)]
    data = lines(ops)
    cut = len(data.rsplit(b"\n", 2)[0]) + 1
    hot = hot_session(grower.build(data[:cut]), data[:cut])
    assert (
        extend(
            hot, data[hot.consumed :], (1, 2, len(data), LIVE_NS, 20), POLICY, expected_hash=None
        )
        is None
    )


def test_bytes_that_do_not_hash_as_the_watcher_saw_are_declined(grower: Grower) -> None:
    data = lines(linear(4))
    cut = len(data.rsplit(b"\n", 2)[0]) + 1
    hot = hot_session(grower.build(data[:cut]), data[:cut])
    appended = extend(
        hot, data[hot.consumed :], (1, 2, len(data), LIVE_NS, 20), POLICY, expected_hash="0" * 64
    )
    assert appended is None


def test_only_hot_pi_sessions_of_version_two_or_later_have_a_tail(grower: Grower) -> None:
    data = lines(linear(2))
    assert hot_session(grower.build(data), data).tail is not None
    v1 = data.replace(b'"version":3', b'"version":1', 1)
    assert hot_session(grower.build(v1), v1).tail is None


# -- sessions without a tail reader: the stages rerun in memory ---------------------------


@pytest.fixture(scope="module")
def generated(tmp_path_factory: pytest.TempPathFactory) -> list[tuple[str, bytes]]:
    """Claude Code and Codex sessions from the project's corpus generator."""
    out = tmp_path_factory.mktemp("corpus")
    generate(out, sessions=8, mean_kb=12, seed=5, agents=("claude", "codex"))
    found = []
    for agent in ("claude", "codex"):
        for path in sorted((out / agent).rglob("*.jsonl")):
            found.append((agent, str(path)))
    return [(agent, Path(path).read_bytes()) for agent, path in found[:8]]


@settings(
    max_examples=40, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(which=st.integers(0, 7), fractions=st.lists(st.floats(0, 1), min_size=1, max_size=6))
def test_claude_and_codex_appends_rerun_in_memory_and_equal_a_whole_build(
    tmp_path: Path, generated: list[tuple[str, bytes]], which: int, fractions: list[float]
) -> None:
    agent, data = generated[which % len(generated)]
    grower = Grower(tmp_path / f"index-{which}", f"/s/{agent}/grow.jsonl", agent)
    cuts = sorted({int(f * len(data)) for f in fractions})
    hot, deltas, _ = grower.grow(data, cuts)
    grower.check(data, hot, deltas)


def test_in_memory_appends_take_the_delta_path_line_by_line(
    tmp_path: Path, generated: list[tuple[str, bytes]]
) -> None:
    # Given each generated session grown line by line from its first half
    fast = steps = 0
    replacing: dict[str, int] = {}
    for n, (agent, data) in enumerate(generated):
        grower = Grower(tmp_path / f"index-{n}", f"/s/{agent}/grow.jsonl", agent)
        offsets = [i + 1 for i, b in enumerate(data) if b == 0x0A]
        cuts = offsets[len(offsets) // 2 :: 1]
        hot, deltas, taken = grower.grow(data, cuts)
        fast += taken
        steps += len(cuts) - 1
        replacing[agent] = replacing.get(agent, 0) + sum(
            1 for d in deltas if any(v.replaces for v in d.shard.views)
        )
        grower.check(data, hot, deltas)
    # Then every line was a delta: a Claude reply continued on a new line, or a tool result
    # that completes a stored call, replaces the entries it changes (no whole rebuild)
    assert fast == steps
    assert replacing["claude"] > 0


def test_a_title_appended_reaches_the_state_as_a_whole_build_has_it(tmp_path: Path) -> None:
    # Given a Pi session and a Claude Code session each named, then renamed, while growing
    sid = "c0ffee00-0000-4000-8000-000000000001"
    pi = [header("grow", "/work"), user("a", None, "hello", T0),
          {"type": "session_info", "id": "i", "parentId": "a", "name": "first name"},
          assistant("b", "i", "reply", T0 + 1),
          {"type": "session_info", "id": "j", "parentId": "b", "name": "second name"},
          user("c", "j", "more", T0 + 2)]  # fmt: skip
    claude = [claude_line("user", "a", None, T0, "hello", session=sid),
              {"type": "ai-title", "aiTitle": "Greeting", "sessionId": sid},
              claude_line("assistant", "b", "a", T0 + 1, "reply", session=sid),
              {"type": "custom-title", "customTitle": "named", "sessionId": sid},
              {"type": "ai-title", "aiTitle": "Greeting again", "sessionId": sid},
              claude_line("user", "c", "b", T0 + 2, "more", session=sid)]  # fmt: skip
    for agent, values, path, titles in (
        ("pi", pi, "/s/--work--/grow.jsonl", [None, None, "first name", "first name",
                                              "second name", "second name"]),
        ("claude", claude, f"/s/p/{sid}.jsonl", [None, "Greeting", "Greeting", "named",
                                                 "named", "named"]),
    ):  # fmt: skip
        data = b"".join(orjson.dumps(v) + b"\n" for v in values)
        ends = [i + 1 for i, b in enumerate(data) if b == 0x0A]
        for n, end in enumerate(ends):
            grower = Grower(tmp_path / f"{agent}-{n}", path, agent)
            # When it is indexed up to a line, then grown line by line to the end
            hot, deltas, _ = grower.grow(data, [ends[0], *ends[: n + 1]])
            grower.check(data, hot, deltas)
            # Then each prefix has the title its last title line set, as a whole build does
            assert grower.hot(data[:end]).state.title == titles[n]
            assert hot.state.title == titles[-1]


def test_parsed_records_stay_in_memory_only_within_the_budget(
    tmp_path: Path, generated: list[tuple[str, bytes]]
) -> None:
    from pipeline.engine import EngineSettings, SessionEngine

    files = []
    for n, (agent, data) in enumerate(generated[:3]):
        path = tmp_path / f"s{n}.jsonl"
        path.write_bytes(data)
        files.append((agent, path))
    budget = sum(len(p.read_bytes()) for _, p in files[1:])
    engine = SessionEngine(
        tmp_path / "index",
        POLICY,
        settings=EngineSettings(parsed_bytes=budget),
        clock=lambda: 0.0,
    )
    for agent, path in files:
        engine.whole(str(path), agent, "hot")
    kept = [engine.hot(str(p)).rederive is not None for _, p in files]  # type: ignore[union-attr]
    # The most recent sessions keep their parsed records, the oldest gave them up
    assert kept == [False, True, True]
