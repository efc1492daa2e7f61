"""Every shipped rule, alone, redacts a sample gitleaks itself reports, wherever a transcript
puts it (what the user says, a tool's output, a tool call's JSON-rendered arguments).

Alone, because the rule set overlaps (generic-api-key takes much): a rule that never matches
under Python's ``re`` would otherwise hide behind a broader one. The samples come from
``tests.rule_samples``, made from each rule's regex and confirmed by RE2 (google-re2).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from store.redact import WHOLE, Redactor, redactor, rule_ids, translate
from tests.rule_samples import RuleSample, context_texts, raw_rules, rule_samples

RULES = sorted(r["id"] for r in raw_rules() if "regex" in r and r.get("keywords"))
ALL = rule_ids()


@cache
def _alone(rule_id: str) -> Redactor:
    return Redactor(sorted(ALL - {rule_id}))


def test_every_rule_with_a_regex_and_keywords_is_loaded() -> None:
    assert {r.id for r in redactor().rules} == set(RULES)
    assert len(RULES) > 200


@pytest.mark.parametrize("rule_id", RULES)
def test_gitleaks_reports_a_sample_of_every_rule(rule_id: str) -> None:
    assert rule_samples()[rule_id] is not None, "RE2 reports no sample made from the rule"


@pytest.mark.parametrize("where", ["user", "output", "arguments"])
@pytest.mark.parametrize("rule_id", RULES)
def test_every_rule_alone_redacts_its_sample(rule_id: str, where: str) -> None:
    sample = rule_samples()[rule_id]
    assert sample is not None
    text = context_texts(sample)[where]
    out, found = _alone(rule_id).redact(text)
    assert found, f"{rule_id} found nothing in {text!r}"
    assert {f.kind for f in found} == {sample.kind}
    # no piece of it is left (a Teams webhook URL cut by one 5-character group would be)
    assert not _pieces(sample.secret, out)
    # and with every rule on, the value is gone all the same
    assert not _pieces(sample.secret, redactor().redact(text)[0])


def _pieces(secret: str, out: str) -> list[str]:
    value = secret.strip()
    if len(value) <= 16:
        return [value] if value in out else []
    return [value[i : i + 16] for i in range(len(value) - 15) if value[i : i + 16] in out]


def test_posix_classes_are_spelled_out_as_re2_reads_them() -> None:
    assert translate(r"\b(pat[[:alnum:]]{14}\.x)") == r"\b(pat[0-9A-Za-z]{14}\.x)"
    assert translate(r"[[:upper:][:digit:]_]") == r"[A-Z0-9_]"
    with pytest.raises(ValueError, match="negated POSIX class"):
        translate(r"[[:^alpha:]]")


def test_a_rule_whose_first_group_is_a_repetition_redacts_the_whole_match() -> None:
    rule = next(r for r in redactor().rules if r.id == "microsoft-teams-webhook")
    assert rule.secret_group == WHOLE
    assert all(r.secret_group != WHOLE for r in redactor().rules if r.id != rule.id)


def test_rules_whose_keyword_is_the_tokens_head_are_searched_in_windows() -> None:
    by_id = {r.id: r for r in redactor().rules}
    for rid in ("lob-api-key", "new-relic-user-api-key", "typeform-api-token"):
        assert not by_id[rid].at_keyword, rid
    for rid in ("generic-api-key", "atlassian-api-token", "github-pat"):
        assert by_id[rid].at_keyword, rid


def test_an_escaped_quote_keeps_spans_on_the_original_text() -> None:
    text = 'x(\\"<add key=\\"Password\\" value=\\"Zq8vR2mLkP4t\\" />\\")'
    out, found = redactor().redact(text)
    assert "Zq8vR2mLkP4t" not in out and found
    assert out.startswith('x(\\"<add key=\\"Password\\" value=') and out.endswith('/>\\")')


_SAMPLES = st.sampled_from([s for _, s in sorted(rule_samples().items()) if s is not None])
_NOISE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=60)


@pytest.mark.slow  # a fuzzer
@settings(max_examples=300, deadline=None)
@given(before=_NOISE, sample=_SAMPLES, where=st.sampled_from(["user", "output", "arguments"]),
       after=_NOISE)  # fmt: skip
def test_no_part_of_any_rules_credential_survives_noise_around_it(
    before: str, sample: RuleSample, where: str, after: str
) -> None:
    text = before + "\n" + context_texts(sample)[where] + "\n" + after
    out, _ = redactor().redact(text)
    assert not _pieces(sample.secret, out), sample.rule_id
    assert redactor().redact(out) == (out, ())


REAL = Path(__file__).parents[3].parent / "shared" / "fixtures" / "real"


@pytest.mark.real
def test_the_real_sessions_hold_no_credential_and_nothing_is_redacted() -> None:
    # Public sessions of Pi, Claude Code and Codex: every redaction in them is a false
    # positive. The setup notes they hold ("export OPENAI_API_KEY=sk-...\n" in JSON) were.
    if not REAL.is_dir():
        pytest.skip(f"real fixtures not found at {REAL} (../shared is absent)")
    lines = [
        line
        for path in sorted(REAL.rglob("*.json*"))
        for line in path.read_text(errors="replace").splitlines()
    ]
    assert len(lines) > 1000
    assert any("export OPENAI_API_KEY=sk-..." in line for line in lines)
    flagged = [
        (f.kind, line[f.start - 30 : f.end]) for line in lines for f in redactor().find(line)
    ]
    assert flagged == []


_PIECES = st.sampled_from(['\\"', "\\", '"', "key=", "token", "sk", "é", "✓", " ", "x", "\n"])


@settings(max_examples=300, deadline=None)
@given(st.lists(st.one_of(_PIECES, _NOISE), max_size=12))
def test_the_keyword_pass_tells_exactly_whether_a_text_holds_an_escaped_quote(
    pieces: list[str],
) -> None:
    # find() unescapes a text exactly when it holds \" (it used to search for it apart):
    # the automaton's own pattern must say so for any text, the offsets of a text with
    # characters past ASCII included, whether or not a keyword occurs
    text = "".join(pieces)
    assert redactor()._candidates(text)[1] == ('\\"' in text)


def test_a_credential_behind_escaped_quotes_is_found_with_or_without_another_keyword() -> None:
    for text in (
        'note \\"password\\": \\"Zq8vR2mLkP4tXw9\\"',
        '\\"password\\": \\"Zq8vR2mLkP4tXw9\\" é',
    ):
        out, found = redactor().redact(text)
        assert "Zq8vR2mLkP4tXw9" not in out and found, text
    assert redactor().redact('only \\"quoted\\" words') == ('only \\"quoted\\" words', ())
