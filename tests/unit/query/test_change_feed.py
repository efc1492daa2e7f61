"""A long-lived engine on a change feed answers exactly as one that stats every file.

Two engines read one index: ``plain`` stats every session per request (as a one-shot CLI
does), ``live`` keeps verdicts and listings and drains its inotify feed per request. After
each file operation both answer the same requests and must agree to the byte; the feed's
shortcuts (verdicts kept, listings reused, whole-scope memos) are then invisible.
"""

from __future__ import annotations

import dataclasses
import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from query.changes import IN_Q_OVERFLOW, Changes, encode_event
from query.engine import Engine
from query.freshness import Freshness
from tests.helpers import PiRoot, assistant, header, jsonl, user
from tests.unit.query.kit import has_inotify

T0 = 1_700_000_000_000
CWD = "/work/proj"
OTHER = "/work/other"


pytestmark = pytest.mark.skipif(not has_inotify(), reason="inotify is not available here")


def chat(sid: str, word: str, cwd: str = CWD) -> list[dict[str, Any]]:
    return [
        header(sid, cwd, T0),
        user("u", None, f"please look at {word} now", T0 + 1),
        assistant("a", "u", f"the {word} is fixed", T0 + 2),
    ]


class Pair:
    """One Pi root and index, a stat-every-time engine and a change-feed engine."""

    def __init__(self, base: Path) -> None:
        base.mkdir(parents=True, exist_ok=True)
        self.pi = PiRoot(base)
        self.config = self.pi.write_config()
        self.plain = Engine(self.config)
        self.live = Engine(self.config, changes=True)
        assert self.live.changes is not None

    def folder(self, cwd: str = CWD) -> Path:
        return self.pi.root / ("--" + cwd.strip("/").replace("/", "-") + "--")

    def write(self, name: str, word: str, cwd: str = CWD) -> Path:
        return self.pi.session(name, chat(name, word, cwd), cwd=cwd)

    def build(self) -> None:
        from pipeline.catchup import catch_up

        catch_up(self.config, processes=1)

    def requests(self) -> list[tuple[str, dict[str, Any], str]]:
        out: list[tuple[str, dict[str, Any], str]] = [
            ("recall", {"query": "fixed", "scope": "global"}, CWD),
            ("recall", {"query": "fixed", "scope": "project"}, CWD),
            ("recall", {"query": "fixed", "scope": "project"}, OTHER),
            ("recall", {"query": "fixed", "scope": "session"}, CWD),
            ("recall", {"query": "fixed", "scope": "global", "agent": "pi"}, CWD),
            ("sessions", {"scope": "global"}, CWD),
            ("sessions", {"scope": "project"}, CWD),
        ]
        for name in ("a", "b", "c"):
            for folder in (self.folder(CWD), self.folder(OTHER)):
                target = str(folder / f"{name}.jsonl")
                out.append(("recall", {"query": "fixed", "scope": f"session:{target}"}, CWD))
                out.append(("expand", {"session": target, "index": 0}, CWD))
        return out

    def answers(self, engine: Engine) -> list[Any]:
        out: list[Any] = []
        for op, args, cwd in self.requests():
            try:
                out.append(getattr(engine, op)(args, cwd=cwd))
            except Exception as exc:  # an error is an answer too; both must give it
                out.append((type(exc).__name__, str(exc)))
        return out

    def agree(self) -> list[Any]:
        """Both engines' answers, twice (the second from whatever the first kept)."""
        plain = self.answers(self.plain)
        assert self.answers(self.live) == plain
        assert self.answers(self.live) == plain
        return plain

    def close(self) -> None:
        self.plain.close()
        self.live.close()


@pytest.fixture
def pair(tmp_path: Path) -> Iterator[Pair]:
    p = Pair(tmp_path / "p")
    p.write("a", "alpha")
    p.write("b", "beta")
    p.write("a", "gamma", cwd=OTHER)
    p.build()
    yield p
    p.close()


