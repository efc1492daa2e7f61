"""The Gemini CLI adapter: a parsed session file → an agent-neutral ``SourceSession``.

Gemini CLI 0.39+ (``ChatRecordingService``, read here against 0.61.0) appends one JSON object a
line to ``<root>/<project>/chats/session-<time>-<id8>.jsonl``::

    {sessionId, projectHash, startTime, lastUpdated, kind, directories?}   the header (first)
    {id, timestamp, type, content, …}         a message; a line repeating an id rewrites it
    {"$set": {…}}                             metadata update; with ``messages``: a checkpoint
    {"$rewindTo": id}                         retract that message and every later one

A message is ``type`` ``user`` / ``gemini`` / ``info`` / ``error`` / ``warning``; a ``gemini``
message carries ``toolCalls`` (each with its ``result`` parts and ``status``), ``thoughts``,
``tokens`` and ``model``. The writer rewrites a model turn by appending it again under its id
(tokens arrive, tool calls complete), and its own loader keeps the last version at the place
the id first took.

The reader replays the writer's loader (``loadConversationRecord``) to give each record its
place in the conversation, as an id and a parent:

* a message is a node with its own ``id``; a new id's parent is the last live message before
  it; a line that rewrites an id takes the parent of the version it replaces (and can end the
  active path only when that message is the last live one); an earlier version is no record
  at all, so a rewritten turn is indexed once, as last written, in both branch modes (its
  entries sit where that version was written, as entries follow the file on every agent);
* ``$rewindTo`` removes the named message and all after it from the live conversation (all
  of it when the id is unknown, as the writer does). The retracted records keep their ids and
  stay in the file as an abandoned branch: selected in ``all``, off the ``active`` path, since
  the next message's parent is the last survivor. The rewind itself is a node
  (``gemini.rewind``, id ``$rewind:L<line>``) under the last survivor, so a session that ends
  on a rewind has that survivor as its active leaf, not a retracted turn;
* a ``$set`` with a ``messages`` array is a checkpoint that rebuilds the conversation from the
  array, and the messages it leaves out are off the active path. A message no line wrote
  before becomes a record of that line (``line``/``offset`` of the line) under the one before
  it; a copy of a message already written only orders it. The copies are re-serialized
  model history, not new versions: 0.61.0 writes one at every resume with the ``toolCalls``
  (and their statuses) dropped and a turn's function responses under the turn's own id, so
  taking them as versions would erase every tool call a resumed session made;
* other ``$set`` lines (``lastUpdated`` after every message, ``summary``, ``directories``)
  are metadata, read for identity and no record.

Leaving out what is not conversation keeps ``all`` selecting exactly what ``active`` does
until a rewind or checkpoint really leaves turns behind: a session is stored as one view, and
an append (a new message, a turn rewritten with its tool calls) stays a delta.

Identity: the header's ``sessionId`` (else the file stem); ``kind: "subagent"`` marks a
subagent, whose file lives in ``chats/<parent session id>/``: the folder names the parent
(``parent_session``) and the session is a sidechain. The cwd is the first of the header's (or a
``$set``'s) ``directories`` when the writer recorded them (subagents, ``/dir add``), else the
project root the CLI's ``ProjectRegistry`` wrote into the project folder's ``.project_root``
(the adapter's sidecar, *project_root*); a session in a folder without one (a SHA-256 named
folder of older releases) names its project only by ``projectHash``: its cwd is "".

The legacy one-object ``session-*.json`` (before 0.39, rewritten whole) parses to the same
records (``parse_legacy``): the object without ``messages`` is the header, each message a
record where its text starts.

Drift: message types, line shapes and content part kinds outside ``KNOWN_*`` are counted;
an unknown message type or part could hold conversation text and marks
``unknown_record_type``. A file whose first object is not a header is
``missing_session_header``.
"""

from __future__ import annotations

from pathlib import PurePath
from typing import Any, Final

import orjson

from stages.drift import Drift, holds_text
from stages.gemini.parts import part_list, unknown_parts
from stages.object_positions import Positions, value_starts
from stages.source import ParseResult, RawRecord, SourceRecord, SourceSession, parse_reasons
from stages.titles import Titles
from store.reasons import MISSING_SESSION_HEADER

