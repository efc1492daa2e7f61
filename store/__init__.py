"""Bytes on disk: record types, the codec, atomic writes, layout and generation snapshots."""
