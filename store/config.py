"""The configuration file: one TOML file, read once at each entry point.

It lives in ``store`` because both sides need it and neither may import the other: the
pipeline writes where ``indexDir`` says, the query side reads from there and applies the regex
limits. Lookup order: ``--config FILE``, else ``$SESSIONDEX_CONFIG``, else
``$XDG_CONFIG_HOME/sessiondex/config.toml`` (``~/.config/...``); a missing default file means
all defaults, a missing explicit file is an error. Unknown keys and out-of-range values are
errors naming the key; nothing is silently clamped.

A ``[sources]`` key is the name of a registered agent (``store.agents``); its default root is
its adapter's (``stages/<agent>/adapter.py``), which only the pipeline loads: ``pipeline``
passes them as *defaults* and so indexes every agent's root, while the query side, which reads
the roots the index was built from in its manifest, keeps only the roots the file names.

    [sources]                      # one key per registered agent (store.agents)
    pi = "~/.pi/agent/sessions"    # a missing root is simply empty
    claude = "~/.claude/projects"
    ...
    maxFileBytes = 268435456       # a session file larger than this is skipped unread

    [memory]                       # the seed's memory block, same names, defaults and bounds
    indexDir = "~/.local/state/sessiondex"
    hotSessions = 50
    ...

    [privacy]                      # credential redaction at index time (store.redact)
    redact = true
    disabledRules = []             # rule ids, e.g. ["generic-api-key"]

    [archive]                      # the kept copy of every indexed session (store.archive)
    keep = true
    dir = "<indexDir>-archive"     # beside the index folder: not derived, so never in it
    maxBytes = 4294967296          # compressed bytes; past it nothing more is kept

``[sources] exclude`` lists globs of session files never to index (and to purge from the index
and the archive): an absolute (or ``~``) pattern matches the file's path, a relative one its
path below any root; ``**`` crosses folders, ``*`` does not. ``[sources] maxFileBytes`` bounds
the memory one session file costs (it is read whole): a larger file is not read, and named
``oversized_file`` (the largest real sessions seen are tens of MB).
"""

from __future__ import annotations

import os
import tomllib
from collections.abc import Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from typing import Any

from store.agents import agent_names

__all__ = [
    "MEMORY_KEYS",
    "ArchiveConfig",
    "Config",
    "ConfigError",
    "MemoryConfig",
    "PrivacyConfig",
    "load_config",
]

KIB = 1024
MIB = 1024 * KIB
GIB = 1024 * MIB


class ConfigError(ValueError):
    """The configuration cannot be used; the message names the file and the key."""


@dataclass(frozen=True, slots=True)
class _IntKey:
    name: str
    attr: str
    default: int
    low: int
    high: int


@dataclass(frozen=True, slots=True)
class _BoolKey:
    name: str
    attr: str
    default: bool


# The seed's `memory` block: name, attribute, default, accepted range (reference §1.9).
_INT_KEYS = (
    _IntKey("maxSessions", "max_sessions", 500, 1, 100_000),
    _IntKey("maxEntryChars", "max_entry_chars", 2000, 100, 1_000_000),
    _IntKey("hotSessions", "hot_sessions", 50, 0, 100_000),
    _IntKey("digestTerms", "digest_terms", 200, 1, 10_000),
    _IntKey("maxColdVocabularyBytes", "max_cold_vocabulary_bytes", 524_288, 2, 64 * MIB),
    _IntKey("maxColdCacheBytes", "max_cold_cache_bytes", 1_048_576, 512, 128 * MIB),
    _IntKey("maxSyncSessions", "max_sync_sessions", 10_000, 1, 1_000_000),
    _IntKey("maxSyncSourceBytes", "max_sync_source_bytes", 536_870_912, KIB, 8 * GIB),
    _IntKey("maxCacheCleanupFiles", "max_cache_cleanup_files", 100_000, 1, 1_000_000),
    _IntKey("regexMaxPatternBytes", "regex_max_pattern_bytes", 1024, 1, 64 * KIB),
    _IntKey("regexMaxHaystackTerms", "regex_max_haystack_terms", 20_000, 1, 1_000_000),
    _IntKey("regexMaxHaystackBytes", "regex_max_haystack_bytes", 2_097_152, KIB, 128 * MIB),
    _IntKey("regexTimeoutMs", "regex_timeout_ms", 250, 10, 10_000),
)
_BOOL_KEYS = (
    _BoolKey("enabled", "enabled", True),
    _BoolKey("indexThinking", "index_thinking", False),
    _BoolKey("indexToolOutput", "index_tool_output", True),
)
MEMORY_KEYS = tuple(k.name for k in _INT_KEYS) + tuple(k.name for k in _BOOL_KEYS) + ("indexDir",)


