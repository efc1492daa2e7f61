"""Credential redaction: the one place sessiondex matches patterns in text.

    text ──Aho-Corasick over every rule's keywords──► rules whose keyword occurs
         ──those rules' regexes, entropy and allowlists──► spans ──► "[REDACTED:kind]"

The rules are the gitleaks default rule collection (``secret_rules/gitleaks.toml``, MIT, kept
as gitleaks ships it) plus a few of ours in the same format (``secret_rules/sessiondex.toml``)
for what gitleaks leaves to a repository scanner's context: URLs with a password, ``NAME=value``
environment assignments, and private-key blocks a transcript cut short. A rule runs only on
text holding one of its keywords, so the many rules cost one automaton pass over the
lowercased text, and almost every entry stops there; a rule whose matches start with a
keyword is tried only where one starts, the others only in a window around each.

It lives in ``store`` for the reason the tokenizer does: the write side redacts before
anything is stored, the query side finds the same values again to reveal them locally, and
the two must agree byte for byte. Only the *values* matched here are replaced; nothing here
ever decides what a piece of prose means.

A finding keeps the rule's kind and a masked fingerprint (first four characters, ``…``,
blake3 of the value cut to 8 hex digits), never the value: enough to tell which credential
to rotate, too little to use it.
"""

from __future__ import annotations

import bisect
import math
import re
import tomllib
import warnings
from collections import Counter
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from functools import cache, lru_cache
from importlib import resources
from typing import Any, Final

import ahocorasick_rs
import blake3

__all__ = [
    "PLACEHOLDER",
    "RULESET",
    "Finding",
    "Redactor",
    "Rule",
    "clear_cut",
    "fingerprint_of",
    "load_rules",
    "placeholder",
    "redactor",
    "rule_ids",
]

# Names the rule files' versions: a change re-derives every record (it is in the policy).
RULESET = "gitleaks-8.30.0-27-gb58d3f10+sessiondex-3"
PLACEHOLDER = re.compile(r"\[REDACTED:([a-z0-9_]+)\]")
_RULE_FILES = ("gitleaks.toml", "sessiondex.toml")
# How far before a keyword the match of a rule not anchored at its keyword may start: most
# of those rules' keywords sit within a few characters of the start (a URL scheme, a "\b("
# group), OpenAI's "T3BlbkFJ" 82 characters in ("sk-proj-" and 74 more).
_LOOKBACK = 128
# A quote as JSON escapes it inside a string; ``find`` reads the text without the backslash.
_ESCAPED_QUOTE: Final = '\\"'
# How far after a keyword a window reaches: past the longest credential (a 4096-bit RSA key
# block is about 3,300 characters; a window at its "-----BEGIN" holds it).
_WINDOW = 4096
# Strings up to this long are memoized by ``Redactor.redact`` (at most this many at once).
_MEMO_CHARS = 256
_MEMO_ENTRIES = 16_384
# How far an anchored try of a prefix-cut (generic, assignment-shaped) rule may reach.
_ANCHORED = 1024


def placeholder(kind: str) -> str:
    return f"[REDACTED:{kind}]"


def fingerprint_of(value: str) -> str:
    """``AKIA…1f2e3d4c``: four characters to recognise the credential, a short hash to tell
    two apart. The audit lists this; the value itself is never stored."""
    digest = blake3.blake3(value.encode("utf-8", "surrogatepass")).hexdigest()[:8]
    return f"{value[:4]}…{digest}"


@dataclass(frozen=True, slots=True)
class Finding:
    """One redacted credential: ``[start, end)`` in the text it was found in."""

    kind: str
    start: int
    end: int
    fingerprint: str


@dataclass(frozen=True, slots=True)
class _Allow:
    target: str  # "secret", "match" or "line"
    patterns: tuple[str, ...]
    stopwords: tuple[str, ...]
    both: bool  # condition AND: a regex and a stopword must both hold


@dataclass(frozen=True, slots=True)
class Rule:
    """One gitleaks-format rule, its RE2 regex translated to Python's ``re``."""

    id: str
    kind: str
    pattern: str
    keywords: tuple[str, ...]
    secret_group: int
    entropy: float
    allows: tuple[_Allow, ...]
    # gitleaks' generated rules open with a lazy ``[\w.-]{0,50}?`` before their keyword; it
    # only moves the match start (which an allowlist of target "match" reads), so it is cut
    # from the regex, which then starts at the keyword, and added back by ``_widen``.
    prefix: int = 0
    # Every match starts with a keyword (``anchored``): tried only where one starts.
    at_keyword: bool = False

    @property
    def regex(self) -> re.Pattern[str]:
        return _compile(self.pattern)


