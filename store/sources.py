"""What a source's files look like, as data both sides share: which file names under an agent's
root are sessions (``SessionFiles``) and how its writer names the folder holding the sessions
started in one working directory (``ProjectFolder``).

Each adapter declares them (``stages/<agent>/adapter.py``); discovery and the watcher apply
them, and the pipeline records them in every manifest (``Manifest.sources``, one ``SourceSpec``
per agent) so that the query side, which never imports ``stages``, lists a folder by the very
rule discovery used.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from fnmatch import translate
from functools import cached_property
from typing import Final

from store.dblayout import DbLayout
from store.schema import TUPLE, Wired, nested, nested_tuple, wire, wired

__all__ = [
    "ABSOLUTE",
    "HOME",
    "TMPDIR",
    "WHOLE_PATH",
    "ProjectFolder",
    "SessionFiles",
    "SourceSpec",
    "folder_names",
    "session_stem",
]

# ProjectFolder bases the caller resolves (``folder_names``), where the writer's user runs.
HOME: Final = "~"
TMPDIR: Final = "$TMPDIR"
ABSOLUTE: Final = "/"
WHOLE_PATH: Final = ""
_BASES: Final = (HOME, TMPDIR, ABSOLUTE, WHOLE_PATH)


def _compiled(patterns: Sequence[str]) -> re.Pattern[str] | None:
    if not patterns:
        return None
    return re.compile("|".join(f"(?:{translate(p)})" for p in patterns))


@wired
@dataclass(frozen=True)
class SessionFiles(Wired):
    """Which file names under an agent's root are its sessions (any folder depth).

    ``patterns`` are ``fnmatch`` patterns over the file's name, case-sensitive. A hidden name
    (leading ``.``: a writer's temp file) matches only a pattern that itself starts with ``.``.
    ``whole`` are the patterns (among ``patterns``) of files that hold one JSON object rather
    than one per line: they are read whole and never appended to (Codex era A's
    ``rollout-*.json``).
    ``folders``, when given, are the names of the folders sessions live in: a matching file
    counts only when its folder, or that folder's parent (a subagent's own folder inside it),
    is so named. A writer that keeps other files of the same name shape elsewhere under its
    root (Gemini CLI's ``logs/session-*.jsonl``) is told apart by where they lie, not by what
    they hold.
    """

    patterns: tuple[str, ...] = field(default=("*.jsonl",), metadata=wire(TUPLE))
    whole: tuple[str, ...] = field(default=(), metadata=wire(TUPLE))
    folders: tuple[str, ...] = field(default=(), metadata=wire(TUPLE, since=2, omit=True))

    def __post_init__(self) -> None:
        if not self.patterns:
            raise ValueError("SessionFiles needs at least one pattern")
        if not all(isinstance(p, str) and p for p in (*self.patterns, *self.whole)):
            raise ValueError(f"SessionFiles patterns must be non-empty strings: {self.patterns}")
        stray = [p for p in self.whole if p not in self.patterns]
        if stray:
            raise ValueError(f"whole patterns must also be session patterns: {stray}")

    @cached_property
    def _any(self) -> re.Pattern[str] | None:
        return _compiled([p for p in self.patterns if not p.startswith(".")])

    @cached_property
    def _hidden(self) -> re.Pattern[str] | None:
        return _compiled([p for p in self.patterns if p.startswith(".")])

    @cached_property
    def _whole(self) -> re.Pattern[str] | None:
        return _compiled(self.whole)

    def matches(self, name: str) -> bool:
        """True when a file called *name* under the root is one of the agent's sessions."""
        found = self._hidden if name.startswith(".") else self._any
        return found is not None and found.fullmatch(name) is not None

    def holds(self, path: str) -> bool:
        """True when the file at *path* (under the root, ``/``-separated) is a session: its name
        matches and it lies in one of ``folders`` (directly or one folder down)."""
        *parents, name = path.split("/")
        if not self.matches(name):
            return False
        return not self.folders or any(p in self.folders for p in parents[-2:])

    def read_whole(self, path: str) -> bool:
        """True for a session file holding one JSON object: read whole, rewritten whole."""
        name = path.rsplit("/", 1)[-1]
        return self._whole is not None and self._whole.fullmatch(name) is not None


@wired
@dataclass(frozen=True, slots=True)
class ProjectFolder(Wired):
    """How a writer names the folder, directly under its root, holding one cwd's sessions::

        name = prefix + re.sub(unsafe, "-", relative) + suffix      (``bare`` when relative is "")

    ``relative`` is the cwd relative to ``base``: ``"~"`` the home folder, ``"$TMPDIR"`` the temp
    folder (the caller says where those are), ``"/"`` any cwd with its leading separators
    dropped, ``""`` the whole cwd as it is. A rule applies when the cwd lies under its base; a
    writer's first rule that applies names the folder (``folder_names``). These are path
    names, never prose.
    """

    base: str
    prefix: str = ""
    suffix: str = ""
    unsafe: str = r"[/\\:]"
    bare: str | None = None

    def __post_init__(self) -> None:
        if self.base not in _BASES:
            raise ValueError(f"ProjectFolder base must be one of {_BASES}, got {self.base!r}")
        texts = (self.prefix, self.suffix, self.unsafe)
        if not all(isinstance(t, str) for t in texts) or not isinstance(self.bare, str | None):
            raise ValueError(f"ProjectFolder names are strings: {self!r}")
        try:
            re.compile(self.unsafe)
        except re.error as exc:
            raise ValueError(f"ProjectFolder unsafe is not a pattern: {exc}") from exc

    def relative(self, cwd: str, bases: Mapping[str, Sequence[str]]) -> str | None:
        """*cwd* relative to this rule's base (``bases``: where ``~`` and ``$TMPDIR`` are, each
        as given and as its real path), or None when the rule does not apply to it."""
        if self.base == WHOLE_PATH:
            return cwd
        if self.base == ABSOLUTE:
            return cwd.lstrip("/\\")
        for base in bases.get(self.base, ()):
            top = base.rstrip("/")
            if cwd in (base, top):
                return ""
            if top and cwd.startswith(top + "/"):
                return cwd[len(top) + 1 :]
        return None

    def name(self, relative: str) -> str:
        if not relative and self.bare is not None:
            return self.bare
        return self.prefix + re.sub(self.unsafe, "-", relative) + self.suffix


def folder_names(
    rules: Sequence[ProjectFolder], forms: Iterable[str], bases: Mapping[str, Sequence[str]]
) -> set[str]:
    """The folder names a writer with *rules* gives the cwd, for each of its *forms*."""
    names: set[str] = set()
    for cwd in forms:
        for rule in rules:
            relative = rule.relative(cwd, bases)
            if relative is not None:
                names.add(rule.name(relative))
                break
    return names


@wired
@dataclass(frozen=True)
class SourceSpec(Wired):
    """What a manifest records of one agent's source for the query side."""

    files: SessionFiles = field(default_factory=SessionFiles, metadata=wire(nested(SessionFiles)))
    folders: tuple[ProjectFolder, ...] = field(
        default=(), metadata=wire(nested_tuple(ProjectFolder))
    )
    # a source whose sessions are rows of one SQLite file: how to read them (store.dbsource)
    databases: tuple[DbLayout, ...] = field(
        default=(), metadata=wire(nested_tuple(DbLayout), since=2, omit=True)
    )


def session_stem(name: str) -> str:
    """A session file's name without its extension (how a session can be named in a scope)."""
    stem, dot, _ = name.rpartition(".")
    return stem if dot and stem.strip(".") else name
