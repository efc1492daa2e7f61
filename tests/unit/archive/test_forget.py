"""`pipeline forget` and `[sources] exclude`: nothing of a forgotten session can be read back."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from pipeline.catchup import catch_up
from pipeline.forget import ForgetError, Selection, forget, parse_before, select
from pipeline.runner import InlineRunner
from pipeline.settings import RunSettings
from store.archive import Archive
from store.archive_writer import ArchiveWriter
from store.reader import open_snapshot
from tests.unit.archive.grep import files_holding
from tests.unit.archive.kit import ClaudeRoot, claude_session, entry_hits, recall

SECRET = "quixotrellis"
OTHER = "5e55107a-0000-4000-8000-0000000c0de5"


def _two_sessions(root: ClaudeRoot) -> tuple[Path, Path]:
    # the planted word lives in a cold session (its terms also reach a lexicon segment) and
    # the hot one mentions it once in passing, so forgetting one leaves a witness
    secret = root.session("secret", claude_session(SECRET), mtime_s=1_000)
    kept = root.session("kept", claude_session("harmless", session=OTHER), mtime_s=2_000)
    return secret, kept


def test_forget_leaves_no_byte_of_the_session_in_index_or_archive(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config(hotSessions=1)
    secret, kept = _two_sessions(root)
    catch_up(config)
    # the grep sees the word where it is: records, the lexicon, the archive
    assert any(p.startswith("records/") for p in files_holding(config.index_dir, SECRET))
    assert files_holding(config.archive_dir, SECRET)
    assert entry_hits(config, SECRET)

    report = forget(config, Selection(sessions=(str(secret),)))

    assert [f["path"] for f in report.forgotten] == [str(secret)]
    assert report.by == "this command"
    assert (
        files_holding(config.index_dir, SECRET) == files_holding(config.archive_dir, SECRET) == []
    )
    assert recall(config, SECRET)["hits"] == []
    assert secret.exists()  # the source is not ours to delete
    # the file is still there, but it is never indexed again
    catch_up(config)
    assert (
        files_holding(config.index_dir, SECRET) == files_holding(config.archive_dir, SECRET) == []
    )
    paths = {s.path for s in open_snapshot(config.index_dir).manifest.sessions}
    assert paths == {str(kept)}
    # and the journal said so, like any other event
    from store.journal import FileJournal

    journal = FileJournal(config.index_dir / "journal")
    kinds = [(e.kind, e.path) for e in journal.read(-1, limit=100)]
    journal.close()
    assert ("forget", str(secret)) in kinds


def test_forget_of_an_archived_session(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config(hotSessions=1)
    secret, _ = _two_sessions(root)
    catch_up(config)
    secret.unlink()
    catch_up(config)
    assert entry_hits(config, SECRET)  # kept from the archive
    report = forget(config, Selection(project="/work/proj", before_ns=1_500 * 10**9))
    assert [f["path"] for f in report.forgotten] == [str(secret)]
    assert (
        files_holding(config.index_dir, SECRET) == files_holding(config.archive_dir, SECRET) == []
    )
    assert Archive(config.archive_dir).head(str(secret)) is None


def test_forget_through_the_running_pipeline_collects_old_generations(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config(hotSessions=1)
    secret, kept = _two_sessions(root)
    settings = RunSettings(workers=1, gc_grace_s=0.0, gc_interval_s=0.0)
    with InlineRunner(config, settings) as runner:
        runner.run_until_idle()
        assert files_holding(config.index_dir, SECRET)
        # what `pipeline forget` does while the pipeline holds the lock: the tombstones
        ArchiveWriter(config.archive_dir, max_bytes=1 << 30).forget([str(secret)])
        runner.run_until_idle()
        runner.publisher._collect(runner.clock() + 1)  # the purge pass after the grace period
        manifest = open_snapshot(config.index_dir).manifest
        assert {s.path for s in manifest.sessions} == {str(kept)}
        # the dropped cold session's lexicon bucket is built again without its terms
        runner.run_until_idle()
        runner.publisher._collect(runner.clock() + 2)
    assert (
        files_holding(config.index_dir, SECRET) == files_holding(config.archive_dir, SECRET) == []
    )


def test_exclude_keeps_paths_out_and_purges_what_was_indexed(tmp_path: Path) -> None:
    root = ClaudeRoot(tmp_path)
    config = root.write_config(hotSessions=1)
    secret, kept = _two_sessions(root)
    catch_up(config)
    assert files_holding(config.index_dir, SECRET)
    config = replace(config, exclude=("**/secret.jsonl",))
    report = catch_up(config)
    assert report.forgotten == 1
    from store.writer import StoreWriter

    StoreWriter(config.index_dir).collect_garbage(keep_generations=1, grace_seconds=0)
    assert (
        files_holding(config.index_dir, SECRET) == files_holding(config.archive_dir, SECRET) == []
    )
    assert {s.path for s in open_snapshot(config.index_dir).manifest.sessions} == {str(kept)}


def test_exclude_globs_match_absolute_and_root_relative_paths(tmp_path: Path) -> None:
    from pipeline.keepout import KeepOut

    root = ClaudeRoot(tmp_path)
    config = root.write_config()
    absolute = replace(config, exclude=(f"{root.root}/-work-*/**",))
    relative = replace(config, exclude=("-work-proj/*.jsonl",))
    path = str(root.root / "-work-proj" / "s.jsonl")
    deeper = str(root.root / "-work-proj" / "s" / "subagents" / "agent-1.jsonl")
    assert KeepOut(absolute).excluded(path) and KeepOut(absolute).excluded(deeper)
    assert KeepOut(relative).excluded(path) and not KeepOut(relative).excluded(deeper)
    assert not KeepOut(config).excluded(path)


def test_selection_needs_something_and_reads_dates() -> None:
    from store.records import Manifest

    with pytest.raises(ForgetError):
        select(Manifest(1, 0, "", {}, 0, ()), Selection())
    assert parse_before("2026-01-31") < parse_before("2026-02-01")
    with pytest.raises(ForgetError):
        parse_before("last tuesday")