__all__ = [
    "AGENT",
    "KNOWN_TYPES",
    "MESSAGE",
    "METADATA",
    "METADATA",
    "PROJECT_ROOT",
    "REWIND",
    "is_header",
    "parse_legacy",
    "read_gemini",
]

AGENT = "gemini"
# the key of the project folder's root in the sidecar value (``stages.gemini.adapter``)
PROJECT_ROOT: Final = "projectRoot"
MESSAGE: Final = "message"
REWIND: Final = "gemini.rewind"
METADATA: Final = "gemini.set"  # read, never a record
KNOWN_TYPES: Final = frozenset({"user", "gemini", "info", "error", "warning"})
_CHECKPOINTED: Final = "checkpointed"  # a message inside a ``$set`` checkpoint (never a kind)
_SUBAGENT: Final = "subagent"
_CHATS: Final = "chats"


def is_header(value: dict[str, Any]) -> bool:
    """The writer's ``isPartialMetadataRecord``: string ``sessionId`` and ``projectHash``."""
    return isinstance(value.get("sessionId"), str) and isinstance(value.get("projectHash"), str)


def read_gemini(
    parsed: ParseResult, path: str, *, project_root: str | None = None
) -> SourceSession:
    """Read a parsed Gemini CLI session (JSONL, or a legacy object); *project_root* is what
    the project folder's ``.project_root`` marker holds, when it has one. Never raises."""
    reasons = parse_reasons(parsed)
    drift = Drift()
    header: dict[str, Any] | None = None
    meta: dict[str, Any] = {}
    # (raw, value, kind, id) in file order, before threading; a checkpoint line gives several.
    items: list[tuple[RawRecord, dict[str, Any], str, str | None]] = []
    for at, raw in enumerate(parsed.records):
        value = raw.value
        rewind = value.get("$rewindTo")
        if isinstance(rewind, str):
            items.append((raw, value, REWIND, rewind))
        elif isinstance(value.get("id"), str):
            _check_message(drift, value)
            items.append((raw, value, MESSAGE, value["id"]))
        elif isinstance(value.get("$set"), dict):
            update: dict[str, Any] = value["$set"]
            meta.update({k: v for k, v in update.items() if k != "messages"})
            checkpoint = update.get("messages")
            items.append((raw, value, METADATA, None if checkpoint is None else "$checkpoint"))
            if isinstance(checkpoint, list):
                for message in checkpoint:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        _check_message(drift, message)
                        items.append((raw, message, _CHECKPOINTED, message["id"]))
        elif is_header(value):
            if header is None and at == 0:
                header = value
            meta = {**meta, **{k: v for k, v in value.items() if k != "messages"}}
            messages = value.get("messages")
            if isinstance(messages, list):  # a legacy object written on one line
                for message in messages:
                    if isinstance(message, dict) and isinstance(message.get("id"), str):
                        _check_message(drift, message)
                        items.append((raw, message, MESSAGE, message["id"]))
        else:
            drift.note("line", _shape(value), text=holds_text(value))
            items.append((raw, value, "unknown", None))
    if header is None and parsed.records:
        reasons.add(MISSING_SESSION_HEADER)

    records, live = _thread(items)
    own = header or {}
    session_id = _str(own.get("sessionId")) or PurePath(path).stem
    subagent = own.get("kind") == _SUBAGENT
    folder = PurePath(path).parent
    parent = folder.name if subagent and folder.parent.name == _CHATS else None
    directories = meta.get("directories")
    cwd = project_root or ""
    if isinstance(directories, list) and directories and isinstance(directories[0], str):
        cwd = directories[0]
    extra: dict[str, Any] = {}
    if isinstance(own.get("projectHash"), str):
        extra["project_hash"] = own["projectHash"]
    if subagent:
        extra["agent_id"] = session_id
    retracted = sum(1 for r in records if r.kind == MESSAGE and r.id not in live)
    if retracted:
        extra["retracted"] = retracted
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=session_id,
        cwd=cwd,
        version=1,
        header=header,
        records=tuple(records),
        reasons=tuple(sorted(reasons | drift.reasons())),
        parent_session=parent,
        sidechain=subagent,
        extra=extra,
        writer_version="",
        unknown=drift.items(),
        # the latest ``summary`` the CLI generated for the session (a ``$set`` or the header)
        title=Titles.text(meta.get("summary")),
    )


