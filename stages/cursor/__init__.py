"""The Cursor agent adapter (``cursor-agent`` / the Cursor IDE's agent): its JSONL agent
transcripts (``source``, ``normalize``, ``tools``; registered by ``adapter``)."""
