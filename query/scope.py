"""Scopes: which indexed sessions a request reads.

| scope                  | sessions                                                      |
|------------------------|---------------------------------------------------------------|
| ``session``            | the newest (non-sidechain) session whose cwd is the caller's, |
|                        | with the subagent transcripts whose parent it is              |
| ``project``            | every session whose cwd is the caller's                       |
| ``global``             | every session (explicit only, never a default)                |
| ``session:<id|path>``  | exactly one session, resolved without promotion               |

``agent`` narrows any of them to one source. A path must resolve (``realpath``, so symlinks
are followed first) to a file under a configured source root; anything else — a path outside
the roots, or a link inside a root pointing out of it — is refused before the file is touched.
An id names the header's session id (bare, or namespaced as ``pi:<id>``), else the file stem;
more than one candidate is ``ambiguous_session`` with the candidate paths, except that a
Claude sidechain never competes with its parent transcript. A Claude subagent's id holds a
slash (``claude:<parent uuid>/agent-<id>``, as hits name it): a target that is an indexed id
is that session before it is read as a path.
"""

from __future__ import annotations

import os
import tempfile
import time
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

from query.args import Scope
from query.changes import Batch, Changes
from query.generation import Generation, order_key
from store.dblayout import member_path
from store.dbsource import QUERY_BUSY_MS, member_times
from store.reasons import SOURCE_UNREADABLE, STALE_SESSION
from store.records import AGENTS, SessionState
from store.sources import HOME, TMPDIR, SessionFiles, folder_names

__all__ = ["Listings", "Resolved", "Target", "resolve_scope", "resolve_target", "widen_hints"]


@dataclass(frozen=True, slots=True)
class Unindexed:
    """An eligible file the generation does not hold; ``stale`` when it is newer than it."""

    path: str
    agent: str
    reason: str
    stale: bool = False


@dataclass(frozen=True, slots=True)
class Resolved:
    """The sessions a scope selects, newest first, and the eligible files it cannot read."""

    scope: Scope
    sessions: tuple[SessionState, ...] = ()
    unindexed: tuple[Unindexed, ...] = ()
    index_reasons: tuple[str, ...] = ()
    error: dict[str, Any] | None = None


@dataclass(frozen=True, slots=True)
class Target:
    """One explicitly named session: found, eligible-but-unindexed, or an error body."""

    state: SessionState | None = None
    unindexed: Unindexed | None = None
    error: dict[str, Any] | None = field(default=None)


def _looks_like_path(gen: Generation, target: str) -> bool:
    return (
        "/" in target or os.sep in target or gen.session_files.matches(target) or target[0] in "~."
    )


def _indexed_id(gen: Generation, target: str) -> bool:
    """Is *target* (bare or ``agent:``-namespaced) the id of an indexed session?"""
    prefix, colon, rest = target.partition(":")
    return target in gen.by_id or (bool(colon) and prefix in AGENTS and rest in gen.by_id)


def _real_roots(gen: Generation, roots: Iterable[Path]) -> list[str]:
    out: list[str] = []
    named: set[str] = set()
    for root in [*roots, *gen.roots()]:
        name = os.fspath(root)
        if name in named:  # the config's roots are usually the generation's: resolve once
            continue
        named.add(name)
        try:
            real = os.path.realpath(root)
        except OSError:
            continue
        if real not in out:
            out.append(real)
    return out


def _under(path: str, root: str) -> bool:
    return path != root and path.startswith(root.rstrip(os.sep) + os.sep)


def _pick(candidates: Sequence[SessionState], agent: str | None) -> list[SessionState]:
    found = [s for s in candidates if agent is None or s.agent == agent]
    if len(found) > 1:
        primary = [s for s in found if not s.sidechain]
        if len(primary) == 1:
            return primary
    return found


