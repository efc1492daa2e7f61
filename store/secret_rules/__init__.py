"""Rule files for ``store.redact``: gitleaks' default collection, as gitleaks ships it (MIT,
see ``LICENSE.gitleaks``), and sessiondex's own few rules in the same format."""
