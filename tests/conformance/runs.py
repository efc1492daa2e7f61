"""Each scenario produced and indexed at most once per test session, on first use."""

from __future__ import annotations

from pathlib import Path

from tests.conformance.agents import DRIVERS
from tests.conformance.fake_model import FakeModel
from tests.conformance.indexed import Indexed, index
from tests.conformance.produce import (
    PiBranch,
    Produced,
    produce,
    produce_pi_branch,
    record_types,
)
from tests.conformance.scenarios import SCENARIOS
from tests.conformance.toolchain import Toolchain

__all__ = ["SEEN", "Runs"]

SEEN: dict[str, dict[str, int]] = {}
"""Record types each produced scenario's files hold (``record_types``), for the run report."""


class Runs:
    """Produces and indexes each scenario at most once per test session."""

    def __init__(self, chain: Toolchain, model: FakeModel, base: Path) -> None:
        self.chain = chain
        self.model = model
        self.base = base
        self._produced: dict[str, Produced | PiBranch | BaseException] = {}
        self._indexed: dict[str, Indexed] = {}

    def _get(self, key: str) -> Produced | PiBranch:
        if key not in self._produced:
            scenario = SCENARIOS[key]
            try:
                if scenario.sdk:
                    self._produced[key] = produce_pi_branch(
                        scenario, self.chain, self.base / "runs"
                    )
                else:
                    driver = DRIVERS[scenario.agent](self.chain, self.model.url)
                    self._produced[key] = produce(scenario, driver, self.model, self.base / "runs")
            except BaseException as exc:  # remembered: the next test of this scenario says so too
                self._produced[key] = exc
        found = self._produced[key]
        if not isinstance(found, BaseException):
            made = found.produced if isinstance(found, PiBranch) else found
            SEEN[key] = record_types(made.files, made.scenario.agent)
        if isinstance(found, BaseException):
            raise AssertionError(f"scenario {key} could not be produced: {found}") from found
        return found

    def produced(self, key: str) -> Produced:
        found = self._get(key)
        return found.produced if isinstance(found, PiBranch) else found

    def pi_branch(self) -> PiBranch:
        found = self._get("pi/branch")
        assert isinstance(found, PiBranch)
        return found

    def indexed(self, key: str, *, cold: bool = False) -> Indexed:
        """The scenario indexed; ``cold`` with every session cold (digests only, no shards)."""
        name = f"{key}/cold" if cold else key
        if name not in self._indexed:
            produced = self.produced(key)
            self._indexed[name] = index(
                produced.home, self.base / "index" / name, hot_sessions=0 if cold else None
            )
        return self._indexed[name]
