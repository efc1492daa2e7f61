"""Qwen Code (``@qwen-code/qwen-code``): Gemini's content shapes in a uuid-threaded JSONL."""
