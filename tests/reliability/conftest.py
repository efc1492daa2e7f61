"""The attack suite of issue 22 ("never silently wrong, never stuck"), and what its cases
share: a tiny indexed Pi root.

Every case here is marked ``reliability`` (``pytest -m reliability``; like all of this
folder also ``slow``) and runs in the slow step of ``ops/test`` (``.ci/run``) in a bounded
form; ``SESSIONDEX_ATTACKS=full``
runs the fuller budgets (the differential fuzz's 6,000 steps and 150 waves, three 1 GiB
sparse files). Each item of the issue and the case that holds it (failed before its fix):

1. non-UTF-8 file names .................. test_file_names.py
2. an unreadable folder .................. test_unreadable_folders.py
   a last line without newline ........... test_unterminated_tail.py (+ unit test_parse.py)
3. a frozen worker / server, stalled clients  test_frozen_worker.py, test_stalled.py
4. disk full ............................. test_disk_full.py
5. live appends against a rebuild ........ test_differential.py (+ unit test_append.py)
6. a `--once` worker killed from outside . tests/unit/pipeline/test_pool.py
   (test_a_worker_killed_from_outside_costs_no_session)
7. NUL bytes, deep nesting ............... test_hostile_arguments.py
8. hostile files (huge lines, sparse) .... test_hostile_files.py
9. a flipped byte in a record ............ test_flipped_byte.py
10. candidate_entry_budget ............... tests/unit/query/test_recall.py
    (test_entry_budget_counts_entries_that_can_match)
11. the first append after start-up ...... measured, not asserted: devtools/bench/fresh.py
every registered agent's root, hostile ... test_agent_roots.py (agents from agent_names())
session databases (OpenCode, Goose) ...... test_databases.py (growing rows vs a rebuild, a
   writer process + SIGKILL + readers, a writer holding the lock, garbage and huge rows)
hostile `agent` values ................... test_hostile_arguments.py
kill -9 at random moments, a concurrent reader looking for torn records:
tests/integration/test_crash_kill9.py; concurrent clients of `query serve`:
tests/integration/test_serve.py.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.helpers import PiRoot, header, user

T0 = 1_700_000_000_000


def indexed_root(base: Path, text: str) -> PiRoot:
    """A Pi root of one session saying *text*, indexed by `pipeline run --once`."""
    root = PiRoot(base)
    root.write_config()
    root.session("s", [header("s1", "/w"), user("u1", None, text, T0)])
    done = subprocess.run(
        [sys.executable, "-m", "pipeline", "run", "--once", "--config", str(root.config_path)],
        capture_output=True, timeout=120,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    return root


@pytest.fixture
def root(tmp_path: Path) -> PiRoot:
    """One indexed session saying "plain words numbatterm here"."""
    return indexed_root(tmp_path, "plain words numbatterm here")


@pytest.hookimpl(tryfirst=True)  # before -m deselects by marker
def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    here = Path(__file__).parent
    for item in items:
        if here in Path(item.fspath).parents:
            item.add_marker(pytest.mark.reliability)
