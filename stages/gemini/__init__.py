"""Gemini CLI (``@google/gemini-cli``) and the Gemini API content shapes Qwen Code shares."""