def _group_end(pattern: str, start: int) -> int:
    """Index of the ``)`` closing the group that holds *start*, or ``len(pattern)``."""
    depth = 0
    i = start
    in_class = False
    while i < len(pattern):
        c = pattern[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
            if pattern.startswith("[]", i) or pattern.startswith("[^]", i):
                i += 2 if pattern[i + 1] == "]" else 3
                continue
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                return i
            depth -= 1
        i += 1
    return len(pattern)


# RE2's POSIX classes, which Python's re lacks: it reads "[[:alnum:]]" as a set of
# punctuation and letters followed by a literal "]", so a rule using one silently never
# matched (airtable-personnal-access-token did not).
_POSIX = {
    "alnum": "0-9A-Za-z",
    "alpha": "A-Za-z",
    "ascii": "\\x00-\\x7f",
    "blank": "\\t ",
    "cntrl": "\\x00-\\x1f\\x7f",
    "digit": "0-9",
    "graph": "!-~",
    "lower": "a-z",
    "print": " -~",
    "punct": "!-/:-@\\[-`{-~",
    "space": "\\t\\n\\v\\f\\r ",
    "upper": "A-Z",
    "word": "0-9A-Za-z_",
    "xdigit": "0-9A-Fa-f",
}
_POSIX_CLASS = re.compile(r"\[:(\^?)([a-z]+):\]")


def _posix(m: re.Match[str]) -> str:
    if m.group(1):
        raise ValueError(f"negated POSIX class {m.group(0)} is not translated")
    return _POSIX[m.group(2)]


def translate(pattern: str) -> str:
    """RE2 → Python ``re``: a flag group ``(?i)`` after the start scopes, in RE2, to the rest
    of its group, which Python spells ``(?i:…)``; ``\\z`` is Python's ``\\Z``; a POSIX class
    ``[:alnum:]`` inside brackets is spelled out as ranges."""
    pattern = pattern.replace(r"\z", r"\Z")
    pattern = _POSIX_CLASS.sub(_posix, pattern)
    while True:
        at = pattern.find("(?i)", 1)
        if at < 0:
            return pattern
        end = _group_end(pattern, at + 4)
        pattern = f"{pattern[:at]}(?i:{pattern[at + 4 : end]}){pattern[end:]}"


@cache
def _compile(pattern: str) -> re.Pattern[str]:
    """Compiled on first use: most rules never see their keyword, and compiling all of them
    would cost every worker process a quarter of a second at start."""
    with warnings.catch_warnings():
        # "Possible nested set": RE2 reads "[[" in a class as a literal "[", and so does re.
        warnings.simplefilter("ignore", FutureWarning)
        # RE2's \w, \d, \s and \b are ASCII-only; so are they here, as gitleaks means them.
        return re.compile(pattern, re.ASCII)


def _allows(raw: Iterable[Mapping[str, Any]]) -> tuple[_Allow, ...]:
    out: list[_Allow] = []
    for a in raw:
        if a.get("paths") or a.get("commits"):
            continue  # about files in a repository: a transcript has no such path
        out.append(
            _Allow(
                target=a.get("regexTarget", "secret"),
                patterns=tuple(translate(r) for r in a.get("regexes", ())),
                stopwords=tuple(s.lower() for s in a.get("stopwords", ())),
                both=a.get("condition", "OR") == "AND",
            )
        )
    return tuple(out)


def rule_ids() -> frozenset[str]:
    """Every rule id of the shipped rule files (what ``disabledRules`` may name)."""
    ids: set[str] = set()
    for name in _RULE_FILES:
        data = tomllib.loads(resources.files("store.secret_rules").joinpath(name).read_text())
        ids.update(r["id"] for r in data.get("rules", ()))
    return frozenset(ids)


def load_rules(disabled: Iterable[str] = ()) -> tuple[tuple[Rule, ...], tuple[_Allow, ...]]:
    """Every rule of the shipped rule files but *disabled* (rule ids), and the global
    allowlist. A rule without keywords is left out: it would run on every text."""
    off = set(disabled)
    rules: list[Rule] = []
    global_allows: list[_Allow] = []
    for name in _RULE_FILES:
        data = tomllib.loads(resources.files("store.secret_rules").joinpath(name).read_text())
        if "allowlist" in data:
            global_allows.extend(_allows([data["allowlist"]]))
        for r in data.get("rules", ()):
            if r["id"] in off or "regex" not in r or not r.get("keywords"):
                continue
            pattern, prefix = _strip_prefix(r["regex"])
            keywords = tuple(k.lower() for k in r["keywords"])
            rules.append(
                Rule(
                    id=r["id"],
                    kind=r.get("kind", r["id"].replace("-", "_")),
                    pattern=translate(pattern),
                    prefix=prefix,
                    at_keyword=_at_keyword(translate(pattern), keywords, prefix),
                    keywords=keywords,
                    secret_group=int(r.get("secretGroup", 0)) or _whole_match(pattern),
                    entropy=float(r.get("entropy", 0.0)),
                    allows=_allows(r.get("allowlists", ())),
                )
            )
    return tuple(rules), tuple(global_allows)


_LAZY_PREFIX = "[\\w.-]{0,50}?"


def _at_keyword(pattern: str, keywords: tuple[str, ...], prefix: int) -> bool:
    """Whether the rule's matches start where a keyword does. A generated rule (one with a
    cut ``prefix``) starts at its identifier group, which is a keyword for most, but not for
    those whose keywords are the token's own prefix (lob's ``live_``, New Relic's ``NRAK-``,
    typeform's ``tfp_``): they are searched in windows like any other."""
    if anchored(pattern, keywords):
        return True
    if not prefix:
        return False
    head = pattern[4:] if pattern.startswith("(?i)") else pattern
    first = head[: _group_end(head, 1) + 1].lower() if head.startswith("(") else ""
    return any(k in first for k in keywords)


def _strip_prefix(pattern: str) -> tuple[str, int]:
    flags = "(?i)" if pattern.startswith("(?i)") else ""
    body = pattern[len(flags) :]
    if body.startswith(_LAZY_PREFIX):
        return flags + body[len(_LAZY_PREFIX) :], 50
    return pattern, 0


def _whole_match(pattern: str) -> int:
    """``WHOLE`` when the group gitleaks would report (the first that took part) is repeated:
    it holds one repetition (a ``1234-`` of a Teams webhook URL), and redacting that alone
    would leave the credential; else 0, gitleaks' own choice."""
    i = 0
    while True:
        i = pattern.find("(", i)
        if i < 0:
            return 0
        if i and pattern[i - 1] == "\\" or pattern.startswith("(?", i):
            i += 1
            continue
        close = _group_end(pattern, i + 1)
        return WHOLE if pattern[close + 1 : close + 2] in ("?", "*", "+", "{") else 0


# A secretGroup meaning "the whole match".
WHOLE = -1

_OPENERS = ("(?i)", "(?i:", "(?:", "\\b", "(")
_META = set(".^$*+?{}[]\\|()")


def _literal_head(branch: str) -> str:
    """The literal characters a regex branch starts with (escapes undone), lowercased."""
    out: list[str] = []
    i = 0
    while i < len(branch):
        c = branch[i]
        if c == "\\" and i + 1 < len(branch) and not branch[i + 1].isalnum():
            out.append(branch[i + 1])
            i += 2
            continue
        if c in _META:
            break
        out.append(c)
        i += 1
    # A quantifier after the last literal makes that one optional.
    if i < len(branch) and branch[i] in "*?{" and out:
        out.pop()
    return "".join(out).lower()


def _branches(group: str) -> list[str]:
    """The top-level alternatives of *group* (a pattern without its closing paren)."""
    out: list[str] = []
    depth = 0
    start = 0
    i = 0
    in_class = False
    while i < len(group):
        c = group[i]
        if c == "\\":
            i += 2
            continue
        if in_class:
            in_class = c != "]"
        elif c == "[":
            in_class = True
        elif c == "(":
            depth += 1
        elif c == ")":
            if depth == 0:
                break
            depth -= 1
        elif c == "|" and depth == 0:
            out.append(group[start:i])
            start = i + 1
        i += 1
    out.append(group[start:i])
    return out


def anchored(pattern: str, keywords: tuple[str, ...]) -> bool:
    """Whether every match of *pattern* starts with one of *keywords*, so that it need only
    be tried where a keyword starts: the pattern, past leading ``\\b`` and groups that are
    not optional, is an alternation of branches that each open with a keyword literally."""
    head = pattern
    while True:
        if head.startswith(("\\b", "(?i)")):
            head = head[2 if head.startswith("\\b") else 4 :]
            continue
        opener = next((o for o in ("(?i:", "(?:", "(") if head.startswith(o)), None)
        if opener is None or (opener == "(" and head.startswith("(?")):
            break
        close = _group_end(head, len(opener))
        if head[close + 1 : close + 2] in ("?", "*", "{"):
            return False  # an optional group: a match may start after it
        head = head[len(opener) :]
    for branch in _branches(head):
        lit = _literal_head(branch)
        if not any(lit.startswith(k) for k in keywords):
            return False
    return True


def _name_char(c: str) -> bool:
    return (c.isascii() and c.isalnum()) or c in "_.-"


def _widen(text: str, start: int, limit: int) -> int:
    """Where the cut ``[\\w.-]{0,limit}?`` prefix would have started the match."""
    at = start
    while at > 0 and start - at < limit and _name_char(text[at - 1]):
        at -= 1
    if at > 0 and text[at - 1] == "\\" and text[at] in "nrt":
        at += 1  # "\\nNAME=" in JSON-rendered text: the name starts after the escape
    return at


def shannon(value: str) -> float:
    """Bits per character, as gitleaks measures a candidate's randomness."""
    n = len(value)
    if not n:
        return 0.0
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values())


