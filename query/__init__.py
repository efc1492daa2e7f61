"""sessiondex read side: snapshot loading, recall, expand, sessions, and the `query` CLI."""
