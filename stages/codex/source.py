"""The Codex CLI adapter: a parsed rollout → an agent-neutral ``SourceSession``.

Shapes (formats §3.3, §3.10.1), detected per line: a ``payload`` key is an envelope
(``{timestamp, type, payload}``, era C/D; ``ordinal`` and other additions are ignored); a
``record_type`` key is a state line (era B2, kind ``state``); a ``type`` without ``payload`` is a
bare response item (era B, kind ``response_item`` with the line itself as payload); ``id`` plus
``timestamp`` without ``type`` is a bare meta line. Everything else keeps its ``type`` (or
``unknown``) as kind and gives no entry.

Header. The first meta line (``session_meta`` envelope or bare meta) is the session's own: it is
``header`` and not a record. Session id = its ``payload.id`` (``session_id`` only as a fallback: in
subagent rollouts ``session_id`` names the parent, §3.5), else the file stem; cwd = its ``cwd``,
else the first ``turn_context.cwd`` (era B has none). Later meta lines are records.

Ids. A rollout is linear (§3.9), so ids are derived from the position in the file:
``L<line>`` for the first object of a line and ``L<line>.<k>`` for the k-th further object of a
concatenated line (stable under appends). Each record's parent is the previous record of the
session's own chain.

Drift. Every line kind, response-item type, event type, ``item_completed`` item type and
message content-item type outside the ``KNOWN_*`` sets is counted (``unknown``, with the
``cli_version`` as ``writer_version``); an unknown response item or content item (model
history, where conversation text lives) also gives the reason ``unknown_record_type``, an
unknown event does not (events only repeat history).

Parent thread (§3.5, §3.9). ``parent_session`` is ``source.subagent.thread_spawn.parent_thread_id``,
else the era-D top-level ``parent_thread_id``, else ``forked_from_id``; all three (when present)
are also in ``extra``. A subagent rollout (``source.subagent`` or ``thread_source: "subagent"``)
is ``sidechain=True``.

Forked copies (§3.4, §3.9; the gate openai-codex readers converged on: agentsview #657,
tokscale #735/#896). A fork copies the parent's rollout, parent ``session_meta`` first, right
after its own meta line, re-stamping every envelope timestamp. The copy is recognised from
typed fields only:

* it starts at the first meta line naming another thread, in a rollout that is a fork: its own
  meta has ``forked_from_id``, or it is not a subagent (a subagent's first lines repeat its
  parent's meta without copying history);
* it ends at the first turn start (``turn_context``, or an ``event_msg`` ``task_started`` /
  ``turn_started``) that belongs to the child: its ``turn_id`` is a UUIDv7 minted at or after the
  child's creation (the child's own UUIDv7 id, else its meta ``timestamp``), or, for a non-v7
  turn id, its ``task_started.started_at`` (epoch seconds) is not earlier. A turn start with no
  such evidence ends the copy, so a child's own turns are never hidden.

Copied records get kind ``codex.forked_copy`` (``FORKED_COPY``) and ``leaf_candidate=False``,
and the child's chain skips them, so they are selected only in ``all`` mode, where the
normalizer skips them: the parent's entries are indexed under the parent only.

Rollbacks (§3.9). An ``event_msg`` ``thread_rolled_back {num_turns: N}`` drops the newest N user
turns, as Codex's own replay does: the chain is cut before the N-th newest human user message
(``human_items``; the first one when there are fewer) and the rollback event continues from
the record before it. The dropped records stay in the file as an abandoned branch: in ``all``,
not in ``active``. ``extra["rolled_back"]`` counts them. Compaction, by contrast, cuts nothing:
as with Pi and Claude Code, a ``compacted`` item adds its summary and the history before it
stays on the active path.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import PurePath
from typing import Any

from stages.common import parse_timestamp_ms
from stages.drift import Drift
from stages.source import ParseResult, RawRecord, SourceRecord, SourceSession, parse_reasons
from stages.titles import Titles

__all__ = ["AGENT", "FORKED_COPY", "INJECTED_OPENERS", "human_items", "payload_of", "read_codex"]

AGENT = "codex"
FORKED_COPY = "codex.forked_copy"
# How Codex opens the text of context it injects as user messages (formats §3.7; the seed's
# IDE and image context). Matched only at the start of an ``input_text`` item.
INJECTED_OPENERS = (
    "# AGENTS.md instructions for ",
    "<INSTRUCTIONS>",
    "<environment_context>",
    "<user_instructions>",
    "<subagent_notification>",
    "<turn_aborted>",
    "## My request for Codex:",
    "# Context from my IDE setup:",
    "<image",
    "</image>",
)
_META = "session_meta"
_TURN_STARTS = ("task_started", "turn_started")

# What this adapter knows (formats §3.4–§3.8, the era-D samples, Codex 0.171.0); every other
# name is counted as drift (``stages.drift``). Line kinds are envelope ``type``s (and the
# adapter's own ``state``/``response_item`` for bare lines).
KNOWN_LINES = frozenset(
    {
        _META,
        "response_item",
        "event_msg",
        "turn_context",
        "compacted",
        "state",
        "world_state",
        "token_usage_record",
        "inter_agent_communication",
        "inter_agent_communication_metadata",
    }
)
KNOWN_ITEMS = frozenset(
    {
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
        "custom_tool_call",
        "custom_tool_call_output",
        "local_shell_call",
        "tool_search_call",
        "tool_search_output",
        "web_search_call",
        "image_generation_call",
        "ghost_snapshot",
        "compaction",
        "compaction_summary",
        "agent_message",
    }
)
KNOWN_EVENTS = frozenset(
    {
        "user_message",
        "agent_message",
        "agent_reasoning",
        "agent_reasoning_raw_content",
        "agent_reasoning_section_break",
        "token_count",
        "task_started",
        "turn_started",
        "task_complete",
        "turn_complete",
        "turn_aborted",
        "context_compacted",
        "thread_rolled_back",
        "thread_name_updated",
        "thread_settings_applied",
        "thread_goal_updated",
        "entered_review_mode",
        "exited_review_mode",
        "undo_completed",
        "image_generation_end",
        "item_started",
        "item_completed",
        "error",
        "warning",
        "stream_error",
        "exec_command_end",
        "patch_apply_end",
        "mcp_tool_call_end",
        "web_search_end",
        "view_image_tool_call",
        "collab_agent_spawn_end",
        "collab_agent_interaction_end",
        "collab_waiting_end",
        "collab_close_end",
        "collab_resume_end",
        "dynamic_tool_call_request",
        "dynamic_tool_call_response",
        "guardian_assessment",
        "sub_agent_activity",
        "plan_update",
        "turn_diff",
    }
)
# ``event_msg/item_completed`` item kinds (the app-server's ThreadItem names).
KNOWN_COMPLETED = frozenset(
    {
        "UserMessage",
        "AgentMessage",
        "Reasoning",
        "CommandExecution",
        "McpToolCall",
        "FileChange",
        "Plan",
        "Extension",
        "WebSearch",
        "ImageGeneration",
        "ImageView",
        "DynamicToolCall",
        "CollabAgentToolCall",
        "ContextCompaction",
        "EnteredReviewMode",
        "ExitedReviewMode",
    }
)
KNOWN_CONTENT = frozenset({"input_text", "input_image", "output_text", "text", "refusal"})
KNOWN_COMPLETED_CONTENT = frozenset({"text", "Text", "image", "Image", "localImage"})
_HEX = frozenset("0123456789abcdefABCDEF")


def read_codex(parsed: ParseResult, path: str) -> SourceSession:
    """Read a parsed Codex rollout. Never raises on odd content."""
    reasons = parse_reasons(parsed)
    raws = parsed.records
    header_at = next((i for i, r in enumerate(raws) if _is_meta(r.value)), None)
    header = raws[header_at].value if header_at is not None else None
    meta = _meta_payload(header) if header is not None else {}

    own_id = _str(meta.get("id")) or _str(meta.get("session_id")) or PurePath(path).stem
    cwd = _str(meta.get("cwd")) or _first_turn_cwd(raws) or ""
    source = meta.get("source")
    subagent = source.get("subagent") if isinstance(source, dict) else None
    spawn = subagent.get("thread_spawn") if isinstance(subagent, dict) else None
    spawned_by = _str(spawn.get("parent_thread_id")) if isinstance(spawn, dict) else None
    parent_thread = _str(meta.get("parent_thread_id"))
    forked_from = _str(meta.get("forked_from_id"))
    is_subagent = subagent is not None or meta.get("thread_source") == "subagent"

    copies = _forked_copies(raws, header_at, own_id, meta, forked_from is not None, is_subagent)
    drift = Drift()
    records: list[SourceRecord] = []
    previous_line = -1
    k = 0
    chain: list[str] = []  # the session's own surviving records, oldest first
    human_at: list[int] = []  # indices into ``chain`` of human user messages
    rolled_back = 0
    titles = Titles()  # a forked copy's name is its source thread's, not this one's
    last: str | None = None
    for i, raw in enumerate(raws):
        k = k + 1 if raw.line == previous_line else 0
        previous_line = raw.line
        if i == header_at:
            continue
        record_id = f"L{raw.line}" if k == 0 else f"L{raw.line}.{k}"
        copied = i in copies
        kind = _kind(raw.value)
        if not copied:
            _check(drift, kind, raw.value)
        if not copied and kind == "event_msg":
            rolled_back += _roll_back(payload_of(raw.value), chain, human_at)
            _name(titles, payload_of(raw.value))
        records.append(
            SourceRecord(
                position=len(records),
                line=raw.line,
                offset=raw.offset,
                id=record_id,
                parent_id=last if copied else (chain[-1] if chain else None),
                kind=FORKED_COPY if copied else kind,
                value=raw.value,
                leaf_candidate=not copied,
            )
        )
        last = record_id
        if not copied:
            chain.append(record_id)
            if kind == "response_item" and human_items(payload_of(raw.value)) is not None:
                human_at.append(len(chain) - 1)

    extra: dict[str, Any] = {}
    for key, found in (
        ("forked_from_id", forked_from),
        ("parent_thread_id", parent_thread or spawned_by),
        ("cli_version", _str(meta.get("cli_version"))),
        ("originator", _str(meta.get("originator"))),
    ):
        if found is not None:
            extra[key] = found
    if is_subagent:
        extra["agent_id"] = own_id  # the subagent's own thread, as its parent names it
    if copies:
        extra["forked_copies"] = len(copies)
    if rolled_back:
        extra["rolled_back"] = rolled_back
    return SourceSession(
        agent=AGENT,
        path=path,
        session_id=own_id,
        cwd=cwd,
        version=1,
        header=header,
        records=tuple(records),
        reasons=tuple(sorted(reasons | drift.reasons())),
        parent_session=spawned_by or parent_thread or forked_from,
        sidechain=is_subagent,
        extra=extra,
        writer_version=_str(meta.get("cli_version")) or "",
        unknown=drift.items(),
        title=titles.title,
    )


def _name(titles: Titles, payload: dict[str, Any]) -> None:
    """``thread_name_updated``: the thread's user-visible name (§3.8); the latest wins, and
    one without a name clears it."""
    if payload.get("type") == "thread_name_updated":
        titles.name(payload.get("thread_name"), clears=True)


def _check(drift: Drift, kind: str, value: dict[str, Any]) -> None:
    """Count what of one line this adapter does not know (module ``KNOWN_*`` sets). Model
    history (response items and their content) could hold conversation text; events and
    their items only repeat it, so an unknown one is counted but marks no coverage."""
    if not drift.check("line", kind, KNOWN_LINES, payload_of(value)):
        return
    payload = payload_of(value)
    item = payload.get("type")
    if kind == "response_item":
        if drift.check("item", item, KNOWN_ITEMS, payload) and item == "message":
            drift.blocks(payload.get("content"), KNOWN_CONTENT)
    elif kind == "event_msg":
        if not isinstance(item, str) or item not in KNOWN_EVENTS:
            drift.note("event", item, text=False)
        elif item == "item_completed":
            completed = payload.get("item")
            name = completed.get("type") if isinstance(completed, dict) else None
            if not isinstance(name, str) or name not in KNOWN_COMPLETED:
                drift.note("completed", name, text=False)


def payload_of(value: dict[str, Any]) -> dict[str, Any]:
    """The item an envelope carries, or a bare (era B) item itself; ``{}`` if not an object."""
    if "payload" in value:
        payload = value["payload"]
        return payload if isinstance(payload, dict) else {}
    return value


def human_items(payload: dict[str, Any]) -> list[dict[str, Any]] | None:
    """The content items a person wrote, if this ``message`` item is a human turn (§3.7).

    ``None`` for anything but a ``role: user`` message, for an era-D message whose
    ``content_item_kinds`` name no ``user.*`` kind, and for a message whose text and image items
    are all injected context (an ``input_text`` opening with one of ``INJECTED_OPENERS``).
    """
    if payload.get("type", "message") != "message" or payload.get("role") != "user":
        return None
    meta = payload.get("internal_chat_message_metadata_passthrough")
    kinds = meta.get("content_item_kinds") if isinstance(meta, dict) else None
    human_kinds = (isinstance(k, str) and k.startswith("user.") for k in kinds or ())
    if isinstance(kinds, list) and kinds and not any(human_kinds):
        return None
    content = payload.get("content")
    items = [i for i in content if isinstance(i, dict)] if isinstance(content, list) else []
    kept = [
        i
        for i in items
        if not (
            i.get("type") == "input_text"
            and isinstance(i.get("text"), str)
            and i["text"].lstrip().startswith(INJECTED_OPENERS)
        )
    ]
    if not any(i.get("type") in ("input_text", "input_image") for i in kept):
        return None
    return kept


def _kind(value: dict[str, Any]) -> str:
    if "payload" in value:
        kind = value.get("type")
        return kind if isinstance(kind, str) else "unknown"
    if "record_type" in value:
        return "state"
    if "type" in value:
        return "response_item"
    if "id" in value and "timestamp" in value:
        return _META
    return "unknown"


def _is_meta(value: dict[str, Any]) -> bool:
    return _kind(value) == _META


def _meta_payload(value: dict[str, Any]) -> dict[str, Any]:
    return payload_of(value) if "payload" in value else value


def _roll_back(payload: dict[str, Any], chain: list[str], human_at: list[int]) -> int:
    """Apply a ``thread_rolled_back`` event: drop the newest ``num_turns`` user turns from the
    chain (Codex's ``rollback_surviving_items``: cut at the N-th newest human user message, or
    the first when there are fewer). Returns how many records left the chain."""
    turns = payload.get("num_turns")
    if payload.get("type") != "thread_rolled_back" or not human_at:
        return 0
    if not isinstance(turns, int) or isinstance(turns, bool) or turns <= 0:
        return 0
    keep = max(0, len(human_at) - turns)
    cut = human_at[keep]
    dropped = len(chain) - cut
    del chain[cut:]
    del human_at[keep:]
    return dropped


def _forked_copies(
    raws: Sequence[RawRecord],
    header_at: int | None,
    own_id: str,
    meta: dict[str, Any],
    forked: bool,
    subagent: bool,
) -> set[int]:
    """Indices of the records a fork copied from its parent (module docstring)."""
    if header_at is None or not (forked or not subagent):
        return set()
    start = next(
        (
            i
            for i in range(header_at + 1, len(raws))
            if _is_meta(raws[i].value)
            and _str(_meta_payload(raws[i].value).get("id")) not in (None, own_id)
        ),
        None,
    )
    if start is None:
        return set()
    created = _uuid7_ms(own_id)
    if created is None:
        created = parse_timestamp_ms(meta.get("timestamp"))
    if created is None:
        created = parse_timestamp_ms(raws[header_at].value.get("timestamp"))
    if created is None:
        return set()
    decided: dict[str, bool] = {}
    copies: set[int] = set()
    for i in range(start, len(raws)):
        if _starts_own_turn(raws[i].value, created, decided):
            break
        copies.add(i)
    return copies


def _starts_own_turn(value: dict[str, Any], created: int, decided: dict[str, bool]) -> bool:
    """Whether this record opens one of the child's own turns (and so ends the copy)."""
    kind = _kind(value)
    payload = payload_of(value)
    started: object = None
    if kind == "event_msg" and payload.get("type") in _TURN_STARTS:
        started = payload.get("started_at")
    elif kind != "turn_context":
        return False
    turn_id = _str(payload.get("turn_id"))
    if turn_id is not None and turn_id in decided:
        return decided[turn_id]
    minted = _uuid7_ms(turn_id)
    if minted is not None:
        own = minted >= created
    elif isinstance(started, int | float) and not isinstance(started, bool):
        own = started >= created // 1000
    else:
        own = True
    if turn_id is not None:
        decided[turn_id] = own
    return own


def _uuid7_ms(value: str | None) -> int | None:
    """The Unix-millisecond timestamp a UUIDv7 string carries (its first 48 bits), else None."""
    if value is None or len(value) != 36 or value[14] != "7":
        return None
    if any(value[i] != "-" for i in (8, 13, 18, 23)):
        return None
    digits = value.replace("-", "")
    if len(digits) != 32 or not _HEX.issuperset(digits):
        return None
    return int(digits[:12], 16)


def _first_turn_cwd(raws: Sequence[RawRecord]) -> str | None:
    for raw in raws:
        if _kind(raw.value) == "turn_context":
            cwd = _str(payload_of(raw.value).get("cwd"))
            if cwd:
                return cwd
    return None


def _str(value: object) -> str | None:
    return value if isinstance(value, str) else None