def resolve_target(
    gen: Generation, target: str, *, cwd: str, agent: str | None, roots: Iterable[Path]
) -> Target:
    """Resolve ``session:<target>`` / an expand ``session`` argument (see the module doc)."""
    if not _looks_like_path(gen, target) or _indexed_id(gen, target):
        prefix, colon, rest = target.partition(":")
        if colon and prefix in AGENTS and rest:
            found = _pick(gen.by_id.get(rest, []), prefix if agent is None else agent)
            if agent is not None and agent != prefix:
                found = []
        else:
            found = _pick(gen.by_id.get(target, []), agent)
            if not found:
                found = _pick(gen.by_stem.get(target, []), agent)
        if len(found) == 1:
            return Target(state=found[0])
        if not found:
            return Target(
                error={
                    "code": "session_not_found",
                    "message": f"No indexed session has id {target!r}. List sessions with "
                    "`query sessions --scope global`, or pass the session file path.",
                    "session": target,
                }
            )
        return Target(
            error={
                "code": "ambiguous_session",
                "message": f"Session id {target!r} matches {len(found)} sessions; "
                "pass one of the candidate file paths instead.",
                "session": target,
                "candidates": sorted(s.path for s in found),
            }
        )
    path = os.path.expanduser(target)
    if not os.path.isabs(path):
        path = os.path.join(cwd, path)
    real = os.path.realpath(path)
    allowed = _real_roots(gen, roots)
    if not any(_under(real, root) for root in allowed):
        return Target(
            error={
                "code": "session_outside_roots",
                "message": f"{target} resolves to {real}, which is not under a configured "
                f"session root ({', '.join(allowed) or 'none configured'}); only session "
                "files under the [sources] roots of the config can be read.",
                "session": target,
            }
        )
    state = gen.by_realpath(real)
    if state is not None:
        if agent is not None and state.agent != agent:
            return Target(
                error={
                    "code": "session_not_found",
                    "message": f"{real} is a {state.agent} session, not {agent}.",
                    "session": target,
                }
            )
        return Target(state=state)
    skipped = gen.skipped.get(real)
    if skipped is not None:
        return Target(unindexed=Unindexed(real, skipped.agent, skipped.reason))
    if os.path.isfile(real):
        return Target(unindexed=Unindexed(real, "", STALE_SESSION, stale=True))
    return Target(
        error={
            "code": "session_not_found",
            "message": f"Session file not found: {real}.",
            "session": target,
        }
    )


def _cwd_forms(cwd: str) -> list[str]:
    forms = [os.path.normpath(cwd)]
    try:
        real = os.path.realpath(cwd)
    except OSError:
        real = forms[0]
    if real not in forms:
        forms.append(real)
    return forms


_PROJECT_MARKERS: Final = (".git", ".hg", ".jj", ".svn")


def _project_root(gen: Generation, cwd: str) -> str | None:
    """The folder whose sessions make *cwd*'s project: the nearest folder at or above it
    holding a version-control marker; failing that (a cwd from another machine), the nearest
    one at or above it where sessions were started, never the home folder or ``/`` (every
    folder is below those); failing that, None."""
    home = os.path.expanduser("~")
    folder = cwd
    while folder != home or folder == cwd:  # a dotfiles repository in ~ is no project
        if any(os.path.lexists(os.path.join(folder, m)) for m in _PROJECT_MARKERS):
            return folder
        parent = os.path.dirname(folder)
        if parent == folder:
            break
        folder = parent
    folder = cwd
    while folder not in (home, os.path.dirname(folder)):
        if folder in gen.by_cwd:
            return folder
        folder = os.path.dirname(folder)
    return None


def project_roots(gen: Generation, forms: Sequence[str]) -> tuple[list[str], list[str]]:
    """The project roots of the caller's cwd forms (as given, and its realpath), whose
    sessions count with every folder below them, and the forms that found no root, whose
    sessions count only where they were started (no project: only this folder)."""
    roots: list[str] = []
    exact: list[str] = []
    for form in forms:
        root = _project_root(gen, form)
        if root is None:
            exact.append(form)
        elif root not in roots:
            roots.append(root)
    return roots, exact


