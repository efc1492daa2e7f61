"""What the supervisor loads once, before it forks an index worker or the publisher
(``pipeline.supervisor``; the watcher needs none of it), and a catch-up before it forks its
pool's workers (``pipeline.pool``).

A child would otherwise pay for these on its first session, so the first append after
start-up waited on them (issue 22 item 11): each agent's adapter modules, imported on first
use, and the credential rules, parsed and compiled on first use. Importing this module warms
them; ``warm`` again in a child adds only what its config needs beyond the default.
"""

from __future__ import annotations

from stages.agents import adapters
from stages.policy import Policy
from stages.redaction import policy_redactor
from store.redact import redactor

__all__ = ["warm"]


def warm(policy: Policy | None = None) -> None:
    adapters()
    redactor()  # the default rule set, which cutting long tool arguments always uses
    if policy is not None:
        policy_redactor(policy)  # a config that disables rules has a rule set of its own


warm()
