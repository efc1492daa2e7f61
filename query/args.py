"""Request arguments: validated once, at the edge, into frozen values.

Each action takes a JSON object of the seed's camelCase arguments (``additionalProperties:
false``). A value that breaks the schema raises ``InvalidArgument`` naming the argument and
what it accepts; the seed's few *answered* failures (an ``entryRange`` or ``indices`` that is
not a valid address) are kept on the request so the action can answer them with
``index_out_of_bounds``. Nothing is silently clamped.

``canonical()`` gives back the arguments a continuation token carries: the defaults made
explicit, aliases resolved, in a fixed order, so the same request always yields the same
token.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Final

from query.errors import InvalidArgument
from store.names import AGENTS, BRANCH_MODES, SIDECHAIN, TOOL_FAMILIES

if TYPE_CHECKING:
    from store.records import NormalizedEntry

__all__ = [
    "EXPAND_MAX_CHARS",
    "OUTCOMES",
    "QUERY_MATCHES",
    "QUERY_MODES",
    "RESPONSE_MAX_CHARS",
    "ROLES",
    "TOOL_FAMILIES",
    "ExpandRequest",
    "Filters",
    "RecallRequest",
    "Scope",
    "SessionsRequest",
    "parse_expand",
    "parse_recall",
    "parse_scope",
    "parse_sessions",
]

QUERY_MODES: Final = ("literal", "phrase", "regex")
QUERY_MATCHES: Final = ("any", "all")
OUTCOMES: Final = ("succeeded", "failed", "aborted", "timed_out")
# The seed's closed role set (recall input schema).
ROLES: Final = (
    "assistant",
    "bashExecution",
    "branchCustomMessage",
    "branchSummary",
    "branchUser",
    "compaction",
    "compactionSummary",
    "custom",
    "fabricOperation",
    "fabricPhase",
    "fabricRun",
    "toolResult",
    "user",
)
SCOPE_ALIASES: Final = {
    "cwd": "project",
    "repo": "project",
    "directory": "project",
    "folder": "project",
    "all": "global",
    "current": "session",
}
QUERY_MAX_CHARS: Final = 4096
PAGE_SIZE_DEFAULT: Final = 10
PAGE_SIZE_MAX: Final = 50
SNIPPET_DEFAULT: Final = 480
SNIPPET_MIN: Final = 80
SNIPPET_MAX: Final = 2000
RESPONSE_MAX_CHARS: Final = 30_000
EXPAND_DEFAULT_CHARS: Final = 20_000
EXPAND_MIN_CHARS: Final = 256
EXPAND_MAX_CHARS: Final = 24_000
EXPAND_DEFAULT_ENTRIES: Final = 10
EXPAND_MAX_ENTRIES: Final = 20
EXPAND_MAX_CONTEXT: Final = 100
EXPAND_MAX_SELECTORS: Final = 100
ADDRESS_MAX_CHARS: Final = 512
SESSIONS_MAX: Final = 500
_SAFE_INT: Final = 2**53 - 1

_RECALL_KEYS: Final = frozenset(
    {
        "query",
        "queryMode",
        "queryMatch",
        "expectedSourceHash",
        "expectedLineageFingerprint",
        "branches",
        "scope",
        "offset",
        "pageSize",
        "snippetChars",
        "role",
        "tool",
        "ref",
        "provider",
        "action",
        "outcome",
        "kind",
        "agent",
        "sidechain",
        "since",
        "until",
        "entryRange",
        "cwd",
    }
)
_EXPAND_KEYS: Final = frozenset(
    {
        "session",
        "expectedSourceHash",
        "expectedLineageFingerprint",
        "branches",
        "indices",
        "entryIds",
        "operationAddresses",
        "entryRange",
        "before",
        "after",
        "entryOffset",
        "textOffset",
        "maxChars",
        "maxEntries",
        "cwd",
    }
)
_SESSIONS_KEYS: Final = frozenset({"scope", "branches", "limit", "agent", "cwd"})


# ---------------------------------------------------------------------------- scalar checks


# Arguments that name files or folders: no path can hold a NUL byte, and the OS refuses one
# with a ValueError deep inside path resolution instead of an answer.
_PATH_KEYS: Final = ("session", "scope", "cwd")


def _check_keys(action: str, args: Mapping[str, Any], allowed: frozenset[str]) -> None:
    if not isinstance(args, Mapping):
        raise InvalidArgument(f"{action} arguments must be a JSON object")
    unknown = sorted(k for k in args if k not in allowed)
    if unknown:
        raise InvalidArgument(
            f"{action} does not accept {unknown[0]!r}; accepted arguments: "
            + ", ".join(sorted(allowed))
        )
    for key in _PATH_KEYS:
        value = args.get(key)
        if isinstance(value, str) and "\x00" in value:
            raise InvalidArgument(f"{action} {key} holds a NUL byte, which no path or id can")


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _opt_str(action: str, args: Mapping[str, Any], key: str, limit: int = 512) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value:
        raise InvalidArgument(f"{action} {key} must be a non-empty string")
    if len(value) > limit:
        raise InvalidArgument(f"{action} {key} is longer than {limit} characters")
    return value


def _choice(
    action: str, args: Mapping[str, Any], key: str, choices: tuple[str, ...], default: str | None
) -> str | None:
    value = args.get(key)
    if value is None:
        return default
    if value not in choices:
        raise InvalidArgument(f"{action} {key} must be one of {', '.join(choices)} (got {value!r})")
    assert isinstance(value, str)
    return value


def _int_in(
    action: str, args: Mapping[str, Any], key: str, low: int, high: int, default: int
) -> int:
    value = args.get(key)
    if value is None:
        return default
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not _is_int(value) or not low <= value <= high:
        raise InvalidArgument(f"{action} {key} must be an integer in {low}..{high} (got {value!r})")
    assert isinstance(value, int)
    return value


def _epoch_ms(action: str, args: Mapping[str, Any], key: str) -> int | None:
    value = args.get(key)
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():
        value = int(value)
    if not _is_int(value) or abs(value) > _SAFE_INT:
        raise InvalidArgument(f"{action} {key} must be epoch milliseconds (an integer)")
    assert isinstance(value, int)
    return value


def _branches(action: str, args: Mapping[str, Any]) -> str:
    value = _choice(action, args, "branches", BRANCH_MODES, "active")
    assert value is not None
    return value


def _hash(action: str, args: Mapping[str, Any], key: str) -> str | None:
    value = args.get(key)
    if value is None:
        return None
    if not isinstance(value, str) or not value or len(value) > 128:
        raise InvalidArgument(f"{action} {key} must be a hash string as issued in a call token")
    return value


def _cwd(action: str, args: Mapping[str, Any]) -> str | None:
    value = args.get("cwd")
    if value is None:
        return None
    if not isinstance(value, str) or not value.startswith("/"):
        raise InvalidArgument(f"{action} cwd must be an absolute directory path")
    return value


@dataclass(frozen=True, slots=True)
class RangeArg:
    """An ``entryRange`` as given: ``valid`` is False when it is not ``0 <= first <= last``."""

    first: Any
    last: Any

    @property
    def valid(self) -> bool:
        return (
            _is_int(self.first) and _is_int(self.last) and 0 <= self.first <= self.last <= _SAFE_INT
        )

    def to_args(self) -> dict[str, Any]:
        return {"first": self.first, "last": self.last}


def _range(action: str, args: Mapping[str, Any]) -> RangeArg | None:
    value = args.get("entryRange")
    if value is None:
        return None
    if not isinstance(value, Mapping):
        raise InvalidArgument(f"{action} entryRange must be an object {{first, last}}")
    extra = sorted(k for k in value if k not in ("first", "last"))
    if extra:
        raise InvalidArgument(f"{action} entryRange does not accept {extra[0]!r}")
    if ("first" in value) != ("last" in value) or "first" not in value:
        raise InvalidArgument(f"{action} entryRange requires both first and last")
    return RangeArg(value["first"], value["last"])


# ---------------------------------------------------------------------------------- filters


@dataclass(frozen=True, slots=True)
class Filters:
    """The exact structural filters (``agent`` is a scope restriction, not one of these)."""

    role: str | None = None
    tool: str | None = None
    ref: str | None = None
    provider: str | None = None
    action: str | None = None
    outcome: str | None = None
    since: int | None = None
    until: int | None = None
    # True: only subagents' entries; False: only the session's own; None ("any"): both
    sidechain: bool | None = None
    kind: str | None = None  # the tool family (``store.records.TOOL_FAMILIES``)

    @property
    def any(self) -> bool:
        return any(
            v is not None
            for v in (
                self.sidechain,
                self.role,
                self.tool,
                self.ref,
                self.provider,
                self.action,
                self.outcome,
                self.since,
                self.until,
                self.kind,
            )
        )

    @property
    def operational(self) -> bool:
        """A filter that explicitly asks for operations: provenance weights do not apply."""
        return any(
            v is not None
            for v in (self.tool, self.ref, self.provider, self.action, self.outcome, self.kind)
        )

    def exact(self) -> tuple[tuple[int, str | None], ...]:
        """(address field position, value) of every exact field filter; the sidechain filter
        is the address's sidechain mark, set (true) or unset (false)."""
        out: list[tuple[int, str | None]] = []
        for pos, value in (
            (3, self.role),
            (4, self.tool),
            (6, self.ref),
            (7, self.provider),
            (8, self.action),
            (9, self.outcome),
            (11, self.kind),
        ):
            if value is not None:
                out.append((pos, value))
        if self.sidechain is not None:
            out.append((12, SIDECHAIN if self.sidechain else None))
        return tuple(out)

    def matches(self, e: NormalizedEntry) -> bool:
        if self.sidechain is not None and e.sidechain != self.sidechain:
            return False
        if self.role is not None and e.role != self.role:
            return False
        if self.tool is not None and e.tool != self.tool:
            return False
        if self.ref is not None and e.ref != self.ref:
            return False
        if self.provider is not None and e.provider != self.provider:
            return False
        if self.action is not None and e.action != self.action:
            return False
        if self.outcome is not None and e.outcome != self.outcome:
            return False
        if self.kind is not None and e.family != self.kind:
            return False
        ts = e.timestamp
        if ts is not None:
            if self.since is not None and ts < self.since:
                return False
            if self.until is not None and ts > self.until:
                return False
        return True

    def to_args(self) -> dict[str, Any]:
        out: dict[str, Any] = {}
        for key, value in (
            ("role", self.role),
            ("tool", self.tool),
            ("ref", self.ref),
            ("provider", self.provider),
            ("action", self.action),
            ("outcome", self.outcome),
            ("kind", self.kind),
        ):
            if value is not None:
                out[key] = value
        if self.sidechain is not None:
            out["sidechain"] = self.sidechain
        return out