def _allowed(allows: Iterable[_Allow], secret: str, match: str, line: str) -> bool:
    for a in allows:
        target = {"secret": secret, "match": match, "line": line}.get(a.target, secret)
        hit_re = any(_compile(r).search(target) for r in a.patterns) if a.patterns else None
        lowered = secret.lower()
        hit_sw = any(s in lowered for s in a.stopwords) if a.stopwords else None
        if a.both:
            if hit_re is not False and hit_sw is not False and (hit_re or hit_sw):
                return True
        elif hit_re or hit_sw:
            return True
    return False


class Redactor:
    """Finds and replaces credentials. Build once per rule set (``redactor``): the
    automaton and the compiled regexes are the expensive part."""

    __slots__ = (
        "_automaton",
        "_global",
        "_keywords",
        "_memo",
        "_narrow",
        "_quote",
        "_rules",
        "fingerprint",
    )

    def __init__(self, disabled: Iterable[str] = ()) -> None:
        off = tuple(sorted(set(disabled)))
        self._rules, self._global = load_rules(off)
        self.fingerprint = RULESET + ("-" + ",".join(off) if off else "")
        by_keyword: dict[str, list[int]] = {}
        for i, rule in enumerate(self._rules):
            for kw in rule.keywords:
                by_keyword.setdefault(kw, []).append(i)
        self._keywords = tuple(tuple(ids) for ids in by_keyword.values())
        self._memo: dict[str, tuple[str, tuple[Finding, ...]]] = {}
        # Keywords all ASCII and none holding "?": a text's other characters can be one "?"
        # byte each for the automaton (no keyword match starts, ends or lies in one), so a
        # match's byte offsets are its character offsets (``_candidates``)
        self._narrow = all(kw.isascii() and "?" not in kw for kw in by_keyword)
        # The automaton also looks for an escaped quote (its last pattern): the pass over
        # the text that finds the keywords tells ``find`` whether to unescape, where a
        # search of its own walked every text again (~10 % of redaction on the S corpus).
        if _ESCAPED_QUOTE in by_keyword:
            raise ValueError(f"a rule's keyword is {_ESCAPED_QUOTE!r}, the automaton's own")
        self._quote = len(by_keyword)
        # Over UTF-8 bytes, as a DFA: several times faster than over str, and a keyword is
        # ASCII, so lowercasing the bytes (ASCII only) finds every case of it.
        self._automaton = ahocorasick_rs.BytesAhoCorasick(
            [kw.encode() for kw in by_keyword] + [_ESCAPED_QUOTE.encode()],
            matchkind=ahocorasick_rs.MatchKind.Standard,
            implementation=ahocorasick_rs.Implementation.DFA,
        )

    @property
    def rules(self) -> tuple[Rule, ...]:
        return self._rules

    @property
    def kinds(self) -> tuple[str, ...]:
        return tuple(sorted({r.kind for r in self._rules}))

    def _candidates(self, text: str) -> tuple[dict[int, list[int]] | None, bool]:
        """Rule index → the character offsets where its keywords start in *text*, for every
        rule one of whose keywords occurs (``None`` for no rule), and whether *text* holds
        an escaped quote (``\\"``)."""
        if self._narrow:
            # one byte per character: ASCII as is, any other character (a lone surrogate
            # too) a "?", which C writes for the whole run at once; no offset to convert
            data = text.encode("ascii", "replace").lower()
        else:
            data = text.encode("utf-8", "surrogatepass").lower()
        found = self._automaton.find_matches_as_indexes(data, overlapping=True)
        if not found:
            return None, False
        if len(data) != len(text):
            found = _char_offsets(data, found)
        hits: dict[int, set[int]] = {}
        quote = self._quote
        quoted = False
        for kw, start, _ in found:
            if kw == quote:
                quoted = True
                continue
            for i in self._keywords[kw]:
                at = hits.get(i)
                if at is None:
                    hits[i] = {start}
                else:
                    at.add(start)
        # Overlapping matches come in order of their ends; windows need their starts in order.
        return ({i: sorted(at) for i, at in hits.items()} or None), quoted

    def _matches(self, rule: Rule, text: str, at: list[int]) -> Iterable[re.Match[str]]:
        """The rule's matches, looked for only where they can be: tried at each keyword
        start when every match starts with a keyword (``Rule.at_keyword``), else searched in
        windows around the keyword starts *at* (sorted)."""
        if rule.at_keyword:
            regex = rule.regex
            # Bounded, as gitleaks' generic value patterns backtrack a long way on a long
            # run of word characters; no credential is longer than the bound.
            bound = _ANCHORED if rule.prefix else _WINDOW
            done = -1
            for p in at:
                if p < done:
                    continue
                m = regex.match(text, p, p + bound)
                if m is not None:
                    done = m.end()
                    yield m
            return
        regex = rule.regex
        # A generated rule's value ends well within _ANCHORED of its keyword ("test_" of
        # lob's keys, common in code, would otherwise open a 4 KiB window each time).
        reach = _ANCHORED if rule.prefix else _WINDOW
        lo, hi = max(0, at[0] - _LOOKBACK), at[0] + reach
        for p in at[1:]:
            if p - _LOOKBACK <= hi:
                hi = p + reach
                continue
            yield from regex.finditer(text, lo, min(hi, len(text)))
            lo, hi = p - _LOOKBACK, p + reach
        # A window's end acts as the end of the text for "$": one reaching past the text
        # ends there anyway, and _WINDOW is longer than any credential the rules match.
        yield from regex.finditer(text, lo, min(hi, len(text)))

    def find(self, text: str) -> list[Finding]:
        """Non-overlapping credential spans of *text*, in order (overlaps are merged)."""
        if not text:
            return []
        original = text
        quotes: list[int] = []
        candidates, quoted = self._candidates(text)
        if quoted:
            # JSON inside text (a normalizer's rendering of tool arguments) escapes quotes;
            # the rules expect bare ones (`<add key="Password"`, `curl -H="Authorization`):
            # they run on the text with those backslashes gone, spans mapped back after.
            text, quotes = _unescape_quotes(text)
            candidates, _ = self._candidates(text)
        if not candidates:
            return []
        spans: list[tuple[int, int, str]] = []
        for i, at in sorted(candidates.items()):
            rule = self._rules[i]
            for m in self._matches(rule, text, at):
                span = _secret_span(m, rule.secret_group)
                if span is None:
                    continue
                start, end = span
                secret = text[start:end]
                if rule.entropy and shannon(secret) < rule.entropy:
                    continue
                if PLACEHOLDER.fullmatch(secret) or _inside_placeholder(text, start, end):
                    continue
                if rule.allows or self._global:
                    begin = _widen(text, m.start(), rule.prefix) if rule.prefix else m.start()
                    whole = text[begin : m.end()]
                    line = _line(text, begin, m.end())
                    if _allowed(rule.allows, secret, whole, line):
                        continue
                    if _allowed(self._global, secret, whole, line):
                        continue
                spans.append((start, end, rule.kind))
        if quotes:
            spans = [(_back(quotes, s), _back(quotes, e - 1) + 1, k) for s, e, k in spans]
        return _merge(original, spans)

    def redact(self, text: str) -> tuple[str, tuple[Finding, ...]]:
        """*text* with every credential replaced by its placeholder, and the findings (their
        spans in *text*). Idempotent: a placeholder is never a credential."""
        if len(text) > _MEMO_CHARS:
            return self._redact(text)
        # Short strings come back again and again (tool names, paths, arguments in each
        # call's operation): half the calls of a build, a few thousand distinct values.
        done = self._memo.get(text)
        if done is None:
            if len(self._memo) >= _MEMO_ENTRIES:
                self._memo.clear()
            done = self._memo[text] = self._redact(text)
        return done

    def _redact(self, text: str) -> tuple[str, tuple[Finding, ...]]:
        found = self.find(text)
        if not found:
            return text, ()
        out: list[str] = []
        at = 0
        for f in found:
            out.append(text[at : f.start])
            out.append(placeholder(f.kind))
            at = f.end
        out.append(text[at:])
        redacted = "".join(out)
        # A value cut by a placeholder can leave a new, shorter match; go again until none.
        again = self.find(redacted)
        if again:
            redacted, more = self.redact(redacted)
            return redacted, tuple(found) + more
        return redacted, tuple(found)


