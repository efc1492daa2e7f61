from __future__ import annotations

from pathlib import Path

import pytest

from stages.agents import default_roots
from store.agents import agent_names
from store.config import MEMORY_KEYS, Config, ConfigError, load_config


def write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "config.toml"
    path.write_text(text)
    return path


def test_missing_default_file_means_all_defaults(tmp_path, monkeypatch):
    monkeypatch.delenv("SESSIONDEX_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing"))
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    config = load_config(defaults=default_roots())
    assert config.memory.hot_sessions == 50
    assert config.memory.max_entry_chars == 2000
    assert config.memory.index_thinking is False
    assert config.memory.index_tool_output is True
    assert config.index_dir == tmp_path / "state" / "sessiondex"
    # every registered agent with a default root, there (as the pipeline loads it); Aider
    # keeps no central folder and is read only where [sources] names one
    assert list(config.roots) == [a for a in agent_names() if a != "aider"]
    assert dict(config.roots) == {
        agent: Path(root).expanduser().resolve() for agent, root in default_roots().items()
    }


def test_without_defaults_only_the_roots_the_file_names(tmp_path, monkeypatch):
    # The query side reads the roots an index was built from in its manifest: from the file
    # it keeps only the roots named there.
    monkeypatch.delenv("SESSIONDEX_CONFIG", raising=False)
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path / "nothing"))
    assert dict(load_config().roots) == {}
    named = load_config(write(tmp_path, '[sources]\nclaude = "c"\n'))
    assert dict(named.roots) == {"claude": tmp_path / "c"}
    both = load_config(write(tmp_path, '[sources]\nclaude = "c"\n'), defaults={"pi": "p"})
    assert dict(both.roots) == {"pi": tmp_path / "p", "claude": tmp_path / "c"}


def test_every_seed_key_is_accepted_and_round_trips(tmp_path):
    config = Config.from_mapping({}, base=tmp_path, defaults=default_roots())
    text = config.to_toml()
    for key in MEMORY_KEYS:
        assert f"{key} = " in text
    again = load_config(write(tmp_path, text))
    assert again.memory == config.memory
    assert again.max_file_bytes == config.max_file_bytes == 256 << 20
    assert dict(again.roots) == dict(config.roots)


def test_relative_paths_resolve_against_the_config_file(tmp_path):
    path = write(tmp_path, '[sources]\npi = "sessions"\n[memory]\nindexDir = "idx"\n')
    config = load_config(path)
    assert config.roots["pi"] == tmp_path / "sessions"
    assert config.index_dir == tmp_path / "idx"


@pytest.mark.parametrize(
    ("text", "named"),
    [
        ("[memory]\nhotSessions = -1\n", "memory.hotSessions"),
        ("[memory]\nmaxEntryChars = 99\n", "memory.maxEntryChars"),
        ("[memory]\nregexTimeoutMs = 10001\n", "memory.regexTimeoutMs"),
        ("[memory]\nindexThinking = 1\n", "memory.indexThinking"),
        ('[memory]\nhotSessions = "5"\n', "memory.hotSessions"),
        ("[memory]\nhotSesions = 5\n", "memory.hotSesions"),
        ('[sources]\nmsn = "x"\n', "sources.msn"),
        ("[extra]\n", "extra"),
        ("[memory]\nmaxColdCacheBytes = true\n", "memory.maxColdCacheBytes"),
        ("[sources]\nmaxFileBytes = 1000\n", "sources.maxFileBytes"),
        ('[sources]\nmaxFileBytes = "1G"\n', "sources.maxFileBytes"),
    ],
)
def test_bad_values_are_errors_naming_the_key(tmp_path, text, named):
    with pytest.raises(ConfigError, match=named.replace(".", r"\.")):
        load_config(write(tmp_path, text))


def test_bounds_are_inclusive(tmp_path):
    config = load_config(write(tmp_path, "[memory]\nhotSessions = 0\nregexTimeoutMs = 10000\n"))
    assert config.memory.hot_sessions == 0
    assert config.memory.regex_timeout_ms == 10000


def test_explicit_missing_file_is_an_error(tmp_path):
    with pytest.raises(ConfigError, match="does not exist"):
        load_config(tmp_path / "nope.toml")


def test_env_variable_names_the_file(tmp_path, monkeypatch):
    monkeypatch.setenv("SESSIONDEX_CONFIG", str(write(tmp_path, "[memory]\nhotSessions = 3\n")))
    assert load_config().memory.hot_sessions == 3


def test_invalid_toml_is_reported(tmp_path):
    with pytest.raises(ConfigError, match="not valid TOML"):
        load_config(write(tmp_path, "[memory\n"))


def test_privacy_redacts_by_default_and_names_rules_to_leave_out(tmp_path: Path) -> None:
    from store.config import PrivacyConfig

    assert Config.from_mapping({}, base=tmp_path).privacy == PrivacyConfig()
    off = Config.from_mapping({"privacy": {"redact": False}}, base=tmp_path).privacy
    assert off.redact is False
    some = {"privacy": {"disabledRules": ["generic-api-key", "url-password"]}}
    assert Config.from_mapping(some, base=tmp_path).privacy.disabled_rules == (
        "generic-api-key",
        "url-password",
    )
    for bad in ({"redact": "yes"}, {"disabledRules": ["no-such-rule"]}, {"mask": True}):
        with pytest.raises(ConfigError, match="privacy"):
            Config.from_mapping({"privacy": bad}, base=tmp_path)
    text = Config.from_mapping(some, base=tmp_path).to_toml()
    assert 'disabledRules = ["generic-api-key", "url-password"]' in text


def test_max_file_bytes_is_set_in_sources(tmp_path: Path) -> None:
    config = load_config(write(tmp_path, "[sources]\nmaxFileBytes = 1048576\n"))
    assert config.max_file_bytes == 1 << 20
    assert "maxFileBytes = 1048576" in config.to_toml()