def _filters(action: str, args: Mapping[str, Any]) -> Filters:
    role = _choice(action, args, "role", ROLES, None)
    outcome = _choice(action, args, "outcome", OUTCOMES, None)
    return Filters(
        role=role,
        tool=_opt_str(action, args, "tool"),
        ref=_opt_str(action, args, "ref"),
        provider=_opt_str(action, args, "provider"),
        action=_opt_str(action, args, "action"),
        outcome=outcome,
        since=_epoch_ms(action, args, "since"),
        until=_epoch_ms(action, args, "until"),
        sidechain=_sidechain(action, args.get("sidechain")),
        kind=_choice(action, args, "kind", TOOL_FAMILIES, None),
    )


def _sidechain(action: str, value: Any) -> bool | None:
    """``sidechain``: true (subagents' entries only), false (the session's own), or "any"
    (the default: both)."""
    if value is None or value == "any":
        return None
    if isinstance(value, bool):
        return value
    raise InvalidArgument(f'{action} sidechain must be true, false or "any" (got {value!r})')


# ------------------------------------------------------------------------------------ scope


@dataclass(frozen=True, slots=True)
class Scope:
    """``kind`` is session, project, global or explicit (``session:<target>``)."""

    kind: str
    target: str | None = None

    @property
    def explicit(self) -> bool:
        return self.kind == "explicit"

    def to_arg(self) -> str:
        return f"session:{self.target}" if self.kind == "explicit" else self.kind


