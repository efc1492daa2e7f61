"""The indexing policy: every setting that changes what a record holds."""

from __future__ import annotations

from dataclasses import dataclass

from store.redact import RULESET
from store.tokens import TOKENIZER_VERSION

__all__ = ["DERIVATION", "RANK_STATS_VERSION", "Policy"]


# What the stages make of the same lines and policy; bump it whenever a stage's output for the
# same bytes changes (entries, fields, identities, titles, outcomes, an adapter's reading), so
# records built before are derived again rather than reused: `pipeline run` derives every
# index built under another value by itself (pipeline.upgrade). Without a bump an existing
# index keeps the old output for every unchanged file, silently.
# tests/unit/pipeline/test_derivation_golden.py fails when the output over the fixtures moves
# and this does not (README "For contributors").
# 3: repaired lines, bridged parents and subagent marks; MCP identities, tool families,
# drift counts and context edits.
# 4: cold addresses mark a subagent's entries (the sidechain filter answers from a digest).
# 5: session titles (SessionState.title), omp outcomes, adapters' readings changed under 4
# with no bump (3 fixture sessions' records moved: test_derivation_golden).
DERIVATION = 5
# What the records' ranking statistics mean (store.rankstats); a new one re-derives every index.
# 3: a long entry's postings hold the segments of it each term occurs in (passages).
RANK_STATS_VERSION = 3


@dataclass(frozen=True, slots=True)
class Policy:
    max_entry_chars: int = 2000
    index_thinking: bool = False
    index_tool_output: bool = True
    max_cold_vocabulary_bytes: int = 524_288
    max_cold_cache_bytes: int = 1_048_576
    redact: bool = True
    redact_disabled: tuple[str, ...] = ()
    # Not in the fingerprint: it decides whether a file is read at all, never what a record
    # built from it holds (a file over it is skipped, named ``oversized_file``, not stored).
    max_file_bytes: int = 256 << 20

    def fingerprint(self) -> str:
        """A stable string naming this policy; records built under another are rebuilt."""
        return (
            f"entry:{self.max_entry_chars};thinking:{str(self.index_thinking).lower()};"
            f"tool-output:{str(self.index_tool_output).lower()};"
            f"vocab:{self.max_cold_vocabulary_bytes};cache:{self.max_cold_cache_bytes};"
            f"derivation:{DERIVATION};rank:{RANK_STATS_VERSION};redact:{self.redaction};"
            f"tokens:{TOKENIZER_VERSION}"
        )

    @property
    def redaction(self) -> str:
        """The rule set records are redacted with (its version and disabled rules), or off."""
        if not self.redact:
            return "off"
        off = sorted(set(self.redact_disabled))
        return RULESET + ("-" + ",".join(off) if off else "")
