"""Fixtures of the conformance suite: the installed CLIs, the fake model, produced scenarios.

Everything is session-scoped and lazy: a scenario's CLI runs happen the first time a test asks
for it, so ``-k`` selects the work too. Installing is done once per machine (see toolchain).
A failed install or CLI run is an error of every test that needs it, never a skip.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from tests.conformance.fake_model import FakeModel
from tests.conformance.runs import Runs
from tests.conformance.toolchain import Toolchain


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