def parse_scope(action: str, value: Any) -> Scope:
    if value is None:
        return Scope("session")
    if not isinstance(value, str):
        raise InvalidArgument(f"{action} scope must be a string")
    text = value.strip()
    if text.startswith("session:"):
        target = text[len("session:") :].strip()
        if not target:
            raise InvalidArgument(f"{action} scope session: needs a session id or file path")
        return Scope("explicit", target)
    kind = SCOPE_ALIASES.get(text, text)
    if kind not in ("session", "project", "global"):
        raise InvalidArgument(
            f"{action} scope must be session, project, global or session:<id-or-path> "
            f"(got {value!r})"
        )
    return Scope(kind)


def _agent(action: str, args: Mapping[str, Any]) -> str | None:
    return _choice(action, args, "agent", AGENTS, None)


# ----------------------------------------------------------------------------------- recall


@dataclass(frozen=True, slots=True)
class RecallRequest:
    query: str | None
    mode: str
    match: str
    expected_source_hash: str | None
    expected_lineage_fingerprint: str | None
    branches: str
    scope: Scope
    offset: int
    page_size: int
    snippet_chars: int
    filters: Filters
    agent: str | None
    entry_range: RangeArg | None
    cwd: str | None
    offset_given: bool = False

    @property
    def browse(self) -> bool:
        """No query text: membership comes from filters alone."""
        return self.query is None or not self.query.strip()

    def canonical(self) -> dict[str, Any]:
        """The request as a continuation token's arguments (no ``offset``)."""
        out: dict[str, Any] = {}
        if self.query is not None:
            out["query"] = self.query
        out["queryMode"] = self.mode
        if self.mode == "literal":
            out["queryMatch"] = self.match
        if self.expected_source_hash is not None:
            out["expectedSourceHash"] = self.expected_source_hash
        if self.expected_lineage_fingerprint is not None:
            out["expectedLineageFingerprint"] = self.expected_lineage_fingerprint
        out["branches"] = self.branches
        out["scope"] = self.scope.to_arg()
        if self.cwd is not None and self.scope.kind in ("session", "project"):
            out["cwd"] = self.cwd
        out["pageSize"] = self.page_size
        out["snippetChars"] = self.snippet_chars
        out.update(self.filters.to_args())
        if self.agent is not None:
            out["agent"] = self.agent
        if self.filters.since is not None:
            out["since"] = self.filters.since
        if self.filters.until is not None:
            out["until"] = self.filters.until
        if self.entry_range is not None:
            out["entryRange"] = self.entry_range.to_args()
        return out


