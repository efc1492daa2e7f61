"""``walk``: visit complete normalized entries, following every expand page.

::

    selector ─► (no entry selection: one metadata expand → integrity-bound entryRange 0..n-1)
             ─► expand page ─► chunks of textRange ─► reassembled entry ─► visitor(entry)
                    ▲   next                                                │ exactly False
                    └──────────────────────────────────────────────────────┘ stops

The walk is guest-side, as in the seed: the provider only answers ``memory.expand``; this
module pages, checks continuity (the same source hash, lineage and branch mode on every page;
each chunk starting where the last one ended; indices increasing; a reassembled text as long
as its ``textRange.total``), and hands the visitor one complete entry at a time. A provider
failure — an answered error such as ``stale_pointer`` after an append, or a request it
refused — ends the walk with ``WalkResult.error``; an exception from the visitor propagates.

The walk itself is a generator of steps (``Expand`` / ``Sessions`` / ``Visit``), driven by
``drive`` (synchronous; an async visitor is run on a private event loop) or ``adrive`` (async:
provider calls run in a thread, async visitors are awaited), so both share one algorithm.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Awaitable, Callable, Generator, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from query.errors import InvalidArgument, QueryError
from query.results import Call, Entry, ResultError, WalkResult
from query.u16 import u16len
from store.errors import IndexOutdated, SnapshotMissing, StoreError

__all__ = ["Visitor", "adrive", "drive", "steps"]

DISCONTINUITY: Final = "walk_discontinuity"
# Keys of the first response that bind every later page.
_BINDINGS: Final = ("session", "sourceHash", "lineageFingerprint", "branches")
_SELECTORS: Final = ("indices", "entryIds", "operationAddresses", "entryRange")

Visitor = Callable[[Entry], Any]
Provider = Callable[[Mapping[str, Any]], Mapping[str, Any]]


@dataclass(frozen=True, slots=True)
class Expand:
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Sessions:
    args: Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Visit:
    entry: Entry


Step = Expand | Sessions | Visit


@dataclass(slots=True)
class _Partial:
    record: dict[str, Any]
    parts: list[str] = field(default_factory=list)
    end: int = 0

    @property
    def total(self) -> int:
        total: int = self.record["textRange"]["total"]
        return total


def _broken(message: str) -> dict[str, Any]:
    return {"code": DISCONTINUITY, "message": message}


def selector_args(selector: Any) -> dict[str, Any] | None:
    """The expand arguments a selector names (None: the current session of the cwd)."""
    if selector is None:
        return None
    if isinstance(selector, Call):
        selector = selector.to_dict()
    if isinstance(selector, str):
        return {"session": selector}
    if not isinstance(selector, Mapping):
        raise InvalidArgument("walk selector must be expand arguments, a call token or a session")
    if set(selector) == {"ref", "args"}:
        if selector["ref"] != "memory.expand":
            raise InvalidArgument(
                f"walk follows memory.expand tokens, not {selector['ref']!r}: "
                "call that token first and walk one of its entry hits"
            )
        selector = selector["args"]
    args = dict(selector)
    if args.get("textOffset"):
        raise InvalidArgument(
            "walk starts from an original selection, not a continuation inside an entry "
            "(textOffset > 0): every visit receives a complete entry"
        )
    return args


def steps(selector: Any) -> Generator[Step, Any, WalkResult]:
    """The walk as a conversation: yields requests, receives answers (see the module doc)."""
    args = selector_args(selector)
    if args is None:
        listing = yield Sessions({"scope": "session"})
        if "error" in listing:
            return WalkResult(0, False, ResultError.from_dict(listing["error"]))
        rows = listing.get("sessions", [])
        if not rows:
            return WalkResult(
                0,
                False,
                ResultError.from_dict(
                    {
                        "code": "session_not_found",
                        "message": "No indexed session for this directory; pass a selector.",
                    }
                ),
            )
        args = {"session": rows[0]["file"]}
    if not any(args.get(k) for k in _SELECTORS):
        # The whole session: bind the range to the hashes of one metadata answer.
        probe = dict(args)
        meta = yield Expand(probe)
        if "error" in meta:
            return WalkResult(0, False, ResultError.from_dict(meta["error"]))
        count = int(meta.get("entryCount", 0))
        if count == 0:
            return WalkResult(0, False, None)
        args = {
            **{k: v for k, v in probe.items() if k in ("maxChars", "maxEntries", "cwd")},
            "session": meta["session"],
            "expectedSourceHash": meta["sourceHash"],
            "expectedLineageFingerprint": meta["lineageFingerprint"],
            "branches": meta["branches"],
            "entryRange": {"first": 0, "last": count - 1},
        }
    visited = 0
    bound: dict[str, Any] | None = None
    partial: _Partial | None = None
    last_index: int | None = None
    page_args: Mapping[str, Any] = args
    while True:
        page = yield Expand(page_args)
        if "error" in page:
            return WalkResult(visited, False, ResultError.from_dict(page["error"]))
        current = {k: page.get(k) for k in _BINDINGS}
        if bound is None:
            bound = current
        elif current != bound:
            return WalkResult(
                visited, False, ResultError.from_dict(_broken(f"page bindings moved: {current}"))
            )
        entries = page.get("entries", [])
        for record in entries:
            text_range = record["textRange"]
            if partial is not None:
                if (
                    record["index"] != partial.record["index"]
                    or text_range["start"] != partial.end
                    or text_range["total"] != partial.total
                ):
                    return WalkResult(
                        visited,
                        False,
                        ResultError.from_dict(
                            _broken(
                                f"entry #{partial.record['index']} continued at "
                                f"#{record['index']} offset {text_range['start']}, expected "
                                f"offset {partial.end}"
                            )
                        ),
                    )
            else:
                if text_range["start"] != 0 or (
                    last_index is not None and record["index"] <= last_index
                ):
                    return WalkResult(
                        visited,
                        False,
                        ResultError.from_dict(
                            _broken(
                                f"entry #{record['index']} starts at offset "
                                f"{text_range['start']} after #{last_index}"
                            )
                        ),
                    )
                partial = _Partial(dict(record))
            partial.parts.append(record["text"])
            partial.end = text_range["end"]
            if text_range["end"] < text_range["total"]:
                continue
            text = "".join(partial.parts)
            if u16len(text) != partial.total:
                return WalkResult(
                    visited,
                    False,
                    ResultError.from_dict(
                        _broken(
                            f"entry #{record['index']} reassembled to {u16len(text)} units, "
                            f"textRange.total is {partial.total}"
                        )
                    ),
                )
            whole = partial.record
            whole["text"] = text
            whole["textRange"] = {
                "start": 0,
                "end": partial.total,
                "total": partial.total,
                "complete": True,
            }
            last_index = whole["index"]
            partial = None
            verdict = yield Visit(Entry.from_dict(whole))
            visited += 1
            if verdict is False:
                return WalkResult(visited, True, None)
        nxt = page.get("next")
        if nxt is None:
            if partial is not None:
                return WalkResult(
                    visited,
                    False,
                    ResultError.from_dict(_broken("the last page ended inside an entry")),
                )
            return WalkResult(visited, False, None)
        if nxt.get("ref") != "memory.expand" or not entries:
            return WalkResult(
                visited, False, ResultError.from_dict(_broken("a page made no progress"))
            )
        page_args = nxt["args"]


def _failure(exc: Exception) -> dict[str, Any]:
    """A provider exception as the error body a walk returns."""
    if isinstance(exc, InvalidArgument):
        code = "invalid_argument"
    elif isinstance(exc, SnapshotMissing):
        code = "no_index"
    elif isinstance(exc, IndexOutdated):
        code = exc.code
    elif isinstance(exc, StoreError):
        code = "index_damaged"
    else:
        code = str(getattr(exc, "code", "query_error"))
    return {"error": {"code": code, "message": str(exc)}}


def drive(
    walk: Generator[Step, Any, WalkResult],
    visitor: Visitor,
    *,
    expand: Provider,
    sessions: Provider,
) -> WalkResult:
    """Run a walk synchronously; an awaitable a visitor returns runs on a private loop."""
    loop: asyncio.AbstractEventLoop | None = None
    try:
        step = next(walk)
        while True:
            reply: Any
            if isinstance(step, Visit):
                reply = visitor(step.entry)
                if inspect.isawaitable(reply):
                    if loop is None:
                        _no_running_loop()
                        loop = asyncio.new_event_loop()
                    reply = loop.run_until_complete(_awaited(reply))
            else:
                call = expand if isinstance(step, Expand) else sessions
                try:
                    reply = call(step.args)
                except (QueryError, StoreError) as exc:
                    reply = _failure(exc)
            step = walk.send(reply)
    except StopIteration as stop:
        result: WalkResult = stop.value
        return result
    finally:
        walk.close()
        if loop is not None:
            loop.close()


async def adrive(
    walk: Generator[Step, Any, WalkResult],
    visitor: Visitor,
    *,
    expand: Provider,
    sessions: Provider,
) -> WalkResult:
    """Run a walk in async code: provider calls in a worker thread, visitors awaited."""
    try:
        step = next(walk)
        while True:
            reply: Any
            if isinstance(step, Visit):
                reply = visitor(step.entry)
                if inspect.isawaitable(reply):
                    reply = await reply
            else:
                call = expand if isinstance(step, Expand) else sessions
                try:
                    reply = await asyncio.to_thread(call, step.args)
                except (QueryError, StoreError) as exc:
                    reply = _failure(exc)
            step = walk.send(reply)
    except StopIteration as stop:
        result: WalkResult = stop.value
        return result
    finally:
        walk.close()


async def _awaited(value: Awaitable[Any]) -> Any:
    return await value


def _no_running_loop() -> None:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return
    raise RuntimeError("an async visitor inside a running event loop: use `await awalk(...)`")
