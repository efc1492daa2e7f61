"""Coverage reasons, defined once for both commands.

A reason names a gap that can hide an answer: on a session's records and summaries (the
stages), on a skipped file and in `pipeline status` (the pipeline), in an answer's
``coverage.reasons`` (the query side). Both sides may import store, so the one table lives
here, as ``store.exits`` holds the exit codes. ``REASONS`` maps each to its group, the table of
``ops/runbook.md`` §5 that explains it; ``tests/unit/store/test_reasons.py`` holds the two to
each other and finds no reason spelled as a literal anywhere else in the product.
"""

from __future__ import annotations

from typing import Final

__all__ = [
    "ARCHIVE_FULL",
    "BRIDGED_PARENT",
    "CANDIDATE_DIGEST_BUDGET",
    "CANDIDATE_ENTRY_BUDGET",
    "CANDIDATE_ITEM_BUDGET",
    "COLD_ALL_TERMS_REQUIRES_HYDRATION",
    "COLD_PHRASE_REQUIRES_HYDRATION",
    "COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION",
    "DANGLING_PARENT",
    "DISK_FULL",
    "DUPLICATE_BRANCH_FACT_ADDRESS",
    "DUPLICATE_ENTRY_ID",
    "DUPLICATE_OPERATION_ADDRESS",
    "FILES",
    "INDEX_ERROR",
    "INVALID_PARENT_GRAPH",
    "INVALID_REGEX",
    "LIMITS",
    "MALFORMED_LINE",
    "MAX_COLD_CACHE_BYTES",
    "MAX_COLD_VOCABULARY_BYTES",
    "MAX_ENTRY_CHARS",
    "MAX_SYNC_SESSIONS",
    "MAX_SYNC_SOURCE_BYTES",
    "MISSING_SESSION_HEADER",
    "NO_ENTRIES",
    "OVERSIZED_FILE",
    "OVERSIZED_LINE",
    "PARTIAL_LINE",
    "PREFIX_EXPANSION_LIMIT",
    "QUERY",
    "READ_NOTES",
    "REASONS",
    "RECORD_REASONS",
    "REGEX_MAX_HAYSTACK_BYTES",
    "REGEX_MAX_HAYSTACK_TERMS",
    "REGEX_PATTERN_TOO_LARGE",
    "REGEX_TIMEOUT",
    "REGEX_WORKER_ERROR",
    "REPAIRED_LINE",
    "SOURCE_UNAVAILABLE",
    "SOURCE_UNREADABLE",
    "STALE_SESSION",
    "UNKNOWN_RECORD_TYPE",
    "UNTERMINATED_LINE",
]

# -- reading and parsing the session files (`pipeline status` lists them per session) --------
MALFORMED_LINE: Final = "malformed_line"
MISSING_SESSION_HEADER: Final = "missing_session_header"
REPAIRED_LINE: Final = "repaired_line"
# The last line has no newline yet and the file was written to moments ago: it waits for its
# newline (or for the file to settle, when it is read as a line like any other).
PARTIAL_LINE: Final = "partial_line"
# The last line of a file untouched for a while has no newline and holds no JSON object.
UNTERMINATED_LINE: Final = "unterminated_line"
# A line too long to read, or holding too many concatenated objects (a hostile file).
OVERSIZED_LINE: Final = "oversized_line"
# A session file larger than ``[sources] maxFileBytes``: not read at all (reading it whole
# would cost that much memory); the session is skipped, named, until it is back under.
OVERSIZED_FILE: Final = "oversized_file"
BRIDGED_PARENT: Final = "bridged_parent"
DANGLING_PARENT: Final = "dangling_parent"
INVALID_PARENT_GRAPH: Final = "invalid_parent_graph"
DUPLICATE_ENTRY_ID: Final = "duplicate_entry_id"
DUPLICATE_OPERATION_ADDRESS: Final = "duplicate_operation_address"
DUPLICATE_BRANCH_FACT_ADDRESS: Final = "duplicate_branch_fact_address"
SOURCE_UNAVAILABLE: Final = "source_unavailable"
# A folder under a root that cannot be listed: whatever sessions it holds are out of reach.
SOURCE_UNREADABLE: Final = "source_unreadable"
# The index's disk was full: no fault of the session's (also a worker's state), never published.
DISK_FULL: Final = "disk_full"
INDEX_ERROR: Final = "index_error"
UNKNOWN_RECORD_TYPE: Final = "unknown_record_type"
NO_ENTRIES: Final = "no_entries"
STALE_SESSION: Final = "stale_session"
# The session's file is gone and the archive's copy stopped short of it: the cap was reached.
ARCHIVE_FULL: Final = "archive_full"

