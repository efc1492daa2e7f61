"""The normalize stage's result type (shared by the per-agent normalizers)."""

from __future__ import annotations

from dataclasses import dataclass

from store.records import NormalizedEntry

__all__ = ["NormalizeResult"]


@dataclass(frozen=True, slots=True)
class NormalizeResult:
    """Entries with *complete* text (display truncation happens in digest) and the
    normalization coverage reasons (``duplicate_entry_id``, ``duplicate_operation_address``,
    ``duplicate_branch_fact_address``, …), sorted and unique."""

    entries: tuple[NormalizedEntry, ...]
    reasons: tuple[str, ...] = ()
