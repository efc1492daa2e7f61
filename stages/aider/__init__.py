"""The Aider adapter (``aider-chat``): ``.aider.chat.history.md`` in project folders
(``history``, ``source``, ``normalize``, ``tools``; registered by ``adapter``)."""