# -- size limits of the records and of an indexing pass (each names its [memory] key) --------
# The stored display text was cut to maxEntryChars; postings and vocabularies cover the whole
# text, so it hides nothing from a literal recall (there it is a coverage *note*).
MAX_ENTRY_CHARS: Final = "max_entry_chars"
MAX_COLD_VOCABULARY_BYTES: Final = "max_cold_vocabulary_bytes"
MAX_COLD_CACHE_BYTES: Final = "max_cold_cache_bytes"
MAX_SYNC_SESSIONS: Final = "max_sync_sessions"
MAX_SYNC_SOURCE_BYTES: Final = "max_sync_source_bytes"

# -- one query's execution --------------------------------------------------------------------
CANDIDATE_ENTRY_BUDGET: Final = "candidate_entry_budget"
CANDIDATE_DIGEST_BUDGET: Final = "candidate_digest_budget"
CANDIDATE_ITEM_BUDGET: Final = "candidate_item_budget"
COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION: Final = "cold_structural_filter_requires_hydration"
COLD_PHRASE_REQUIRES_HYDRATION: Final = "cold_phrase_requires_hydration"
COLD_ALL_TERMS_REQUIRES_HYDRATION: Final = "cold_all_terms_requires_hydration"
REGEX_MAX_HAYSTACK_TERMS: Final = "regex_max_haystack_terms"
REGEX_MAX_HAYSTACK_BYTES: Final = "regex_max_haystack_bytes"
PREFIX_EXPANSION_LIMIT: Final = "prefix_expansion_limit"
INVALID_REGEX: Final = "invalid_regex"
REGEX_PATTERN_TOO_LARGE: Final = "regex_pattern_too_large"
REGEX_TIMEOUT: Final = "regex_timeout"
REGEX_WORKER_ERROR: Final = "regex_worker_error"

# The groups, as the headings of ops/runbook.md §5 name them.
FILES: Final = "Reading and parsing the session files"
LIMITS: Final = "Size limits of the records"
QUERY: Final = "One query's execution"

REASONS: Final[dict[str, str]] = {
    **dict.fromkeys(
        (
            MALFORMED_LINE,
            MISSING_SESSION_HEADER,
            REPAIRED_LINE,
            PARTIAL_LINE,
            UNTERMINATED_LINE,
            OVERSIZED_LINE,
            OVERSIZED_FILE,
            BRIDGED_PARENT,
            DANGLING_PARENT,
            INVALID_PARENT_GRAPH,
            DUPLICATE_ENTRY_ID,
            DUPLICATE_OPERATION_ADDRESS,
            DUPLICATE_BRANCH_FACT_ADDRESS,
            SOURCE_UNAVAILABLE,
            SOURCE_UNREADABLE,
            DISK_FULL,
            INDEX_ERROR,
            UNKNOWN_RECORD_TYPE,
            NO_ENTRIES,
            STALE_SESSION,
            ARCHIVE_FULL,
        ),
        FILES,
    ),
    **dict.fromkeys(
        (
            MAX_ENTRY_CHARS,
            MAX_COLD_VOCABULARY_BYTES,
            MAX_COLD_CACHE_BYTES,
            MAX_SYNC_SESSIONS,
            MAX_SYNC_SOURCE_BYTES,
        ),
        LIMITS,
    ),
    **dict.fromkeys(
        (
            CANDIDATE_ENTRY_BUDGET,
            CANDIDATE_DIGEST_BUDGET,
            CANDIDATE_ITEM_BUDGET,
            COLD_STRUCTURAL_FILTER_REQUIRES_HYDRATION,
            COLD_PHRASE_REQUIRES_HYDRATION,
            COLD_ALL_TERMS_REQUIRES_HYDRATION,
            REGEX_MAX_HAYSTACK_TERMS,
            REGEX_MAX_HAYSTACK_BYTES,
            PREFIX_EXPANSION_LIMIT,
            INVALID_REGEX,
            REGEX_PATTERN_TOO_LARGE,
            REGEX_TIMEOUT,
            REGEX_WORKER_ERROR,
        ),
        QUERY,
    ),
}

# Reasons a record adds on top of lineage and normalization (the display cut, the digest caps).
RECORD_REASONS: Final = frozenset(
    {MAX_ENTRY_CHARS, MAX_COLD_VOCABULARY_BYTES, MAX_COLD_CACHE_BYTES}
)

# How a session was read, never a gap in it: a repaired line is indexed whole, a bridged parent
# keeps the conversation on its path (the lost line itself is ``malformed_line``), and a file
# with no conversation holds nothing to find (types the adapter does not know add
# ``unknown_record_type``). Answers and ``pipeline status`` report them as notes, apart from
# the reasons that can hide an answer (issue 20: coverage that cries wolf is not believed).
READ_NOTES: Final = frozenset({REPAIRED_LINE, BRIDGED_PARENT, NO_ENTRIES})
