"""Issue 20, "a newcomer's first hour": the checklist in docs/first-hour.md stays true, and
`pipeline` and `query` agree on what an exit code means.

The checklist maps every stumble the issue found to the test that keeps it fixed (or the
reason none can); a test renamed or deleted would leave a bullet unguarded without a word, so
each test it names must still be defined where it says.
"""

from __future__ import annotations

import argparse
import ast
import importlib
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import structlog

from pipeline.catchup import catch_up
from pipeline.cli import main as pipeline_main
from query.cli import main as query_main
from store.errors import (
    CorruptRecord,
    GenerationConflict,
    IndexOutdated,
    NotAnIndex,
    SchemaVersionError,
    SnapshotMissing,
    StoreError,
    StoreLocked,
)
from store.exits import (
    EXIT_BUSY,
    EXIT_FAILED,
    EXIT_NO_INDEX,
    EXIT_NOT_AN_INDEX,
    exit_for_store_error,
)
from store.layout import IndexLayout
from store.writer import StoreWriter
from tests.helpers import PiRoot, header, user

ROOT = Path(__file__).resolve().parents[3]
CHECKLIST = ROOT / "docs" / "first-hour.md"
NAMED = re.compile(r"`(tests/[\w/]+\.py)::(\w+)`")


@pytest.fixture(autouse=True)
def _logging_kept() -> Iterator[None]:
    # `pipeline` main points structlog at the sys.stderr of the moment, here capsys's, closed
    # after the test: later tests (tests/unit/pipeline) must not log into it
    saved = structlog.get_config()
    yield
    structlog.configure(**saved)


def _defined(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    return {n.name for n in ast.walk(tree) if isinstance(n, ast.FunctionDef | ast.AsyncFunctionDef)}


def test_every_test_the_checklist_names_exists() -> None:
    named = NAMED.findall(CHECKLIST.read_text())
    assert len(named) >= 30, "the checklist names the tests that guard its bullets"
    missing = [
        f"{file}::{name}"
        for file, name in named
        if not (ROOT / file).is_file() or name not in _defined(ROOT / file)
    ]
    assert missing == []


def test_every_checklist_row_is_guarded_or_says_why_not() -> None:
    rows = [
        line
        for line in CHECKLIST.read_text().splitlines()
        if line.startswith("| ") and not line.startswith("| bullet") and "---" not in line
    ]
    assert rows
    for row in rows:
        guard = row.rstrip(" |").rsplit(" | ", 1)[-1]
        assert NAMED.search(guard) or guard.startswith("no test:"), row


def test_a_damaged_index_is_a_failure_and_only_a_missing_one_is_no_index() -> None:
    assert exit_for_store_error(SnapshotMissing("x")) == EXIT_NO_INDEX
    # another version's index is no (readable) index yet: `pipeline run` derives it again
    assert exit_for_store_error(IndexOutdated("x", "schema 2", upgrading=True)) == EXIT_NO_INDEX
    assert exit_for_store_error(IndexOutdated("x", "schema 2", upgrading=False)) == EXIT_NO_INDEX
    assert exit_for_store_error(StoreLocked("x")) == EXIT_BUSY
    assert exit_for_store_error(NotAnIndex("x")) == EXIT_NOT_AN_INDEX
    for damaged in (
        CorruptRecord(Path("r"), "bad"),
        SchemaVersionError("x", 99, 1),
        GenerationConflict("x", "raced"),
        StoreError("x"),
    ):
        assert exit_for_store_error(damaged) == EXIT_FAILED, damaged


@pytest.fixture
def indexed(tmp_path: Path) -> PiRoot:
    pi = PiRoot(tmp_path)
    pi.session("s", [header("s", "/work/p"), user("u", None, "hello there", 1_700_000_000_000)])
    catch_up(pi.write_config())
    return pi


def test_both_commands_say_the_same_about_a_damaged_index(
    indexed: PiRoot, capsys: pytest.CaptureFixture[str]
) -> None:
    # Given an index whose CURRENT names no manifest
    IndexLayout(indexed.index).current.write_text("garbage\n")
    config = ["--config", str(indexed.config_path)]
    # Then neither command calls it "no index yet": both exit 1, naming the damage
    assert query_main(["recall", "hello", "--scope", "global", *config]) == EXIT_FAILED
    assert pipeline_main(["status", *config, "-q"]) == EXIT_FAILED
    err = capsys.readouterr().err
    assert "CURRENT does not name a manifest" in err and "pipeline run --once" not in err


def test_a_held_writer_lock_is_busy(indexed: PiRoot, capsys: pytest.CaptureFixture[str]) -> None:
    # Given another writer holding the index (a `pipeline rebuild`, say)
    with StoreWriter(indexed.index).lock():
        # Then a run exits 3, the code `query serve` also gives when its socket is taken
        # (tests/integration/test_serve.py), and the unit's restart policy retries
        assert pipeline_main(["run", "--once", "--config", str(indexed.config_path), "-q"]) == 3
    assert EXIT_BUSY == 3
    capsys.readouterr()


DOCS = [ROOT / "README.md", ROOT / "ops" / "runbook.md", *sorted((ROOT / "docs").glob("*.md"))]


@pytest.mark.parametrize("doc", DOCS, ids=lambda p: p.name)
def test_the_docs_name_only_files_a_clone_has(doc: Path) -> None:
    # A user's clone has no ../shared (the project's design notes lived there once): links
    # resolve inside the checkout, and ../shared is named only as where the optional real
    # fixtures may be found.
    text = doc.read_text()
    for target in re.findall(r"\]\(([^)#\s]+)\)", text):
        if not target.startswith(("http://", "https://", "mailto:")):
            assert (doc.parent / target).exists(), f"{doc.name} links to {target}"
    named = {m for m in re.findall(r"\.\./shared/[\w./-]*", text)}
    assert named <= {"../shared/fixtures/real", "../shared/fixtures/real/"}, named


@pytest.mark.parametrize("command", ["pipeline", "query"])
@pytest.mark.parametrize("shell", ["bash", "zsh"])
def test_completion_offers_every_subcommand(
    command: str, shell: str, capsys: pytest.CaptureFixture[str]
) -> None:
    module = importlib.import_module(f"{command}.cli")
    parser = module._parser()
    [sub] = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
    assert module.main(["completion", shell]) == 0
    script = capsys.readouterr().out
    missing = [name for name in sub.choices if name not in script]
    assert len(sub.choices) >= 4 and missing == []


def test_property_tests_run_without_a_clock() -> None:
    # tests/conftest.py: hypothesis's 200 ms deadline per example fails on a loaded machine
    from hypothesis import settings

    assert settings.default.deadline is None
