"""The query engine: one object answering recall, expand and sessions over the live index.

::

    Engine(config)
      refresh()  ── read CURRENT; a new generation? ──► load a new Generation (lazily)
      recall(args, cwd=…) / expand(args, cwd=…) / sessions(args, cwd=…) / call(token, cwd=…)

Each request pins the generation current when it starts (``refresh`` first), so a long-lived
engine (a server, a test) follows the indexer without reloading anything that did not change,
and a one-shot CLI call loads only what its request touches. A long-lived engine made with
``changes=True`` (``query serve``, ``query mcp``) also keeps its freshness verdicts and folder
listings between requests, and at the start of each one drains a change feed (inotify, see
``query.changes``) to learn which of them may no longer hold: a request then stats only what
changed, and is exactly as honest as one that stats everything. Results are the seed's plain
JSON objects. The engine never writes: not to the index, not to the sources. Requests must
not run concurrently on one engine (its caches fill lazily); ``query serve`` runs them all on
one engine thread.
"""

from __future__ import annotations

import os
import threading
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from query.args import parse_expand, parse_recall, parse_sessions
from query.changes import Changes
from query.errors import InvalidArgument
from query.expand import expand as run_expand
from query.freshness import Freshness
from query.generation import Generation
from query.recall import recall as run_recall
from query.regex import RegexLimits, RegexRunner
from query.scope import Listings
from query.search import Budgets
from query.sessions import sessions as run_sessions
from store.archive import Archive
from store.config import Config
from store.dbsource import layouts_of
from store.errors import SchemaVersionError, SnapshotMissing
from store.layout import IndexLayout
from store.reader import open_snapshot, read_current
from store.upgrading import outdated

__all__ = ["ACTIONS", "Engine"]

ACTIONS = ("memory.recall", "memory.expand", "memory.sessions")