def _bases() -> dict[str, list[str]]:
    """Where ``~`` and ``$TMPDIR`` are for ``ProjectFolder`` rules, each as given and as its
    real path (a writer may name either): the writer's own user runs here."""
    out: dict[str, list[str]] = {}
    for base, path in ((HOME, os.path.expanduser("~")), (TMPDIR, tempfile.gettempdir())):
        real = os.path.realpath(path)
        out[base] = [path] if real == path else [path, real]
    return out


def _project_dirs(
    gen: Generation, forms: Sequence[str], agent: str | None
) -> list[tuple[str, str]]:
    """(agent, folder) pairs where the agents keep the sessions of the caller's cwd: each
    source's ``ProjectFolder`` rules, as its manifest records them (none for a writer whose
    folders are not named after the cwd, such as Codex's dated ones)."""
    out: list[tuple[str, str]] = []
    for name, root in gen.manifest.roots.items():
        if agent is not None and name != agent:
            continue
        folders = folder_names(gen.source(name).folders, forms, _bases())
        out.extend((name, os.path.join(root, folder)) for folder in sorted(folders))
    return out


def _in_folder(path: str, folder: str) -> bool:
    return _under(path, folder)


def _skipped_in_project(
    gen: Generation, dirs: Sequence[tuple[str, str]], agent: str | None
) -> list[Unindexed]:
    """Skipped files inside the caller's project folders."""
    return [
        Unindexed(s.path, s.agent, s.reason)
        for s in gen.skipped.values()
        if (agent is None or s.agent == agent)
        and any(_in_folder(s.path, folder) for _, folder in dirs)
    ]


@dataclass(frozen=True, slots=True)
class _Listing:
    """One folder's subfolders and the files in it *names* counts as sessions (any agent's
    ``store.sources.SessionFiles``), as of its mtime."""

    stamp: tuple[int, int]
    folders: tuple[str, ...]
    files: tuple[str, ...]
    # Listed in vain (permissions, I/O): never cached, since a chmod moves no mtime.
    unreadable: bool = False
    names: SessionFiles | None = None


# Folder listings by path, reused while the folder's (inode, mtime) is unchanged: creating,
# removing or renaming an entry moves the folder's mtime, so only changed folders are read
# again and a query over thousands of sessions lists nothing in the common case.
_LISTINGS: dict[str, _Listing] = {}
_LISTINGS_MAX = 65_536
# A folder changed this recently is always read again: two changes within one tick of a
# coarse filesystem clock could leave its mtime where the cached listing saw it.
_SETTLED_NS = 2_000_000_000


def _listing(folder: str, names: SessionFiles) -> _Listing | None:
    try:
        st = os.stat(folder, follow_symlinks=False)
    except OSError:
        return None
    stamp = (st.st_ino, st.st_mtime_ns)
    found = _LISTINGS.get(folder)
    if found is not None and found.stamp == stamp and found.names == names:
        return found
    listing = _read(folder, stamp, names)
    settled = time.time_ns() - st.st_mtime_ns > _SETTLED_NS
    if listing is not None and not listing.unreadable and settled:
        if len(_LISTINGS) >= _LISTINGS_MAX:
            _LISTINGS.clear()
        _LISTINGS[folder] = listing
    return listing


def _read(folder: str, stamp: tuple[int, int], names: SessionFiles) -> _Listing | None:
    folders: list[str] = []
    files: list[str] = []
    try:
        with os.scandir(folder) as it:
            for entry in it:
                try:
                    if entry.is_dir(follow_symlinks=False):
                        folders.append(entry.path)
                    elif names.matches(entry.name) and entry.is_file(follow_symlinks=False):
                        files.append(entry.path)
                except OSError:
                    continue
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError:
        return _Listing(stamp, (), (), unreadable=True, names=names)
    return _Listing(stamp, tuple(folders), tuple(files), names=names)