def parse_recall(args: Mapping[str, Any]) -> RecallRequest:
    action = "memory.recall"
    _check_keys(action, args, _RECALL_KEYS)
    query = args.get("query")
    if query is not None:
        if not isinstance(query, str):
            raise InvalidArgument(f"{action} query must be a string")
        if len(query) > QUERY_MAX_CHARS:
            raise InvalidArgument(f"{action} query is longer than {QUERY_MAX_CHARS} characters")
    mode = _choice(action, args, "queryMode", QUERY_MODES, "literal")
    assert mode is not None
    if args.get("queryMatch") is not None and mode != "literal":
        raise InvalidArgument(f"{action} queryMatch is only valid with literal queryMode")
    match = _choice(action, args, "queryMatch", QUERY_MATCHES, "any")
    assert match is not None
    scope = parse_scope(action, args.get("scope"))
    expected_source = _hash(action, args, "expectedSourceHash")
    expected_lineage = _hash(action, args, "expectedLineageFingerprint")
    if (expected_source is not None or expected_lineage is not None) and not scope.explicit:
        raise InvalidArgument(f"{action} integrity expectations require scope session:<id-or-path>")
    entry_range = _range(action, args)
    if entry_range is not None and not scope.explicit:
        raise InvalidArgument(f"{action} entryRange requires scope session:<id-or-path>")
    offset = args.get("offset")
    if offset is not None and (not _is_int(offset) or offset < 0):
        raise InvalidArgument(f"{action} offset must be a non-negative integer")
    return RecallRequest(
        query=query,
        mode=mode,
        match=match,
        expected_source_hash=expected_source,
        expected_lineage_fingerprint=expected_lineage,
        branches=_branches(action, args),
        scope=scope,
        offset=offset or 0,
        page_size=_int_in(action, args, "pageSize", 1, PAGE_SIZE_MAX, PAGE_SIZE_DEFAULT),
        snippet_chars=_int_in(
            action, args, "snippetChars", SNIPPET_MIN, SNIPPET_MAX, SNIPPET_DEFAULT
        ),
        filters=_filters(action, args),
        agent=_agent(action, args),
        entry_range=entry_range,
        cwd=_cwd(action, args),
        offset_given=offset is not None,
    )


# ----------------------------------------------------------------------------------- expand


