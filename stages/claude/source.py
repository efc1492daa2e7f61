"""The Claude Code adapter: a parsed transcript → an agent-neutral ``SourceSession``.

Claude Code has no header line: the session id and cwd repeat on every envelope line (formats
§2.3, §2.4, §2.9.1). Every parsed object becomes a ``SourceRecord`` in file order, unknown
``type``s included; a line with a string ``uuid`` is a node (``id``), the rest (``summary``,
``file-history-snapshot``, ``mode``, ``cost-state``, …) are ``id=None`` and never leaves.

``parent_id`` is the *threading* parent, which is ``parentUuid`` except where the raw links
would make the walk from the last entry drop real conversation. The raw fields stay in
``value``. Steps, in order:

1. **Compaction** (§2.7): ``parentUuid`` null with a ``logicalParentUuid`` (``compact_boundary``)
   continues through ``logicalParentUuid``.
2. **Dangling parents** (§2.8 "dangling parents"; anthropics/claude-code #58554, #24304): a main
   thread parent that names no line of the file (trimmed files, or lines Claude Code never
   persisted) is replaced by the previous main-thread conversational node in file order. The
   formats note says "treat as a root"; we bridge instead, because Claude Code itself loses the
   earlier conversation at such a break and recall should not (the trimmed real sample keeps
   none of its four entries on the active path without it; #58554 reports 90–99% of a session
   unreachable). ``extra["bridged_parents"]`` counts the bridges and the session says
   ``bridged_parent``: the same policy ``stages.lineage`` applies to the other agents.
3. **Progress lines** (§2.8 "exclude progress from threading"): a record whose parent is a
   ``progress`` line takes that line's parent instead (repeatedly). Progress lines keep their own
   parent and ``leaf_candidate=False``, so they are side leaves: never on the active path, still in
   ``all``, never the leaf.
4. **Split assistant replies** (§2.6): the lines of one API response share ``message.id``;
   parallel tool calls hang their ``tool_result`` lines off the individual ``tool_use`` lines, so
   the last call's branch alone would reach the leaf (anthropics/claude-code #37779, #31330).
   Like Claude Code's ``recoverOrphanedParallelToolResults``, a reply's *region* — its lines,
   the tool-result lines answering it (hanging off one of its lines, or naming one of its
   ``tool_use`` ids), and any line on the raw way up from a member to its first line (a hook
   line between two calls) — is chained in file order; the first line keeps its parent, and
   every other record hanging off a region line hangs off the region's last line. The path
   from any leaf below a reply thus holds the whole region and everything the raw path held.
   If this ever closes a parent cycle the raw graph did not have, step 4 is dropped for the file.

Sidechains (§2.2, §2.9.5): an ``isSidechain`` line inside a main transcript is
``sidechain=True``: off the main path, selected in both branch modes (``stages.lineage``).
A file under a ``subagents/`` folder, or named ``agent-<id>.jsonl``, is a subagent
transcript: the session is ``sidechain=True``, its records are not (its own active path is
the subagent's conversation), ``parent_session`` is the parent's session id (the lines'
``sessionId``), and ``session_id`` is ``<parent id>/<file stem>`` because the lines carry the
parent's id. ``extra`` names the subagent (``agent_id``: the lines' ``agentId``, else the stem
after ``agent-``) and, from its meta sidecar, the spawning tool call (``parent_call_id``) and
``agent_type``.

Leaves (§2.8): ``user``, ``assistant``, ``system`` and ``attachment`` lines with a uuid.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import PurePath
from typing import Any

from stages.claude.known import claude_drift
from stages.source import ParseResult, RawRecord, SourceRecord, SourceSession, parse_reasons
from stages.titles import Titles
from store.reasons import BRIDGED_PARENT

__all__ = ["AGENT", "LEAF_TYPES", "read_claude"]

AGENT = "claude"
LEAF_TYPES = frozenset({"user", "assistant", "system", "attachment"})
_PROGRESS = "progress"


def read_claude(
    parsed: ParseResult, path: str, meta: Mapping[str, Any] | None = None
) -> SourceSession:
    """Read a parsed Claude Code transcript. Never raises on odd content.

    *meta* is a subagent file's ``agent-<id>.meta.json`` sidecar when the caller found one
    (``{agentType, description, toolUseId, spawnDepth}``): its ``toolUseId`` names the
    parent's tool call that spawned the subagent.
    """
    reasons = parse_reasons(parsed)
    raws = parsed.records
    pure = PurePath(path)
    subagent_file = pure.parent.name == "subagents" or pure.name.startswith("agent-")

    lines_session = _first_str(raws, "sessionId")
    if subagent_file:
        folder = pure.parent.parent.name if pure.parent.name == "subagents" else ""
        parent = lines_session or folder or None
        session_id = f"{parent}/{pure.stem}" if parent else pure.stem
    else:
        parent = None
        # The file is named after its session; a resumed transcript can repeat an older
        # session's lines, so the stem wins when some line confirms it (§2.2, §2.8).
        stems = {_str(r.value.get("sessionId")) for r in raws}
        session_id = pure.stem if pure.stem in stems else (lines_session or pure.stem)

    sidechain = [(not subagent_file) and r.value.get("isSidechain") is True for r in raws]
    parents, bridged = _thread(raws, sidechain)
    if bridged:
        reasons.add(BRIDGED_PARENT)
    records = tuple(_record(i, raw, parents[i], sidechain[i]) for i, raw in enumerate(raws))
    extra: dict[str, Any] = {"bridged_parents": bridged}
    if subagent_file:
        extra["agent_id"] = _first_str(raws, "agentId") or pure.stem.removeprefix("agent-")
        found = meta or {}
        for key, name in (("parent_call_id", "toolUseId"), ("agent_type", "agentType")):
            if isinstance(found.get(name), str):
                extra[key] = found[name]
    version = _first_str(raws, "version")
    if version is not None:
        extra["cli_version"] = version
    drift = claude_drift(raws)
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=session_id,
        cwd=_first_str(raws, "cwd") or "",
        version=1,
        header=None,
        records=records,
        reasons=tuple(sorted(reasons | drift.reasons())),
        parent_session=parent,
        sidechain=subagent_file,
        extra=extra,
        writer_version=version or "",
        unknown=drift.items(),
        title=_title(raws),
    )


def _title(raws: Sequence[RawRecord]) -> str | None:
    """``custom-title`` (the person's) over ``ai-title`` and ``summary`` (generated), latest
    of a kind first (§2.3). A ``summary`` titles the conversation ending at its ``leafUuid``,
    which may be another file's: it counts only when that leaf is a line of this file."""
    uuids = {u for r in raws if (u := _str(r.value.get("uuid"))) is not None}
    titles = Titles()
    for raw in raws:
        kind = raw.value.get("type")
        if kind == "custom-title":
            titles.name(raw.value.get("customTitle"))
        elif kind == "ai-title":
            titles.generate(raw.value.get("aiTitle"))
        elif kind == "summary" and _str(raw.value.get("leafUuid")) in uuids:
            titles.generate(raw.value.get("summary"))
    return titles.title


def _record(position: int, raw: RawRecord, parent: str | None, sidechain: bool) -> SourceRecord:
    uuid = _str(raw.value.get("uuid"))
    kind = _kind(raw.value)
    return SourceRecord(
        position=position,
        line=raw.line,
        offset=raw.offset,
        id=uuid,
        parent_id=parent,
        kind=kind,
        value=raw.value,
        leaf_candidate=uuid is not None and kind in LEAF_TYPES,
        sidechain=sidechain,
    )


def _thread(raws: Sequence[RawRecord], sidechain: Sequence[bool]) -> tuple[list[str | None], int]:
    """The threading parent of every record (module docstring, steps 1–4)."""
    n = len(raws)
    uuids = [_str(r.value.get("uuid")) for r in raws]
    kinds = [_kind(r.value) for r in raws]
    last_at: dict[str, int] = {}
    for i, u in enumerate(uuids):
        if u is not None:
            last_at[u] = i

    # Steps 1 and 2: logical parents, then bridge parents that name no line.
    linked: list[str | None] = [None] * n
    bridged = 0
    previous_main: str | None = None
    for i, raw in enumerate(raws):
        value = raw.value
        parent = _str(value.get("parentUuid"))
        if parent is None and value.get("parentUuid") is None:
            parent = _str(value.get("logicalParentUuid"))
        if parent is not None and parent not in last_at and not sidechain[i]:
            parent = previous_main
            bridged += 1
        linked[i] = parent
        if uuids[i] is not None and kinds[i] in LEAF_TYPES and not sidechain[i]:
            previous_main = uuids[i]

    # Step 3: thread through progress lines to their nearest non-progress ancestor.
    # ``above`` memoizes each progress line's answer: subagent progress chains can be long.
    spliced = list(linked)
    above: dict[str, str | None] = {}
    for i in range(n):
        if kinds[i] == _PROGRESS:
            continue
        parent = linked[i]
        walked: dict[str, None] = {}
        while parent is not None and parent not in above:
            at = last_at.get(parent)
            if at is None or kinds[at] != _PROGRESS or parent in walked:
                break
            walked[parent] = None
            parent = linked[at]
        if parent is not None and parent in above:
            parent = above[parent]
        above.update(dict.fromkeys(walked, parent))
        spliced[i] = parent

    clustered = _cluster(raws, uuids, kinds, sidechain, last_at, spliced)
    if _has_cycle(uuids, last_at, clustered) and not _has_cycle(uuids, last_at, spliced):
        return spliced, bridged
    return clustered, bridged


def _cluster(
    raws: Sequence[RawRecord],
    uuids: Sequence[str | None],
    kinds: Sequence[str],
    sidechain: Sequence[bool],
    last_at: dict[str, int],
    parents: Sequence[str | None],
) -> list[str | None]:
    """Step 4: chain each reply's region in file order; hang the rest off its last line.

    A reply's region is its lines (one ``message.id``), the tool-result lines answering its
    calls (hanging off one of its lines, or naming one of its ``tool_use`` ids), and every line
    on the way up from a member to the reply's first line (hook lines between two calls), so no
    line the raw path went through is lost.
    """
    # Only the last line of a repeated uuid is a node (lineage resolves duplicates the same way).
    node_ids = {i: u for i, u in enumerate(uuids) if u is not None and last_at[u] == i}
    regions: list[list[int]] = []
    region_of: dict[str, int] = {}
    by_message: dict[tuple[bool, str], int] = {}
    call_owner: dict[str, int] = {}
    for i, uuid in node_ids.items():
        message_id = _message_id(raws[i].value) if kinds[i] == "assistant" else None
        if message_id is None:
            continue
        key = by_message.setdefault((sidechain[i], message_id), len(regions))
        if key == len(regions):
            regions.append([])
        regions[key].append(i)
        region_of[uuid] = key
        for call_id in _tool_use_ids(raws[i].value):
            call_owner.setdefault(call_id, key)
    if not regions:
        return list(parents)

    joining: list[tuple[int, int]] = []
    for i, uuid in node_ids.items():
        if uuid in region_of or kinds[i] != "user":
            continue
        parent = parents[i]
        host = region_of.get(parent) if parent is not None else None
        if host is None:
            host = next(
                (call_owner[c] for c in _result_ids(raws[i].value) if c in call_owner), None
            )
        elif not _is_tool_result(raws[i].value):
            host = None
        if host is not None and sidechain[i] == sidechain[regions[host][0]]:
            joining.append((host, i))
    for host, i in joining:
        regions[host].append(i)
        region_of[node_ids[i]] = host

    for key, members in enumerate(regions):
        start = min(members)
        for member in list(members):
            node = parents[member]
            while node is not None and node not in region_of:
                at = last_at.get(node)
                if at is None or at <= start or kinds[at] == _PROGRESS:
                    break
                members.append(at)
                region_of[node] = key
                node = parents[at]

    result = list(parents)
    tails: list[str] = []
    heads: set[int] = set()
    inside: set[int] = set()
    for members in regions:
        members.sort()
        heads.add(members[0])
        inside.update(members)
        for before, after in zip(members, members[1:], strict=False):
            result[after] = node_ids[before]
        tails.append(node_ids[members[-1]])
    for i in range(len(raws)):
        parent = parents[i]
        if parent is None or kinds[i] == _PROGRESS or (i in inside and i not in heads):
            continue
        host = region_of.get(parent)
        own = region_of.get(node_ids[i]) if i in inside else None
        if host is not None and host != own:
            result[i] = tails[host]
    return result


def _has_cycle(
    uuids: Sequence[str | None], last_at: dict[str, int], parents: Sequence[str | None]
) -> bool:
    """Whether following ``parents`` from some node comes back to a node already walked."""
    state: dict[str, int] = {}  # 1 = on the current walk, 2 = known to reach a root
    for start in uuids:
        if start is None or start in state:
            continue
        walk: list[str] = []
        node: str | None = start
        while node is not None and node not in state:
            state[node] = 1
            walk.append(node)
            at = last_at.get(node)
            nxt = parents[at] if at is not None else None
            node = None if nxt == node else nxt
        if node is not None and state[node] == 1:
            return True
        for done in walk:
            state[done] = 2
    return False


def _tool_use_ids(value: dict[str, Any]) -> list[str]:
    return [
        b["id"]
        for b in _content(value)
        if b.get("type") in ("tool_use", "server_tool_use") and isinstance(b.get("id"), str)
    ]


def _result_ids(value: dict[str, Any]) -> list[str]:
    return [
        b["tool_use_id"]
        for b in _content(value)
        if b.get("type") == "tool_result" and isinstance(b.get("tool_use_id"), str)
    ]


def _content(value: dict[str, Any]) -> list[dict[str, Any]]:
    message = value.get("message")
    content = message.get("content") if isinstance(message, dict) else None
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def _is_tool_result(value: dict[str, Any]) -> bool:
    """A user line carrying tool output (§2.5): a ``tool_result`` block or ``toolUseResult``."""
    return "toolUseResult" in value or any(b.get("type") == "tool_result" for b in _content(value))


def _message_id(value: dict[str, Any]) -> str | None:
    message = value.get("message")
    return _str(message.get("id")) if isinstance(message, dict) else None


def _kind(value: dict[str, Any]) -> str:
    kind = value.get("type")
    return kind if isinstance(kind, str) else "unknown"


def _first_str(raws: Sequence[RawRecord], key: str) -> str | None:
    for raw in raws:
        found = raw.value.get(key)
        if isinstance(found, str) and found:
            return found
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
