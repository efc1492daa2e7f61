"""A deterministic, realistic corpus of Pi, Claude Code and Codex session files.

``generate(out, sessions=…, mean_kb=…, seed=…, agents=…)`` writes ``out/pi``, ``out/claude``
and ``out/codex`` (each laid out like the agent's own session root) plus ``out/corpus.json``,
the ``CorpusManifest`` that says where every planted term, malformed line, tool error, Fabric
trace and branch summary sits. One ``random.Random(seed)`` drives everything (no clock, no
``uuid4``): the same arguments give byte-identical files with identical mtimes.

Modules: ``words`` (lexicon and text), ``project`` (cwds, files), ``tools`` (agent-neutral tool
calls), ``draft`` (a file being assembled; term planting), ``fabric`` (trace and branch-summary
payloads), ``pi`` / ``claude`` / ``codex`` (one builder per format), ``plan`` and ``generate``
(the corpus), ``manifest`` (``corpus.json``), ``cli`` (``python -m devtools.corpus``).
"""

from devtools.corpus.cli import main
from devtools.corpus.generate import AGENTS, generate
from devtools.corpus.manifest import CorpusManifest, load_manifest

__all__ = ["AGENTS", "CorpusManifest", "generate", "load_manifest", "main"]