def _default_index_dir() -> Path:
    state = os.environ.get("XDG_STATE_HOME") or "~/.local/state"
    return Path(state).expanduser() / "sessiondex"


@dataclass(frozen=True, slots=True)
class MemoryConfig:
    index_dir: Path = field(default_factory=_default_index_dir)
    enabled: bool = True
    max_sessions: int = 500
    max_entry_chars: int = 2000
    index_thinking: bool = False
    index_tool_output: bool = True
    hot_sessions: int = 50
    digest_terms: int = 200
    max_cold_vocabulary_bytes: int = 524_288
    max_cold_cache_bytes: int = 1_048_576
    max_sync_sessions: int = 10_000
    max_sync_source_bytes: int = 536_870_912
    max_cache_cleanup_files: int = 100_000
    regex_max_pattern_bytes: int = 1024
    regex_max_haystack_terms: int = 20_000
    regex_max_haystack_bytes: int = 2_097_152
    regex_timeout_ms: int = 250


@dataclass(frozen=True, slots=True)
class PrivacyConfig:
    """``[privacy]``: redaction is on unless ``redact = false``; ``disabledRules`` names rule
    ids (gitleaks' and ours, see ``store.redact``) left out. Both are in the cache policy."""

    redact: bool = True
    disabled_rules: tuple[str, ...] = ()


# Past this a session file is skipped unread (``oversized_file``): far above any real session,
# far below what a hostile or sparse file would cost to read whole.
DEFAULT_MAX_FILE_BYTES = 256 * MIB
_MAX_FILE_BYTES_RANGE = (MIB, 16 * GIB)

# The archive's default cap: a heavy user's years of sessions compress to well under it, and
# a runaway writer cannot fill the disk through it.
DEFAULT_ARCHIVE_MAX_BYTES = 4 * GIB


@dataclass(frozen=True, slots=True)
class ArchiveConfig:
    """``[archive]``: ``keep`` the indexed bytes of every session (on by default) in ``dir``
    (None: ``<indexDir>-archive``, beside the index folder) up to ``max_bytes`` of compressed
    bytes."""

    keep: bool = True
    dir: Path | None = None
    max_bytes: int = DEFAULT_ARCHIVE_MAX_BYTES


