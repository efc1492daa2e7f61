"""Pure transformations: parse, lineage, normalize, tier, digest, and per-agent adapters."""
