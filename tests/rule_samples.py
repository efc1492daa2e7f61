"""One planted credential per shipped redaction rule, checked against gitleaks' own engine.

Each rule's regex is written for RE2 (gitleaks is Go); ``store.redact`` runs it through
Python's ``re`` after ``translate``. A sample is made from the rule's regex, as ``re`` parses
it, with a seeded generator, and kept only when the *original* regex under real RE2
(google-re2) finds the same secret in it, the secret holds one of the rule's keywords where
gitleaks needs one, its entropy reaches the rule's bound and no allowlist takes it: what
gitleaks itself would report. A translation that changes what a rule means (a POSIX class
``[[:alnum:]]`` that ``re`` reads as a set of punctuation, a flag group ``re`` scopes
differently) yields no such sample, or one the redactor then misses; either fails a test.
"""

from __future__ import annotations

import math
import random
import re
import string
import tomllib
import warnings
from collections import Counter
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from importlib import resources
from re import _constants as C  # noqa: N812
from re import _parser
from typing import Any

import re2

__all__ = ["RULE_FILES", "RuleSample", "context_texts", "raw_rules", "rule_samples"]

RULE_FILES = ("gitleaks.toml", "sessiondex.toml")
_PRINTABLE = [chr(c) for c in range(33, 127)]
_ALNUM = set(string.ascii_letters + string.digits)


@dataclass(frozen=True, slots=True)
class RuleSample:
    rule_id: str
    kind: str
    match: str  # what is planted: the whole regex match
    secret: str  # the part gitleaks reports (``secretGroup``)
    # A keyword said before the match when the match holds none (gitleaks runs a rule only
    # on text holding one of its keywords: "facebook" near a bare Facebook token).
    hint: str = ""


def raw_rules() -> list[dict[str, Any]]:
    """Every rule of the shipped rule files, as the files spell it (RE2 syntax)."""
    out: list[dict[str, Any]] = []
    for name in RULE_FILES:
        text = resources.files("store.secret_rules").joinpath(name).read_text()
        out.extend(tomllib.loads(text).get("rules", ()))
    return out


def _class_chars(items: list[tuple[Any, Any]]) -> list[str]:
    negate = False
    allowed: set[str] = set()
    for op, av in items:
        if op is C.NEGATE:
            negate = True
        elif op is C.LITERAL:
            allowed.add(chr(av))
        elif op is C.RANGE:
            allowed.update(chr(c) for c in range(av[0], av[1] + 1) if 32 <= c < 127)
        elif op is C.CATEGORY:
            allowed.update(_category(av))
    chars = [c for c in _PRINTABLE if (c in allowed) != negate]
    if not negate and " " in allowed:
        chars.append(" ")
    return chars


def _category(cat: Any) -> set[str]:
    probe = {
        C.CATEGORY_DIGIT: r"\d",
        C.CATEGORY_NOT_DIGIT: r"\D",
        C.CATEGORY_SPACE: r"\s",
        C.CATEGORY_NOT_SPACE: r"\S",
        C.CATEGORY_WORD: r"\w",
        C.CATEGORY_NOT_WORD: r"\W",
    }[cat]
    regex = re.compile(probe, re.ASCII)
    return {chr(c) for c in range(9, 127) if regex.fullmatch(chr(c))}


class _Gen:
    def __init__(self, rng: random.Random, stretch: int) -> None:
        self.rng = rng
        self.stretch = stretch

    def pick(self, chars: list[str]) -> str:
        if not chars:
            raise ValueError("empty class")
        nice = [c for c in chars if c in _ALNUM]
        if nice and self.rng.random() < 0.9:
            return self.rng.choice(nice)
        return self.rng.choice(chars)

    def seq(self, items: Any) -> str:
        return "".join(self.node(op, av) for op, av in items)

    def node(self, op: Any, av: Any) -> str:
        if op is C.LITERAL:
            return chr(av)
        if op is C.NOT_LITERAL:
            return self.pick([c for c in _PRINTABLE if c != chr(av)])
        if op is C.ANY:
            # Mostly a dot: the rules write "hooks.slack.com" and mean the dot.
            return "." if self.rng.random() < 0.8 else self.pick(_PRINTABLE)
        if op is C.IN:
            return self.pick(_class_chars(av))
        if op is C.BRANCH:
            return self.seq(self.rng.choice(av[1]))
        if op is C.SUBPATTERN:
            return self.seq(av[3])
        if op in (C.MAX_REPEAT, C.MIN_REPEAT, C.POSSESSIVE_REPEAT):
            lo, hi, body = av
            if op is C.MIN_REPEAT or lo == hi:
                n = lo
            elif hi == C.MAXREPEAT:
                n = lo + self.rng.randint(0, self.stretch)
            else:
                n = self.rng.randint(lo, min(hi, lo + max(self.stretch, 1)))
                if self._spacey(body):
                    n = min(n, lo + 1)  # a run of blanks rather than none or many
            return "".join(self.seq(body) for _ in range(n))
        if op in (C.AT, C.ASSERT, C.ASSERT_NOT):
            return ""
        raise ValueError(f"cannot generate {op}")

    def _spacey(self, body: Any) -> bool:
        return any(
            op is C.IN
            and any(a is C.CATEGORY and v is C.CATEGORY_SPACE for a, v in av)
            and not any(a is C.NEGATE for a, _ in av)
            for op, av in body
        )


