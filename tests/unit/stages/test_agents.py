"""The adapter registry: one line per agent in ``store.agents``, one folder per adapter, and
every layer reading the same names (tests/integration/test_new_adapter.py adds one)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from query.cli import _parser
from query.mcp import TOOLS
from stages.adapter import Adapter
from stages.agents import adapter, adapters, default_roots
from stages.errors import BadInput
from store.agents import REGISTERED, agent_names
from store.config import Config, ConfigError
from store.names import AGENTS
from store.sources import ProjectFolder, SessionFiles, folder_names

STAGES = Path(__file__).resolve().parents[3] / "stages"


def test_every_registered_agent_is_one_folder_with_its_adapter() -> None:
    for name in REGISTERED:
        # a registered name has stages/<name>/adapter.py, whose ADAPTER is that agent's
        assert (STAGES / name / "adapter.py").is_file()
        found = adapter(name)
        assert isinstance(found, Adapter) and found.name == name
        # a central folder under home, or none at all (Aider: read only where configured)
        assert found.default_root.startswith("~/") or found.default_root == ""
    assert [a.name for a in adapters()] == list(agent_names())
    central = [a.name for a in adapters() if a.default_root]
    assert list(default_roots()) == central
    assert len(set(default_roots().values())) == len(central)
    assert "aider" not in default_roots()


def test_no_agent_takes_a_reserved_sources_key() -> None:
    assert "exclude" not in REGISTERED  # [sources] exclude holds globs, not a root


def test_no_adapter_folder_is_left_unregistered() -> None:
    folders = {p.parent.name for p in STAGES.glob("*/adapter.py")}
    assert folders == set(REGISTERED)


def test_an_unregistered_agent_is_bad_input() -> None:
    with pytest.raises(BadInput, match="unknown agent 'msn'"):
        adapter("msn")


def test_the_read_side_and_the_config_take_the_registered_names() -> None:
    assert agent_names() == AGENTS
    parser = _parser()
    for command in ("recall", "sessions", "catalog", "secrets"):
        args = parser.parse_args([command, "--agent", "omp"])
        assert args.agent == "omp"
    schemas = [t.schema for t in TOOLS.values() if "agent" in t.schema.get("properties", {})]
    assert len(schemas) >= 3
    for schema in schemas:
        assert schema["properties"]["agent"]["enum"] == list(agent_names())
    config = Config.from_mapping({"sources": {"omp": "/x/omp"}}, base=Path("/"))
    assert dict(config.roots) == {"omp": Path("/x/omp")}
    expected = re.escape(", ".join((*agent_names(), "exclude")))
    with pytest.raises(ConfigError, match=rf"sources\.msn \(one of {expected}"):
        Config.from_mapping({"sources": {"msn": "/x"}}, base=Path("/"))


def test_session_files_are_the_adapters_patterns() -> None:
    pi, codex, omp = adapter("pi").files, adapter("codex").files, adapter("omp").files
    assert pi.matches("2026_x.jsonl") and not pi.matches("x.json") and not pi.matches("x.txt")
    assert not pi.matches(".x.jsonl.tmp") and not pi.matches(".x.jsonl")  # a writer's temp file
    assert codex.matches("rollout-2025-05-01-x.json") and not codex.matches("x.json")
    assert codex.read_whole("/r/rollout-1.json")
    assert not codex.read_whole("/r/rollout-1.jsonl")
    assert omp.matches("2026-05-01T10-00-00-000Z_id.jsonl")
    # a hidden name counts only for a pattern that says so
    aider = SessionFiles((".aider.chat.history.md",))
    assert aider.matches(".aider.chat.history.md") and not aider.matches("x.md")
    with pytest.raises(ValueError):
        SessionFiles(("*.jsonl",), whole=("*.json",))


def test_project_folders_are_named_as_each_writer_names_them() -> None:
    bases = {"~": ["/home/u"], "$TMPDIR": ["/var/tmp/x", "/private/var/tmp/x"]}

    def names(agent: str, cwd: str) -> set[str]:
        return folder_names(adapter(agent).folders, [cwd], bases)

    cwd = "/work/my.proj"
    assert names("pi", cwd) == {"--work-my.proj--"}
    assert names("claude", cwd) == {"-work-my-proj"}
    assert names("codex", cwd) == set()
    assert names("omp", cwd) == {"--work-my.proj--"}
    assert names("omp", "/home/u/src/app") == {"-src-app"}
    assert names("omp", "/home/u") == {"-"}
    assert names("omp", "/home/user2") == {"--home-user2--"}
    assert names("omp", "/var/tmp/x/scratch") == {"-tmp-scratch"}
    assert names("omp", "/private/var/tmp/x") == {"-tmp"}
    with pytest.raises(ValueError):
        ProjectFolder("/home")