def _unescape_quotes(text: str) -> tuple[str, list[int]]:
    """*text* with every ``\\"`` a bare ``"``, and where those quotes are in it (sorted)."""
    parts = text.split('\\"')
    quotes: list[int] = []
    at = 0
    for part in parts[:-1]:
        at += len(part)
        quotes.append(at)
        at += 1
    return '"'.join(parts), quotes


def _back(quotes: list[int], i: int) -> int:
    """Offset *i* of the unescaped text in the text it came from."""
    return i + bisect.bisect_right(quotes, i)


# 1 for a UTF-8 continuation byte (0b10xxxxxx), 0 for any other: a character is one byte that
# is not a continuation byte (a lone surrogate, surrogatepass's 3 bytes, too).
_CONTINUATION = bytes(int(0x80 <= b < 0xC0) for b in range(256))


def _char_offsets(data: bytes, found: list[tuple[int, int, int]]) -> list[tuple[int, int, int]]:
    """Matches over UTF-8 *data* with byte offsets turned into character offsets. A keyword
    is ASCII, so a match starts at a character and has as many characters as bytes; the
    characters before it are its bytes less the continuation bytes (counted in C, where
    decoding each stretch made a string per match)."""
    marks = data.translate(_CONTINUATION)
    out: list[tuple[int, int, int]] = []
    byte_at = char_at = 0
    for kw, start, end in sorted(found, key=lambda f: f[1]):
        char_at += start - byte_at - marks.count(1, byte_at, start)
        byte_at = start
        out.append((kw, char_at, char_at + (end - start)))
    return out


