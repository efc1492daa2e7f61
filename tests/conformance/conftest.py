"""Fixtures of the conformance suite: the installed CLIs, the fake model, produced scenarios.

Everything is session-scoped and lazy: a scenario's CLI runs happen the first time a test asks
for it, so ``-k`` selects the work too. Installing is done once per machine (see toolchain).
A failed install or CLI run is an error of every test that needs it, never a skip.
"""

from __future__ import annotations

import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conformance.fake_model import FakeModel
from tests.conformance.runs import SEEN, Runs
from tests.conformance.toolchain import Toolchain, versions


@pytest.fixture(scope="session")
def toolchain() -> Toolchain:
    return Toolchain.install_all()


@pytest.fixture(scope="session")
def fake_model() -> Iterator[FakeModel]:
    model = FakeModel()
    yield model
    model.close()


@pytest.fixture(scope="session")
def runs(
    toolchain: Toolchain, fake_model: FakeModel, tmp_path_factory: pytest.TempPathFactory
) -> Runs:
    return Runs(toolchain, fake_model, tmp_path_factory.mktemp("conformance"))


# ------------------------------------------------------------------------ the run's report
# With $SESSIONDEX_CONFORMANCE_REPORT set, the session ends by writing one JSON object there:
# the versions used, each test's outcome and first failure line, and the record types each
# scenario's files hold. ops/conformance --latest compares two such reports.

_OUTCOMES: dict[str, dict[str, str]] = {}


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    if report.when == "call" or report.outcome != "passed":
        message = ""
        if report.outcome != "passed":
            text = str(report.longrepr) if report.longrepr is not None else ""
            errors = [x[1:].strip() for x in text.splitlines() if x.startswith("E ")]
            lines = text.strip().splitlines()
            message = errors[0] if errors else (lines[-1] if lines else "")
        previous = _OUTCOMES.get(report.nodeid)
        if previous is None or previous["outcome"] == "passed":
            _OUTCOMES[report.nodeid] = {"outcome": report.outcome, "message": message[:500]}


def pytest_sessionfinish(session: pytest.Session, exitstatus: int) -> None:
    target = os.environ.get("SESSIONDEX_CONFORMANCE_REPORT")
    if not target:
        return
    report = {"versions": versions(), "tests": _OUTCOMES, "recordTypes": SEEN}
    Path(target).write_text(json.dumps(report, indent=1, sort_keys=True) + "\n")