def coverage(pair: Pair, engine: Engine) -> dict[str, Any]:
    result: dict[str, Any] = engine.recall({"query": "fixed", "scope": "global"}, cwd=CWD)
    return dict(result["coverage"])


def test_unchanged_files_agree_and_are_complete(pair: Pair) -> None:
    pair.agree()
    assert coverage(pair, pair.live)["complete"] is True


@pytest.mark.parametrize(
    "op",
    [
        "append",
        "touch",
        "chmod",
        "replace_same_bytes",
        "replace_other_bytes",
        "truncate",
        "delete",
        "rename_file",
        "new_file",
        "delete_folder",
        "rename_folder",
        "rename_root",
    ],
)
def test_each_file_operation_between_requests(pair: Pair, op: str) -> None:
    before = pair.agree()
    path = pair.folder() / "a.jsonl"
    if op == "append":
        with path.open("ab") as f:
            f.write(jsonl([user("u2", "a", "more fixed text", T0 + 3)]))
    elif op == "touch":
        os.utime(path, ns=(T0 * 1_000_000, T0 * 1_000_000))
    elif op == "chmod":
        path.chmod(0o600)
    elif op == "replace_same_bytes":
        tmp = path.with_name(".a.tmp")
        tmp.write_bytes(path.read_bytes())
        os.replace(tmp, path)
    elif op == "replace_other_bytes":
        tmp = path.with_name(".a.tmp")
        tmp.write_bytes(jsonl(chat("a", "delta")))
        os.replace(tmp, path)
    elif op == "truncate":
        os.truncate(path, 10)
    elif op == "delete":
        path.unlink()
    elif op == "rename_file":
        path.rename(path.with_name("c.jsonl"))
    elif op == "new_file":
        pair.write("c", "epsilon")
    elif op == "delete_folder":
        for entry in pair.folder().iterdir():
            entry.unlink()
        pair.folder().rmdir()
    elif op == "rename_folder":
        pair.folder().rename(pair.folder().with_name("--moved--"))
    else:
        root = pair.pi.root
        root.rename(root.with_name("pi-old"))
        root.mkdir()
    after = pair.agree()
    if op not in ("chmod", "replace_same_bytes", "touch"):
        assert after != before  # the operation is visible, to both
    assert coverage(pair, pair.live) == coverage(pair, pair.plain)


def test_the_change_is_seen_by_the_request_right_after_it(pair: Pair) -> None:
    assert coverage(pair, pair.live)["staleSessions"] == 0
    with (pair.folder() / "b.jsonl").open("ab") as f:
        f.write(b"{}\n")
    assert coverage(pair, pair.live)["staleSessions"] == 1
    (pair.folder() / "b.jsonl").unlink()
    cov = coverage(pair, pair.live)
    assert cov["staleSessions"] == 1
    assert "source_unavailable" in cov["reasons"]


def test_a_new_generation_is_agreed_on_and_complete_again(pair: Pair) -> None:
    pair.agree()
    with (pair.folder() / "a.jsonl").open("ab") as f:
        f.write(jsonl([user("u2", "a", "more fixed text", T0 + 3)]))
    pair.agree()
    assert coverage(pair, pair.live)["complete"] is False
    pair.build()
    pair.agree()
    assert coverage(pair, pair.live)["complete"] is True


def test_overflow_makes_every_verdict_observed_again(pair: Pair) -> None:
    live = pair.live
    assert live.changes is not None
    assert coverage(pair, live)["staleSessions"] == 0
    with (pair.folder() / "a.jsonl").open("ab") as f:
        f.write(b"{}\n")
    # lose the events, as a full kernel queue would: the engine keeps its old verdict ...
    live.changes.drain()
    assert coverage(pair, live)["staleSessions"] == 0
    # ... until the queue says it overflowed
    live.changes.inject(encode_event(-1, IN_Q_OVERFLOW))
    assert coverage(pair, live)["staleSessions"] == 1
    assert coverage(pair, live) == coverage(pair, pair.plain)


