"""pipeline.preload: importing it loads what a child would otherwise load on its first session."""

from __future__ import annotations

import subprocess
import sys

from store.agents import agent_names

_PROBE = """
import sys
import pipeline.preload
from stages.policy import Policy
from stages.redaction import policy_redactor
from store.redact import _redactor
names = sorted(m for m in sys.modules if m.split(".")[::2] == ["stages", "adapter"])
print(",".join(names))
print(_redactor.cache_info().currsize)
policy_redactor(Policy())  # what an index worker asks for: the rules preload built
print(_redactor.cache_info().currsize)
"""


def test_importing_preload_loads_every_adapter_and_the_default_credential_rules() -> None:
    # a fresh interpreter: this one has loaded both long before, whatever preload does
    out = subprocess.run(
        [sys.executable, "-c", _PROBE], capture_output=True, text=True, check=True
    ).stdout.split("\n")
    assert out[0].split(",") == sorted(f"stages.{name}.adapter" for name in agent_names())
    assert int(out[1]) == 1
    assert int(out[2]) == 1
