"""The Claude Code adapter (``source``) and normalizer (``normalize``)."""