def _secret_span(m: re.Match[str], group: int) -> tuple[int, int] | None:
    """Gitleaks' choice of the secret in a match: ``secretGroup``, else the first group
    that took part, else the whole match."""
    if group == WHOLE:
        return m.span()
    if group and group <= (m.re.groups or 0):
        if m.start(group) < 0 or m.start(group) == m.end(group):
            return None
        return m.span(group)
    for g in range(1, (m.re.groups or 0) + 1):
        if m.start(g) >= 0 and m.end(g) > m.start(g):
            return m.span(g)
    if m.end() > m.start():
        return m.span()
    return None


def _inside_placeholder(text: str, start: int, end: int) -> bool:
    left = text.rfind("[REDACTED:", max(0, start - 64), end)
    if left < 0:
        return False
    close = text.find("]", left)
    return close >= start and left < end


def _line(text: str, start: int, end: int) -> str:
    lo = text.rfind("\n", 0, start) + 1
    hi = text.find("\n", end)
    return text[lo : hi if hi >= 0 else len(text)]


def _merge(text: str, spans: list[tuple[int, int, str]]) -> list[Finding]:
    """Union of overlapping spans (so no piece of a credential survives), the earliest
    rule's kind naming each."""
    if not spans:
        return []
    spans.sort(key=lambda s: (s[0], -s[1]))
    merged: list[list[Any]] = []
    for start, end, kind in spans:
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end, kind])
    return [Finding(k, s, e, fingerprint_of(text[s:e])) for s, e, k in merged]


def clear_cut(text: str, at: int) -> int:
    """*at*, or the start of the credential that a cut of *text* at *at* would split (a
    normalizer cutting long tool arguments calls this; what it keeps is redacted later)."""
    for f in redactor().find(text[: at + _WINDOW]):
        if f.start < at < f.end:
            return f.start
    return at


def redactor(disabled: Iterable[str] = ()) -> Redactor:
    """The shared redactor for a rule set (built once per process). The cache is keyed on the
    rule set, not on how it was spelled: ``lru_cache`` tells ``redactor()`` from
    ``redactor(())``, so the rules warmed before the pipeline forks were parsed again (~40 ms)
    in every index worker on its way to the first append (issue 22 item 11)."""
    return _redactor(tuple(sorted(set(disabled))))


@lru_cache(maxsize=4)
def _redactor(disabled: tuple[str, ...]) -> Redactor:
    return Redactor(disabled)