@dataclass(frozen=True, slots=True)
class Config:
    """Resolved configuration. ``roots`` maps agent → absolute root (may not exist): every
    root the file names, and every other registered agent's default when loaded with them;
    ``exclude`` holds the ``[sources] exclude`` globs, ``~`` and variables expanded."""

    roots: Mapping[str, Path]
    memory: MemoryConfig
    path: Path | None = None
    privacy: PrivacyConfig = field(default_factory=PrivacyConfig)
    archive: ArchiveConfig = field(default_factory=ArchiveConfig)
    exclude: tuple[str, ...] = ()
    max_file_bytes: int = DEFAULT_MAX_FILE_BYTES

    @property
    def index_dir(self) -> Path:
        return self.memory.index_dir

    @property
    def archive_dir(self) -> Path:
        """Where the archive lives (also when ``keep`` is off: it may hold earlier copies):
        beside the index folder by default (``~/.local/state/sessiondex-archive``), never in
        it, so the index folder holds only derived state and no credential (the archive is a
        copy of the session files, as private as they are)."""
        if self.archive.dir is not None:
            return self.archive.dir
        return self.index_dir.with_name(self.index_dir.name + "-archive")

    @classmethod
    def from_mapping(
        cls,
        data: Mapping[str, Any],
        *,
        path: Path | None = None,
        base: Path | None = None,
        defaults: Mapping[str, str] | None = None,
    ) -> Config:
        """Validate a parsed TOML document. Relative paths resolve against *base*; an agent
        the file does not name gets its root from *defaults* (agent → root as written)."""
        where = str(path) if path else "<config>"
        base = base or (path.parent if path else Path.cwd())
        unknown = set(data) - {"sources", "memory", "privacy", "archive"}
        if unknown:
            raise ConfigError(f"{where}: unknown section or key {sorted(unknown)[0]!r}")
        sources = _table(data, "sources", where)
        memory = _table(data, "memory", where)
        roots: dict[str, Path] = {}
        known = agent_names()
        for key in sources:
            if key not in (*known, "exclude", "maxFileBytes"):
                expected = ", ".join((*known, "exclude", "maxFileBytes"))
                raise ConfigError(f"{where}: unknown key sources.{key} (one of {expected})")
        exclude = _exclude(sources.get("exclude", []), where)
        max_file_bytes = _max_file_bytes(sources.get("maxFileBytes", DEFAULT_MAX_FILE_BYTES), where)
        for key in known:
            if key in sources:
                raw = sources[key]
            elif defaults is not None and key in defaults:
                raw = defaults[key]
            else:
                continue
            if not isinstance(raw, str) or not raw.strip():
                raise ConfigError(f"{where}: sources.{key} must be a non-empty path string")
            roots[key] = _resolve(raw, base)
        values: dict[str, Any] = {}
        for key in memory:
            if key not in MEMORY_KEYS:
                raise ConfigError(f"{where}: unknown key memory.{key}")
        for ik in _INT_KEYS:
            if ik.name in memory:
                v = memory[ik.name]
                if isinstance(v, bool) or not isinstance(v, int):
                    raise ConfigError(f"{where}: memory.{ik.name} must be an integer, got {v!r}")
                if not ik.low <= v <= ik.high:
                    raise ConfigError(
                        f"{where}: memory.{ik.name} = {v} is out of range {ik.low}..{ik.high}"
                    )
                values[ik.attr] = v
        for bk in _BOOL_KEYS:
            if bk.name in memory:
                v = memory[bk.name]
                if not isinstance(v, bool):
                    raise ConfigError(f"{where}: memory.{bk.name} must be true or false, got {v!r}")
                values[bk.attr] = v
        if "indexDir" in memory:
            raw = memory["indexDir"]
            if not isinstance(raw, str) or not raw.strip():
                raise ConfigError(f"{where}: memory.indexDir must be a non-empty path string")
            values["index_dir"] = _resolve(raw, base)
        privacy = _privacy(_table(data, "privacy", where), where)
        archive = _archive(_table(data, "archive", where), where, base)
        return cls(
            roots=roots,
            memory=MemoryConfig(**values),
            path=path,
            privacy=privacy,
            archive=archive,
            exclude=exclude,
            max_file_bytes=max_file_bytes,
        )

    def to_toml(self) -> str:
        """Every key with its value: what `pipeline config` prints and the example file holds."""
        lines = ["[sources]"]
        lines += [f'{k} = "{v}"' for k, v in self.roots.items()]
        lines.append("exclude = [" + ", ".join(_quoted(g) for g in self.exclude) + "]")
        lines.append(f"maxFileBytes = {self.max_file_bytes}")
        lines += ["", "[memory]", f'indexDir = "{self.memory.index_dir}"']
        names = {f.name for f in fields(MemoryConfig)}
        for bk in _BOOL_KEYS:
            lines.append(f"{bk.name} = {str(getattr(self.memory, bk.attr)).lower()}")
        for ik in _INT_KEYS:
            assert ik.attr in names
            lines.append(f"{ik.name} = {getattr(self.memory, ik.attr)}")
        disabled = ", ".join(f'"{r}"' for r in self.privacy.disabled_rules)
        lines += ["", "[privacy]", f"redact = {str(self.privacy.redact).lower()}"]
        lines.append(f"disabledRules = [{disabled}]")
        lines += ["", "[archive]", f"keep = {str(self.archive.keep).lower()}"]
        lines += [f"dir = {_quoted(str(self.archive_dir))}", f"maxBytes = {self.archive.max_bytes}"]
        return "\n".join(lines) + "\n"


def _quoted(text: str) -> str:
    """A TOML basic string (JSON's escapes are TOML's)."""
    import json

    return json.dumps(text, ensure_ascii=False)