def _shannon(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def _allowed(rule: dict[str, Any], secret: str, match: str, line: str) -> bool:
    """gitleaks' allowlist semantics, with its RE2 regexes run by RE2."""
    for a in rule.get("allowlists", ()):
        if a.get("paths") or a.get("commits"):
            continue
        target = {"match": match, "line": line}.get(a.get("regexTarget", "secret"), secret)
        hit_re = any(re2.search(r, target) for r in a.get("regexes", ())) or None
        if not a.get("regexes"):
            hit_re = None
        stops = [s.lower() for s in a.get("stopwords", ())]
        hit_sw = any(s in secret.lower() for s in stops) if stops else None
        if a.get("condition", "OR") == "AND":
            if hit_re is not False and hit_sw is not False and (hit_re or hit_sw):
                return True
        elif hit_re or hit_sw:
            return True
    return False


def _global_allowed(secret: str, match: str, line: str) -> bool:
    text = resources.files("store.secret_rules").joinpath("gitleaks.toml").read_text()
    glob = tomllib.loads(text).get("allowlist")
    return bool(glob) and _allowed({"allowlists": [glob]}, secret, match, line)


def _secret_of(m: Any, group: int) -> str | None:
    if group:
        return m.group(group) or None
    for g in range(1, m.re.groups + 1):
        if m.group(g):
            return str(m.group(g))
    return str(m.group(0)) or None


def gitleaks_finds(rule: dict[str, Any], text: str, secret: str) -> bool:
    """Whether gitleaks (RE2, entropy, keywords, allowlists) reports *secret* in *text*."""
    if not any(k.lower() in text.lower() for k in rule.get("keywords", ())):
        return False
    for m in re2.finditer(rule["regex"], text):
        got = _secret_of(m, int(rule.get("secretGroup", 0)))
        if len(secret) > len(got or "") and m.group(0) == secret:
            got = secret  # the whole match stands for a fragment group (see rule_samples)
        if got is None or secret.strip() not in got:
            continue  # a rule whose value runs on (an unterminated key) takes what follows too
        if _shannon(got) < float(rule.get("entropy", 0.0)):
            continue
        line_lo = text.rfind("\n", 0, m.start()) + 1
        line_hi = text.find("\n", m.end())
        line = text[line_lo : line_hi if line_hi >= 0 else len(text)]
        if _allowed(rule, got, m.group(0), line) or _global_allowed(got, m.group(0), line):
            continue
        return True
    return False


def _parse(pattern: str) -> Any:
    from store.redact import translate

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", FutureWarning)
        return _parser.parse(translate(pattern), re.ASCII)


def _candidates(rule: dict[str, Any]) -> Iterator[str]:
    parsed = _parse(rule["regex"])
    rng = random.Random(rule["id"])
    for attempt in range(_TRIES):
        try:
            yield _Gen(rng, stretch=4 + attempt % 40).seq(parsed)
        except ValueError:
            continue


_TRIES = 400


@cache
def rule_samples() -> dict[str, RuleSample | None]:
    """rule id → a sample gitleaks itself reports in every context of ``context_texts``, or
    ``None`` when none was made (a rule whose translated regex no longer says what RE2 says
    gives none)."""
    out: dict[str, RuleSample | None] = {}
    for rule in raw_rules():
        if "regex" not in rule or not rule.get("keywords"):
            continue
        kind = rule.get("kind", rule["id"].replace("-", "_"))
        found: RuleSample | None = None
        keywords = [k.lower() for k in rule["keywords"]]
        for candidate in _candidates(rule):
            if "\\" in candidate:
                continue  # an escape the regex allows ("\\n" ending a value), not a credential
            match = re2.search(rule["regex"], f" {candidate} ")
            if match is None:
                continue
            secret = _secret_of(match, int(rule.get("secretGroup", 0)))
            if secret is not None and len(secret) < 6 and not rule.get("secretGroup"):
                # gitleaks reports the first group that took part: in a Teams webhook URL one
                # repetition of "([a-z0-9]{4}-){3}". The credential is the whole URL.
                secret = match.group(0).strip()
            if secret is None or len(secret) < 6:
                continue
            hint = "" if any(k in candidate.lower() for k in keywords) else keywords[0]
            sample = RuleSample(rule["id"], kind, candidate, secret, hint)
            # In arguments gitleaks would read the raw argument string, not its JSON rendering.
            texts = [*context_texts(sample).values(), raw_argument(sample)]
            if all(gitleaks_finds(rule, t, secret) for t in texts[:2] + texts[3:]):
                found = sample
                break
        out[rule["id"]] = found
    return out


def raw_argument(sample: RuleSample) -> str:
    return f"{sample.hint} deploy --with {sample.match} --now"


def context_texts(sample: RuleSample) -> dict[str, str]:
    """Where a credential turns up in a transcript: said by the user, printed by a tool, and
    inside a tool call's arguments as a normalizer renders them (JSON)."""
    import orjson

    said = f"for {sample.hint}: " if sample.hint else ""
    return {
        "user": f"please use this {said}{sample.match} and tell me if it works",
        "output": f"$ cat .env\nDEBUG=1\n{said}\n{sample.match}\nPORT=8080\n",
        "arguments": "Tool: bash(" + orjson.dumps({"command": raw_argument(sample)}).decode() + ")",
    }