def _thread(
    items: list[tuple[RawRecord, dict[str, Any], str, str | None]],
) -> tuple[list[SourceRecord], dict[str, None]]:
    """Ids and parents by replaying the writer's loader (module docstring), and the ids still
    live at the end. One pass, plus a scan of the live ids at each rewind (rare: a user's
    ``/rewind``)."""
    # Which message items are a version of their message: every message line, and a
    # checkpoint's copy of a message no earlier line wrote.
    seen: set[str] = set()
    versions: dict[int, str] = {}
    for k, (_, _, kind, own) in enumerate(items):
        if own is not None and kind in (MESSAGE, _CHECKPOINTED):
            if kind == MESSAGE or own not in seen:
                versions[k] = own
            seen.add(own)
    last_at = {own: k for k, own in versions.items()}
    live: dict[str, None] = {}  # the live conversation, in the writer's Map order
    parent_of: dict[str, str | None] = {}
    records: list[SourceRecord] = []
    for k, (raw, value, kind, own) in enumerate(items):
        record_id: str | None = None
        parent: str | None = None
        leaf = False
        if kind in (MESSAGE, _CHECKPOINTED) and own is not None:
            if own not in live:
                if k in versions:  # a message placed anew (a rewrite keeps its place)
                    parent_of[own] = next(reversed(live), None)
                live[own] = None
            parent = parent_of.get(own)
            if last_at.get(own) != k:
                continue  # another item is the message; this one only orders it
            # a rewrite of an earlier turn is on the path but never its end
            record_id, leaf = own, next(reversed(live)) == own
        elif kind == REWIND and own is not None:
            if own in live:
                order = list(live)
                for gone in order[order.index(own) :]:
                    del live[gone]
            else:
                live.clear()
            record_id, leaf = f"$rewind:L{raw.line}", True
            parent = next(reversed(live), None)
        elif kind == METADATA:
            if own is not None:  # a checkpoint: its messages follow
                live.clear()
            continue
        records.append(
            SourceRecord(
                position=len(records),
                line=raw.line,
                offset=raw.offset,
                id=record_id,
                parent_id=parent,
                kind=MESSAGE if kind == _CHECKPOINTED else kind,
                value=value,
                leaf_candidate=leaf,
            )
        )
    return records, live


def _check_message(drift: Drift, message: dict[str, Any]) -> None:
    if not drift.check("type", message.get("type"), KNOWN_TYPES, message):
        return
    for name in unknown_parts(part_list(message.get("content"))):
        drift.note("part", name, text=True)


def _shape(value: dict[str, Any]) -> str:
    keys = sorted(k for k in value if isinstance(k, str))
    return keys[0] if keys else "empty"


def _str(value: object) -> str | None:
    return value if isinstance(value, str) and value else None


def parse_legacy(data: bytes) -> ParseResult:
    """The records of a legacy ``session-*.json`` (one ``ConversationRecord`` object): the
    object without ``messages`` first (the header), then each message where its text starts.
    A file that is not such an object (half written) is line 1 ``malformed_line``; never
    raises."""
    lines = data.count(b"\n") + 1
    try:
        value = orjson.loads(data)
    except orjson.JSONDecodeError:
        value = None
    messages = value.get("messages") if isinstance(value, dict) else None
    if not isinstance(value, dict) or not isinstance(messages, list):
        return ParseResult(records=(), consumed=0, next_line=1, malformed_lines=(1,))
    text = data.decode("utf-8", "surrogatepass")
    starts = value_starts(text, frozenset(), frozenset({"messages"}))
    found = starts.get("messages")
    at = Positions(text)
    head = {k: v for k, v in value.items() if k != "messages"}
    objects: list[tuple[int, dict[str, Any]]] = []
    for k, message in enumerate(messages):
        if isinstance(message, dict):
            where = found[k] if isinstance(found, list) and k < len(found) else 0
            objects.append((where, message))
    records = [RawRecord(1, 0, head)]
    records += [RawRecord(*at.line_and_offset(where), obj) for where, obj in objects]
    malformed = () if len(objects) == len(messages) else (1,)
    return ParseResult(
        records=tuple(records), consumed=len(data), next_line=lines, malformed_lines=malformed
    )