class Engine:
    """Answers requests from the newest published generation (see the module docstring)."""

    def __init__(
        self,
        config: Config,
        *,
        budgets: Budgets | None = None,
        term_index: str = "auto",
        changes: bool = False,
    ) -> None:
        """``changes``: follow a change feed between requests (long-lived processes only)."""
        self.config = config
        self.budgets = budgets or Budgets()
        self.term_index = term_index
        m = config.memory
        self.regex_limits = RegexLimits(
            max_pattern_bytes=m.regex_max_pattern_bytes,
            max_haystack_terms=m.regex_max_haystack_terms,
            max_haystack_bytes=m.regex_max_haystack_bytes,
            timeout_ms=m.regex_timeout_ms,
        )
        # None where inotify cannot be had: then every request stats, as a one-shot one does
        self.changes = Changes.open() if changes else None
        self.archive = Archive(config.archive_dir)
        self.freshness = Freshness(self.changes, self.archive)
        self.listings = Listings(self.changes)
        self._index_folder = os.path.abspath(self.config.index_dir)
        self._current_file = str(IndexLayout(Path(self._index_folder)).current)
        # CURRENT as read while the feed vouched for it: (generation, the file's identity)
        self._current_seen: tuple[int, int, int] | None = None
        self._loaded: tuple[int, int, int] | None = None  # the CURRENT the generation came from
        self._runner: RegexRunner | None = None
        self._generation: Generation | None = None
        self._lock = threading.Lock()

    @property
    def roots(self) -> list[Path]:
        return list(self.config.roots.values())

    # -- generations ------------------------------------------------------------------------

    def refresh(self) -> Generation:
        """The current generation, reloaded only when CURRENT moved.

        Raises SnapshotMissing when nothing has been indexed yet, IndexOutdated when CURRENT
        is another format (``index_upgrading`` / ``index_outdated``).
        """
        with self._lock:
            self._follow()
            current = self._current()
            if current is None:
                raise SnapshotMissing(self.config.index_dir)
            # The file's identity tells a rebuilt index (numbered from 1 again) from the one
            # loaded.
            if self._generation is None or self._loaded != current:
                try:
                    snapshot = open_snapshot(self.config.index_dir)
                except SchemaVersionError as exc:
                    # another sessiondex version's index: named, with what to run (or that a
                    # running pipeline is deriving it again), never a traceback
                    raise outdated(self.config.index_dir, exc) from exc
                self._generation = Generation(snapshot, previous=self._generation)
                self._loaded = current
                self.freshness.databases = layouts_of(self._generation.manifest.sources)
            return self._generation

    def _current(self) -> tuple[int, int, int] | None:
        """CURRENT's (generation, inode, mtime_ns); with a feed, read again only once an event
        named it.

        Every publish replaces CURRENT with a new file, so its identity moves even when a
        wiped index starts again at the generation number an engine already holds (an inode
        number alone may be reused by the new file).
        """
        if self._current_seen is not None:
            return self._current_seen
        changes = self.changes
        vouched = changes is not None and changes.watch(self._index_folder)  # before the read
        try:
            st = os.stat(IndexLayout(self.config.index_dir).current)
        except FileNotFoundError:
            return None
        generation = read_current(self.config.index_dir)
        if generation is None:
            return None
        current = (generation, st.st_ino, st.st_mtime_ns)
        if vouched:
            self._current_seen = current
        return current

    def follow(self) -> None:
        """Drain the change feed now; an idle server calls it so the kernel queue stays short
        (a queue that overflows costs the next request a stat of every session)."""
        with self._lock:
            self._follow()

    def _follow(self) -> None:
        if self.changes is not None:
            batch = self.changes.drain()
            if not batch.empty:
                self.freshness.sync(batch)
                self.listings.sync(batch)
                if (
                    batch.overflow
                    or self._index_folder in batch.folders
                    or self._current_file in batch.paths
                ):
                    self._current_seen = None

    @property
    def runner(self) -> RegexRunner:
        if self._runner is None:
            self._runner = RegexRunner(self.regex_limits)
        return self._runner

    # -- actions ----------------------------------------------------------------------------

    def recall(self, args: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        req = parse_recall(args)
        gen = self.refresh()
        return run_recall(
            gen,
            req,
            cwd=cwd or os.getcwd(),
            roots=self.roots,
            freshness=self.freshness,
            listings=self.listings,
            runner=self.runner if req.mode == "regex" else None,
            budgets=self.budgets,
            term_index=self.term_index,
        )

    def expand(self, args: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        req = parse_expand(args)
        gen = self.refresh()
        return run_expand(
            gen, req, cwd=cwd or os.getcwd(), roots=self.roots, freshness=self.freshness
        )

    def sessions(self, args: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        req = parse_sessions(args, default_limit=self.config.memory.max_sessions)
        gen = self.refresh()
        return run_sessions(
            gen, req, cwd=cwd or os.getcwd(), roots=self.roots, freshness=self.freshness
        )

    def call(self, token: Mapping[str, Any], *, cwd: str | None = None) -> dict[str, Any]:
        """Execute a ``{ref, args}`` call token (a ``follow`` or ``next``) verbatim."""
        if not isinstance(token, Mapping) or set(token) - {"ref", "args"}:
            raise InvalidArgument('a call token is an object {"ref": …, "args": {…}}')
        ref, args = token.get("ref"), token.get("args", {})
        if not isinstance(args, Mapping):
            raise InvalidArgument("a call token's args must be an object")
        if ref == "memory.recall":
            return self.recall(args, cwd=cwd)
        if ref == "memory.expand":
            return self.expand(args, cwd=cwd)
        if ref == "memory.sessions":
            return self.sessions(args, cwd=cwd)
        raise InvalidArgument(f"unknown call ref {ref!r}; expected one of {', '.join(ACTIONS)}")

    def close(self) -> None:
        """Stop the regex worker, if one was started, and the change feed."""
        if self._runner is not None:
            self._runner.close()
            self._runner = None
        if self.changes is not None:
            # verdicts kept on the feed's word must not outlive it
            self.changes.close()
            self.changes = None
            self._current_seen = None
            databases = self.freshness.databases
            self.freshness = Freshness(archive=self.archive)
            self.freshness.databases = databases
            self.listings = Listings()

    def __enter__(self) -> Engine:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
