"""Settings every test module shares."""

from __future__ import annotations

from hypothesis import settings

# Hypothesis fails an example that runs past 200 ms (and calls a slow re-run "flaky"), a
# clock no test may depend on: a machine loaded by other builds stalls any example that long.
# Speed is measured in ops/bench, never here; a profile applied to every property test keeps
# a new one from forgetting.
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")