def test_a_closed_engine_falls_back_to_stat(pair: Pair) -> None:
    assert coverage(pair, pair.live)["staleSessions"] == 0
    pair.live.close()
    with (pair.folder() / "a.jsonl").open("ab") as f:
        f.write(b"{}\n")
    assert coverage(pair, pair.live)["staleSessions"] == 1


def test_no_verdict_survives_a_new_state_for_the_path(tmp_path: Path) -> None:
    feed = Changes.open()
    assert feed is not None
    pair = Pair(tmp_path / "p")
    try:
        pair.write("a", "alpha")
        pair.build()
        gen = pair.plain.refresh()
        (state,) = gen.ordered()
        freshness = Freshness(feed)
        assert freshness.observe(state).status == "fresh"
        # indexed again with other bytes: the file did not change, the verdict must not carry
        other = dataclasses.replace(state, size=state.size + 1, source_hash="0" * 64)
        assert freshness.observe(other).status == "changed"
        assert freshness.observe(state).status == "fresh"
    finally:
        pair.close()
        feed.close()


def test_a_hard_linked_file_is_never_trusted(pair: Pair, tmp_path: Path) -> None:
    path = pair.folder() / "a.jsonl"
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    os.link(path, elsewhere / "alias.jsonl")
    assert coverage(pair, pair.live)["staleSessions"] == 0
    # a write through the other link is reported to the other folder only
    with (elsewhere / "alias.jsonl").open("ab") as f:
        f.write(b"{}\n")
    assert coverage(pair, pair.live)["staleSessions"] == 1


# ---------------------------------------------------------------------- generated sequences

OPS = st.sampled_from(
    [
        "append",
        "touch",
        "replace",
        "delete",
        "create",
        "rename",
        "mkdir_other",
        "rename_folder",
        "build",
    ]
)


