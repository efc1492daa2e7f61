"""A folder under a root that cannot be listed is named, and what it held is kept.

It used to vanish in silence: its sessions were dropped as if deleted and a term they held 7
times returned 0 hits with ``complete: true``. Root reads every folder whatever its mode, so
the refusal is injected where the OS would raise it (``os.scandir``, which ``os.walk`` uses).
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pipeline.catchup import catch_up
from pipeline.status import collect_status
from query.engine import Engine
from tests.helpers import PiRoot, header, user

T0 = 1_700_000_000_000


@pytest.fixture
def root(tmp_path: Path) -> PiRoot:
    root = PiRoot(tmp_path)
    root.write_config()
    for n in range(7):
        root.session(f"a{n}", [header(f"a{n}", "/w/a"), user("u", None, f"wombatterm {n}", T0)],
                     cwd="/w/a")  # fmt: skip
    root.session("b", [header("b", "/w/b"), user("u", None, "elsewhere", T0)], cwd="/w/b")
    return root


def refuse(monkeypatch: pytest.MonkeyPatch, folder: Path) -> None:
    real = os.scandir

    def scandir(path: Any = ".") -> Any:
        if os.fspath(path) == str(folder):
            raise PermissionError(13, "Permission denied", str(folder))
        return real(path)

    monkeypatch.setattr(os, "scandir", scandir)


def recall(root: PiRoot, term: str) -> dict[str, Any]:
    with Engine(root.write_config()) as engine:
        result: dict[str, Any] = engine.recall({"query": term, "scope": "global"})
    return result


@pytest.fixture
def folder_a(root: PiRoot) -> Iterator[Path]:
    yield root.root / "--w-a--"


def test_sessions_of_an_unreadable_folder_stay_and_coverage_says_why(
    root: PiRoot, folder_a: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    config = root.write_config()
    catch_up(config)
    before = recall(root, "wombatterm")
    assert before["total"] == 7 and before["coverage"]["complete"]

    refuse(monkeypatch, folder_a)
    report = catch_up(config)
    assert report.removed == 0
    after = recall(root, "wombatterm")
    assert after["total"] == 7, "what the index held of the folder is kept"
    assert after["coverage"]["complete"] is False
    assert "source_unreadable" in after["coverage"]["reasons"]

    status = collect_status(config)
    assert status.skipped_sessions == [
        {"path": str(folder_a), "agent": "pi", "reason": "source_unreadable"}
    ]


def test_the_query_side_names_a_folder_that_became_unreadable(
    root: PiRoot, folder_a: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    catch_up(root.write_config())
    refuse(monkeypatch, folder_a)  # after the generation was published: only queries see it
    result = recall(root, "wombatterm")
    assert result["coverage"]["complete"] is False
    assert "source_unreadable" in result["coverage"]["reasons"]
    monkeypatch.undo()
    assert recall(root, "wombatterm")["coverage"]["complete"], "readable again: complete again"


def test_an_empty_answer_over_an_unreadable_folder_is_not_authoritative(
    root: PiRoot, folder_a: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    refuse(monkeypatch, folder_a)  # unreadable from the first build on
    catch_up(root.write_config())
    result = recall(root, "wombatterm")
    assert result["total"] == 0
    assert result["coverage"]["complete"] is False
