"""A test-only agent, "toy": proves that an adapter is its folder plus one registry line.

``tests/integration/test_new_adapter.py`` copies the source tree, puts this folder at
``stages/toy/`` and adds the line ``"toy",`` to ``store/agents.py``, and nothing
else; then the pipeline indexes toy sessions and every query command reads them.
"""