@settings(
    max_examples=12,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(ops=st.lists(st.tuples(OPS, st.sampled_from(["a", "b", "c"])), min_size=1, max_size=6))
def test_generated_operation_sequences_agree(tmp_path_factory: Any, ops: Any) -> None:
    pair = Pair(tmp_path_factory.mktemp("gen"))
    try:
        pair.write("a", "alpha")
        pair.write("b", "beta")
        pair.build()
        pair.agree()
        for i, (op, name) in enumerate(ops):
            folder = pair.folder()
            path = folder / f"{name}.jsonl"
            if op == "append" and path.exists():
                with path.open("ab") as f:
                    f.write(jsonl([user(f"x{i}", "a", f"word{i} fixed", T0 + 10 + i)]))
            elif op == "touch" and path.exists():
                os.utime(path, ns=(T0 * 1_000_000 + i, T0 * 1_000_000 + i))
            elif op == "replace" and path.exists():
                tmp = folder / ".tmp"
                tmp.write_bytes(jsonl(chat(name, f"word{i}")))
                os.replace(tmp, path)
            elif op == "delete" and path.exists():
                path.unlink()
            elif op == "create":
                pair.write(name, f"word{i}")
            elif op == "rename" and path.exists():
                path.rename(folder / f"{name}{i}.jsonl")
            elif op == "mkdir_other":
                pair.write(name, f"word{i}", cwd=OTHER)
            elif op == "rename_folder" and folder.exists():
                folder.rename(folder.with_name(f"--gone{i}--"))
            elif op == "build":
                pair.build()
            pair.agree()
    finally:
        pair.close()


def test_a_file_written_request_after_request_is_reported_each_time(pair: Pair) -> None:
    a, b = pair.folder() / "a.jsonl", pair.folder() / "b.jsonl"
    original = b.read_bytes()
    steps: list[tuple[int, bool]] = []
    for step in range(6):
        if step in (0, 1, 2):  # the same file keeps moving; its status only once
            with a.open("ab") as f:
                f.write(jsonl([user(f"w{step}", "a", "fixed again", T0 + 10 + step)]))
        elif step == 3:
            b.unlink()
        elif step == 4:
            tmp = b.with_name(".b.tmp")
            tmp.write_bytes(original)
            os.replace(tmp, b)  # same bytes, new inode: fresh again (by hash)
        pair.agree()
        cov = coverage(pair, pair.live)
        steps.append((cov["staleSessions"], "source_unavailable" in cov["reasons"]))
    assert steps == [(1, False), (1, False), (1, False), (2, True), (1, False), (1, False)]


def test_a_filesystem_the_kernel_cannot_vouch_for_is_stat_ed(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # as on NFS or FUSE: a change made elsewhere would raise no event here
    monkeypatch.setattr("query.changes._LOCAL_FS", frozenset())
    pair = Pair(tmp_path / "p")
    try:
        pair.write("a", "alpha")
        pair.build()
        assert pair.live.changes is not None
        assert not pair.live.changes.watch(str(pair.folder()))
        assert coverage(pair, pair.live)["staleSessions"] == 0
        with (pair.folder() / "a.jsonl").open("ab") as f:
            f.write(b"{}\n")
        # no event can come: only stat-ing again finds the change
        pair.live.changes.drain()
        assert coverage(pair, pair.live)["staleSessions"] == 1
        pair.agree()
    finally:
        pair.close()


def test_following_between_requests_keeps_the_queue_short_and_the_answer_exact(
    pair: Pair,
) -> None:
    live = pair.live
    assert live.changes is not None
    assert coverage(pair, live)["staleSessions"] == 0
    with (pair.folder() / "a.jsonl").open("ab") as f:
        f.write(b"{}\n")
    live.follow()  # as an idle query serve does every tick
    assert str(pair.folder() / "a.jsonl") not in live.changes.drain().paths
    assert coverage(pair, live)["staleSessions"] == 1


def test_an_index_deleted_and_built_again_is_followed(pair: Pair) -> None:
    import shutil

    pair.agree()
    pair.write("c", "epsilon")
    shutil.rmtree(pair.pi.index)
    with pytest.raises(Exception) as missing:
        pair.live.recall({"query": "fixed", "scope": "global"}, cwd=CWD)
    assert type(missing.value).__name__ == "SnapshotMissing"
    pair.build()
    pair.agree()


def test_a_new_generation_carries_the_global_scope_over_and_answers_alike(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import query.recall as recall

    pair = Pair(tmp_path / "p")
    try:
        for i in range(70):  # a scope large enough to be carried over
            pair.write(f"s{i}", f"word{i}")
        pair.build()
        pair.agree()
        carried: list[bool] = []
        real = recall._carried

        def spy(sessions: Any, freshness: Any) -> Any:
            out = real(sessions, freshness)
            carried.append(out is not None)
            return out

        monkeypatch.setattr(recall, "_carried", spy)
        folder = pair.folder()
        with (folder / "s3.jsonl").open("ab") as f:  # a new generation moves one session
            f.write(jsonl([user("x1", "a", "word3 fixed more", T0 + 20)]))
        pair.build()
        pair.agree()
        assert any(carried)
        with (folder / "s5.jsonl").open("ab") as f:  # stale until the next build
            f.write(jsonl([user("x2", "a", "word5 fixed more", T0 + 21)]))
        pair.agree()
        pair.build()
        pair.agree()
        (folder / "s7.jsonl").unlink()  # missing, then gone from the next generation
        pair.agree()
        pair.build()
        pair.agree()
        os.utime(folder / "s9.jsonl", ns=(T0 * 1_000_000, T0 * 1_000_000))  # same bytes
        pair.agree()
        pair.build()
        pair.agree()
        for name in ("s11", "s12"):  # a session the index now cuts: its reason joins, then goes
            with (folder / f"{name}.jsonl").open("ab") as f:
                f.write(b"{not json\n")
        pair.build()
        answers = pair.agree()
        assert answers[0]["coverage"]["incompleteSessions"] == 2
        (folder / "s11.jsonl").write_bytes(jsonl(chat("s11", "word11")))
        pair.build()
        assert pair.agree()[0]["coverage"]["incompleteSessions"] == 1
    finally:
        pair.close()
