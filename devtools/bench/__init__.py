"""``ops/bench``: measure sessiondex next to what a user would pick instead (see cli.py)."""
