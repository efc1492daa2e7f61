"""The Codex CLI adapter (``source``) and normalizer (``normalize``)."""
