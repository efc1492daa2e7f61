"""The normalize stage's last step: credentials out of every entry before anything is stored.

One choke point for every agent (``stages.normalize`` calls ``redact_entries`` on what the
agent normalizer made), so hot text, snippets, cold vocabularies, lexicons and expand all
see the placeholder, and no adapter can forget it. What is redacted: the entry's text and
every string inside its structured ``operation`` and ``branch_fact`` (tool arguments and
results) and its ``files_touched``. The findings, kind and masked fingerprint only, go in
``NormalizedEntry.redactions``, text first, in order; the values themselves go nowhere.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from stages.normalized import EntryMemo
from stages.policy import Policy
from store.records import NormalizedEntry
from store.redact import Finding, Redactor, redactor

__all__ = ["policy_redactor", "redact_entries", "redact_entry"]


def policy_redactor(policy: Policy) -> Redactor | None:
    """The redactor *policy* builds under (one per process and rule set), or None when it
    does not redact."""
    if not policy.redact:
        return None
    return redactor(policy.redact_disabled)


def redact_entries(
    entries: tuple[NormalizedEntry, ...], policy: Policy, memo: EntryMemo | None
) -> tuple[NormalizedEntry, ...]:
    """*entries* with credentials replaced; an entry without any is returned as it is. With
    a memo, an entry seen before is not scanned again (the append path rescans nothing)."""
    r = policy_redactor(policy)
    if r is None:
        return entries
    if memo is None:
        return tuple(redact_entry(e, r) for e in entries)
    return tuple(memo.derived(e, lambda e: redact_entry(e, r, memo)) for e in entries)


def redact_entry(
    entry: NormalizedEntry, r: Redactor, memo: EntryMemo | None = None
) -> NormalizedEntry:
    """*entry* with credentials replaced (itself when it holds none); its text is scanned
    once per *memo* that keeps texts (``EntryMemo.text``)."""
    found: list[Finding] = []
    text, in_text = r.redact(entry.text) if memo is None else memo.text(entry.text, r.redact)
    found.extend(in_text)
    operation = _walk(entry.operation, r, found)
    branch_fact = _walk(entry.branch_fact, r, found)
    files = tuple(_walk(f, r, found) for f in entry.files_touched)
    if not found:
        return entry
    return replace(
        entry,
        text=text,
        operation=operation,
        branch_fact=branch_fact,
        files_touched=files,
        redactions=entry.redactions + tuple((f.kind, f.fingerprint) for f in found),
    )


def _walk(value: Any, r: Redactor, found: list[Finding]) -> Any:
    if isinstance(value, str):
        text, more = r.redact(value)
        found.extend(more)
        return text
    if isinstance(value, dict):
        return {k: _walk(v, r, found) for k, v in value.items()}
    if isinstance(value, list):
        return [_walk(v, r, found) for v in value]
    return value
