"""The GitHub Copilot CLI adapter (``@github/copilot``): typed session events
(``source``, ``normalize``, ``tools``; registered by ``adapter``)."""
