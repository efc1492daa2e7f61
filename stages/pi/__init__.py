"""The Pi coding agent's session format (``~/.pi/agent/sessions``)."""

from stages.pi.source import derived_id, read_pi, v1_entry_id

__all__ = ["derived_id", "read_pi", "v1_entry_id"]
