"""The indexing policy: every setting that changes what a record holds."""

from __future__ import annotations

from dataclasses import dataclass

from store.tokens import TOKENIZER_VERSION

__all__ = ["Policy"]


@dataclass(frozen=True, slots=True)
class Policy:
    max_entry_chars: int = 2000
    index_thinking: bool = False
    index_tool_output: bool = True
    max_cold_vocabulary_bytes: int = 524_288
    max_cold_cache_bytes: int = 1_048_576

    def fingerprint(self) -> str:
        """A stable string naming this policy; records built under another are rebuilt."""
        return (
            f"entry:{self.max_entry_chars};thinking:{str(self.index_thinking).lower()};"
            f"tool-output:{str(self.index_tool_output).lower()};"
            f"vocab:{self.max_cold_vocabulary_bytes};cache:{self.max_cold_cache_bytes};"
            f"tokens:{TOKENIZER_VERSION}"
        )