_ABSENT = _Listing((0, 0), (), ())


class Listings:
    """Folder listings for one process.

    Without a change feed, listings are the module's stat-checked cache (``_listing``). With
    one, a folder is watched before it is read, and its listing (or its absence) is reused
    without touching the folder until a drained batch says an entry of it — or the folder, or
    a folder above it — changed; the owner passes every batch to ``sync``. No clock is
    involved, so nothing needs to settle. ``epoch`` moves whenever a listing is voided or could
    not be vouched for, so results derived from listings can be memoized per epoch.
    """

    def __init__(self, changes: Changes | None = None) -> None:
        self._changes = changes
        self._cache: dict[str, _Listing] = {}
        self.epoch = 0
        self._unseen: dict[tuple[object, ...], tuple[object, int, list[Unindexed]]] = {}

    def sync(self, batch: Batch) -> None:
        if batch.empty or not self._cache:
            return
        if batch.overflow:
            self._cache.clear()
            self._unseen.clear()
            self.epoch += 1
            return
        voided = False
        for group in (batch.listings, batch.folders, batch.paths):
            for folder in group:
                voided |= self._cache.pop(folder, None) is not None
        if batch.folders:
            # an absent folder is vouched for by its parent's watch
            for folder in [f for f, v in self._cache.items() if v is _ABSENT]:
                if os.path.dirname(folder) in batch.folders:
                    del self._cache[folder]
                    voided = True
        if voided:
            self.epoch += 1

    def get(self, folder: str, names: SessionFiles) -> _Listing | None:
        """*folder*'s listing, with the files *names* counts as sessions."""
        changes = self._changes
        if changes is None:
            return _listing(folder, names)
        found = self._cache.get(folder)
        if found is _ABSENT:
            return None
        if found is not None and found.names == names:
            return found
        # watched before it is read: an entry made after the watch is an event
        vouched = changes.watch(folder, files=False)
        if not vouched:
            parent = os.path.dirname(folder)
            if parent != folder and changes.watch(parent, files=False):
                try:
                    os.stat(folder, follow_symlinks=False)
                except FileNotFoundError:
                    self._keep(folder, _ABSENT)  # its creation will be an event in the parent
                    return None
                except OSError:
                    pass
            self.epoch += 1
            return _read(folder, (0, 0), names)
        listing = _read(folder, (0, 0), names)
        if listing is None or listing.unreadable:
            self.epoch += 1
        else:
            self._keep(folder, listing)
        return listing

    def _keep(self, folder: str, listing: _Listing) -> None:
        if len(self._cache) >= _LISTINGS_MAX:
            self._cache.clear()
            self.epoch += 1
        self._cache[folder] = listing

    def unseen(
        self, gen: Generation, folders: Sequence[tuple[str, str]], *, recursive: bool
    ) -> list[Unindexed]:
        """``_unseen`` without ``newer_than``, memoized per generation while no listing moved
        (the sessions inside a database are listed each time: a write to it moves no listing)."""
        databases = [(a, f) for a, f in folders if gen.source(a).databases]
        if databases:
            files = [(a, f) for a, f in folders if not gen.source(a).databases]
            return _unseen_members(gen, databases) + self.unseen(gen, files, recursive=recursive)
        if self._changes is None:
            return _unseen(gen, folders, recursive=recursive, listings=self)
        key = (tuple(folders), recursive, gen.session_files)
        hit = self._unseen.get(key)
        # what is unseen depends on the generation's paths only: same token, same answer
        if hit is not None and hit[0] is gen.paths_token and hit[1] == self.epoch:
            return hit[2]
        epoch = self.epoch
        out = _unseen(gen, folders, recursive=recursive, listings=self)
        if epoch == self.epoch:
            if len(self._unseen) >= 16:
                self._unseen.clear()
            self._unseen[key] = (gen.paths_token, epoch, out)
        return out


_STAT_LISTINGS = Listings()