def _exclude(raw: Any, where: str) -> tuple[str, ...]:
    if not isinstance(raw, list) or not all(isinstance(g, str) and g.strip() for g in raw):
        raise ConfigError(f"{where}: sources.exclude must be a list of glob strings")
    return tuple(os.path.expanduser(os.path.expandvars(g)) for g in raw)


def _max_file_bytes(raw: Any, where: str) -> int:
    low, high = _MAX_FILE_BYTES_RANGE
    if isinstance(raw, bool) or not isinstance(raw, int):
        raise ConfigError(f"{where}: sources.maxFileBytes must be an integer, got {raw!r}")
    if not low <= raw <= high:
        raise ConfigError(f"{where}: sources.maxFileBytes = {raw} is out of range {low}..{high}")
    return raw


def _archive(table: Mapping[str, Any], where: str, base: Path) -> ArchiveConfig:
    for key in table:
        if key not in ("keep", "dir", "maxBytes"):
            raise ConfigError(f"{where}: unknown key archive.{key} (keep, dir or maxBytes)")
    keep = table.get("keep", True)
    if not isinstance(keep, bool):
        raise ConfigError(f"{where}: archive.keep must be true or false, got {keep!r}")
    folder = table.get("dir")
    if folder is not None and (not isinstance(folder, str) or not folder.strip()):
        raise ConfigError(f"{where}: archive.dir must be a non-empty path string")
    cap = table.get("maxBytes", DEFAULT_ARCHIVE_MAX_BYTES)
    if isinstance(cap, bool) or not isinstance(cap, int) or not MIB <= cap <= 1 << 50:
        raise ConfigError(f"{where}: archive.maxBytes = {cap!r} is out of range {MIB}..{1 << 50}")
    return ArchiveConfig(keep, _resolve(folder, base) if folder else None, cap)


def _privacy(table: Mapping[str, Any], where: str) -> PrivacyConfig:
    for key in table:
        if key not in ("redact", "disabledRules"):
            raise ConfigError(f"{where}: unknown key privacy.{key} (redact or disabledRules)")
    redact = table.get("redact", True)
    if not isinstance(redact, bool):
        raise ConfigError(f"{where}: privacy.redact must be true or false, got {redact!r}")
    rules = table.get("disabledRules", [])
    if not isinstance(rules, list) or not all(isinstance(r, str) and r for r in rules):
        raise ConfigError(f"{where}: privacy.disabledRules must be a list of rule ids")
    if rules:
        from store.redact import rule_ids  # the rule files are read only when rules are named

        unknown = sorted(set(rules) - rule_ids())
        if unknown:
            raise ConfigError(f"{where}: privacy.disabledRules names no rule {unknown[0]!r}")
    return PrivacyConfig(redact=redact, disabled_rules=tuple(sorted(set(rules))))


def _table(data: Mapping[str, Any], name: str, where: str) -> Mapping[str, Any]:
    value = data.get(name, {})
    if not isinstance(value, Mapping):
        raise ConfigError(f"{where}: [{name}] must be a table")
    return value


def _resolve(raw: str, base: Path) -> Path:
    p = Path(os.path.expandvars(raw)).expanduser()
    return (p if p.is_absolute() else base / p).resolve()


def default_config_path() -> Path:
    xdg = os.environ.get("XDG_CONFIG_HOME") or "~/.config"
    return Path(xdg).expanduser() / "sessiondex" / "config.toml"


def load_config(
    explicit: str | os.PathLike[str] | None = None, *, defaults: Mapping[str, str] | None = None
) -> Config:
    """Read the configuration the way every command does (see the module docstring);
    *defaults* are the roots of the agents the file does not name."""
    if explicit is None:
        env = os.environ.get("SESSIONDEX_CONFIG")
        explicit = env if env else None
    if explicit is not None:
        path = Path(explicit).expanduser()
        if not path.is_file():
            raise ConfigError(f"config file {path} does not exist (given by --config or env)")
    else:
        path = default_config_path()
        if not path.is_file():
            return Config.from_mapping({}, path=None, base=Path.cwd(), defaults=defaults)
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError) as exc:
        raise ConfigError(f"cannot read config file {path}: {exc}") from exc
    except tomllib.TOMLDecodeError as exc:
        raise ConfigError(f"{path}: not valid TOML: {exc}") from exc
    return Config.from_mapping(data, path=path.resolve(), defaults=defaults)
