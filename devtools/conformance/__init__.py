"""ops/conformance: run the conformance suite pinned, or pinned and latest with a comparison."""