def _session_files(
    folder: str,
    names: SessionFiles,
    *,
    recursive: bool,
    listings: Listings = _STAT_LISTINGS,
    unreadable: list[str] | None = None,
) -> Iterator[str]:
    """The files under *folder* that *names* counts as sessions (of any agent: the caller
    filters), as discovery sees them (regular files, no symlinks); folders that could not be
    listed go to *unreadable*."""
    pending = [folder]
    while pending:
        here = pending.pop()
        listing = listings.get(here, names)
        if listing is None:
            continue
        if listing.unreadable and unreadable is not None:
            unreadable.append(here)
        if recursive:
            pending.extend(listing.folders)
        yield from listing.files


def _unseen_members(
    gen: Generation, folders: Iterable[tuple[str, str]], newer_than: int = 0
) -> list[Unindexed]:
    """``_unseen`` for agents whose sessions are rows of a database in their root
    (``store.dbsource``): the sessions it holds that the generation has never seen."""
    out: list[Unindexed] = []
    for agent, folder in folders:
        layout = gen.source(agent).databases[0]
        try:
            names = sorted(e.name for e in os.scandir(folder) if layout.holds(e.name))
        except OSError:
            continue  # no root: nothing unseen (an unreadable one is discovery's to name)
        for name in names:
            db = os.path.join(folder, name)
            try:
                members, unnamed = member_times(db, layout, busy_ms=QUERY_BUSY_MS)
            except FileNotFoundError:
                continue
            except OSError:
                out.append(Unindexed(db, agent, SOURCE_UNREADABLE))
                continue
            if unnamed:  # sessions whose ids name no member: never read
                out.append(Unindexed(db, agent, SOURCE_UNREADABLE))
            for session_id, changed in members.items():
                path = member_path(db, session_id)
                if path in gen.by_path or path in gen.skipped or changed < newer_than:
                    continue
                out.append(Unindexed(path, agent, STALE_SESSION, stale=True))
    return out


def _unseen(
    gen: Generation,
    folders: Iterable[tuple[str, str]],
    *,
    recursive: bool,
    newer_than: int = 0,
    listings: Listings = _STAT_LISTINGS,
) -> list[Unindexed]:
    """Session files the generation has never seen: written after it was published.

    They are eligible, and the index is behind on them, so they count as stale; an empty
    answer over a scope that has one is not authoritative.
    """
    out: list[Unindexed] = []
    for agent, folder in folders:
        unreadable: list[str] = []
        files = gen.source(agent).files
        for path in _session_files(
            folder, gen.session_files, recursive=recursive, listings=listings,
            unreadable=unreadable,
        ):  # fmt: skip
            if path in gen.by_path or path in gen.skipped:
                continue
            if not files.holds(path):
                continue  # e.g. a rollout-*.json outside the Codex root
            if newer_than:
                try:
                    if os.stat(path, follow_symlinks=False).st_mtime_ns < newer_than:
                        continue
                except OSError:
                    continue
            out.append(Unindexed(path, agent, STALE_SESSION, stale=True))
        # Not stale (nothing says it changed), but an empty answer cannot vouch for it.
        out += [Unindexed(f, agent, SOURCE_UNREADABLE) for f in unreadable]
    return out