@dataclass(frozen=True, slots=True)
class ExpandRequest:
    session: str
    expected_source_hash: str | None
    expected_lineage_fingerprint: str | None
    branches: str
    indices: tuple[int, ...]
    indices_valid: bool
    entry_ids: tuple[str, ...]
    operation_addresses: tuple[str, ...]
    entry_range: RangeArg | None
    before: int
    after: int
    entry_offset: int
    text_offset: int
    max_chars: int
    max_entries: int
    cwd: str | None = None
    selection_args: dict[str, Any] = field(default_factory=dict)

    @property
    def has_selector(self) -> bool:
        return bool(self.indices or self.entry_ids or self.operation_addresses or self.entry_range)


def _address_list(action: str, args: Mapping[str, Any], key: str) -> tuple[str, ...]:
    value = args.get(key)
    if value is None:
        return ()
    if not isinstance(value, list) or not all(isinstance(v, str) and v for v in value):
        raise InvalidArgument(f"{action} {key} must be an array of non-empty strings")
    for v in value:
        if len(v) > ADDRESS_MAX_CHARS:
            raise InvalidArgument(f"{action} {key} items are at most {ADDRESS_MAX_CHARS} chars")
    return tuple(value)


def parse_expand(args: Mapping[str, Any]) -> ExpandRequest:
    action = "memory.expand"
    _check_keys(action, args, _EXPAND_KEYS)
    session = args.get("session")
    if not isinstance(session, str) or not session.strip():
        raise InvalidArgument(f"{action} requires a session (a file path or a session id)")
    raw_indices = args.get("indices")
    if raw_indices is not None and not isinstance(raw_indices, list):
        raise InvalidArgument(f"{action} indices must be an array of entry indices")
    indices = tuple(raw_indices or ())
    indices_valid = all(_is_int(i) and 0 <= i <= _SAFE_INT for i in indices)
    entry_ids = _address_list(action, args, "entryIds")
    operation_addresses = _address_list(action, args, "operationAddresses")
    if len(indices) + len(entry_ids) + len(operation_addresses) > EXPAND_MAX_SELECTORS:
        raise InvalidArgument(
            f"{action} accepts at most {EXPAND_MAX_SELECTORS} exact selectors per call"
        )
    selection: dict[str, Any] = {}
    if indices:
        selection["indices"] = list(indices)
    if entry_ids:
        selection["entryIds"] = list(entry_ids)
    if operation_addresses:
        selection["operationAddresses"] = list(operation_addresses)
    entry_range = _range(action, args)
    if entry_range is not None:
        selection["entryRange"] = entry_range.to_args()
    return ExpandRequest(
        session=session.strip(),
        expected_source_hash=_hash(action, args, "expectedSourceHash"),
        expected_lineage_fingerprint=_hash(action, args, "expectedLineageFingerprint"),
        branches=_branches(action, args),
        indices=tuple(int(i) for i in indices) if indices_valid else (),
        indices_valid=indices_valid,
        entry_ids=entry_ids,
        operation_addresses=operation_addresses,
        entry_range=entry_range,
        before=_int_in(action, args, "before", 0, EXPAND_MAX_CONTEXT, 0),
        after=_int_in(action, args, "after", 0, EXPAND_MAX_CONTEXT, 0),
        entry_offset=_int_in(action, args, "entryOffset", 0, _SAFE_INT, 0),
        text_offset=_int_in(action, args, "textOffset", 0, _SAFE_INT, 0),
        max_chars=_int_in(
            action, args, "maxChars", EXPAND_MIN_CHARS, EXPAND_MAX_CHARS, EXPAND_DEFAULT_CHARS
        ),
        max_entries=_int_in(
            action, args, "maxEntries", 1, EXPAND_MAX_ENTRIES, EXPAND_DEFAULT_ENTRIES
        ),
        cwd=_cwd(action, args),
        selection_args=selection,
    )


# --------------------------------------------------------------------------------- sessions


@dataclass(frozen=True, slots=True)
class SessionsRequest:
    scope: Scope
    branches: str
    limit: int
    agent: str | None
    cwd: str | None


def parse_sessions(
    args: Mapping[str, Any], *, default_limit: int = SESSIONS_MAX
) -> SessionsRequest:
    action = "memory.sessions"
    _check_keys(action, args, _SESSIONS_KEYS)
    return SessionsRequest(
        scope=parse_scope(action, args.get("scope")),
        branches=_branches(action, args),
        limit=_int_in(action, args, "limit", 1, SESSIONS_MAX, min(default_limit, SESSIONS_MAX)),
        agent=_agent(action, args),
        cwd=_cwd(action, args),
    )