def resolve_scope(
    gen: Generation,
    scope: Scope,
    *,
    cwd: str,
    agent: str | None,
    roots: Iterable[Path],
    listings: Listings = _STAT_LISTINGS,
) -> Resolved:
    """The sessions *scope* selects for a caller in *cwd* (folders listed through *listings*)."""
    if scope.explicit:
        assert scope.target is not None
        t = resolve_target(gen, scope.target, cwd=cwd, agent=agent, roots=roots)
        if t.error is not None:
            return Resolved(scope, error=t.error)
        if t.state is not None:
            return Resolved(scope, sessions=(t.state,))
        assert t.unindexed is not None
        return Resolved(scope, unindexed=(t.unindexed,))
    reasons = tuple(gen.manifest.reasons)
    if scope.kind == "global":
        sessions = gen.ordered(agent)
        skipped = [
            Unindexed(s.path, s.agent, s.reason)
            for s in gen.skipped.values()
            if agent is None or s.agent == agent
        ]
        agent_roots = [(a, r) for a, r in gen.manifest.roots.items() if agent is None or a == agent]
        skipped += listings.unseen(gen, agent_roots, recursive=True)
        return Resolved(scope, tuple(sessions), tuple(skipped), reasons)
    forms = _cwd_forms(cwd)
    seen: dict[str, SessionState] = {}
    if scope.kind == "project":
        # from a subfolder of a project, the project's sessions (started at its root or in
        # any folder below it), not only those started in this very folder
        tops, exact = project_roots(gen, forms)
        for folder, states in gen.by_cwd.items():
            if folder in exact or any(folder == top or _under(folder, top) for top in tops):
                seen.update((s.path, s) for s in states if agent is None or s.agent == agent)
        forms = [*tops, *exact]
    else:
        for form in forms:
            for s in gen.by_cwd.get(form, []):
                if agent is None or s.agent == agent:
                    seen[s.path] = s
    ordered = sorted(seen.values(), key=order_key)
    dirs = _project_dirs(gen, forms, agent)
    if scope.kind == "session":
        chosen = [s for s in ordered if not s.sidechain][:1]
        if chosen:  # its subagents' transcripts are part of the session
            own = chosen[0]
            chosen += [
                s
                for s in ordered
                if s.sidechain and s.agent == own.agent and s.parent_session == own.session_id
            ]
        # a session file newer than the chosen one is the real "newest session" here
        newer = _unseen(
            gen,
            dirs,
            recursive=False,
            newer_than=chosen[0].mtime_ns if chosen else 0,
            listings=listings,
        )
        return Resolved(scope, tuple(chosen), tuple(newer[:1]), reasons)
    unindexed = _skipped_in_project(gen, dirs, agent) + listings.unseen(gen, dirs, recursive=False)
    return Resolved(scope, tuple(ordered), tuple(unindexed), reasons)


def widen_hints(
    gen: Generation,
    resolved: Resolved,
    *,
    agent: str | None,
    branches: str,
    found: int,
    cwd: str | None = None,
    roots: Iterable[Path] = (),
) -> list[dict[str, Any]]:
    """What would find more, when a default scope came back empty or hides content.

    A bare "complete (0/0 sessions)" from a folder where no agent ran reads as "nothing was
    ever said about it"; these say which wider request would look further, with its size.
    Only for the implicit scopes (an explicit ``global`` or ``session:`` is what was asked).
    """
    hints: list[dict[str, Any]] = []
    kind = resolved.scope.kind
    if found == 0 and kind == "session" and cwd is not None:
        project = resolve_scope(gen, Scope("project"), cwd=cwd, agent=agent, roots=roots)
        if len(project.sessions) > len(resolved.sessions):
            hints.append(
                {
                    "args": {"scope": "project"},
                    "message": f"--scope project searches all {len(project.sessions)} "
                    "sessions of this project (session scope: its newest one only)",
                }
            )
    if found == 0 and not resolved.scope.explicit and kind in ("session", "project"):
        everywhere = len(gen.ordered(agent))
        if everywhere > len(resolved.sessions):
            hints.append(
                {
                    "args": {"scope": "global"},
                    "message": f"--scope global searches all {everywhere} indexed sessions "
                    f"({kind} scope held {len(resolved.sessions)})",
                }
            )
    if found == 0 and branches == "active":
        hidden = sum(
            1 for s in resolved.sessions if s.view("all").entry_count > s.view("active").entry_count
        )
        if hidden:
            hints.append(
                {
                    "args": {"branches": "all"},
                    "message": f"--branches all also searches the abandoned branches of "
                    f"{hidden} sessions in scope",
                }
            )
    return hints
