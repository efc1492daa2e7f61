"""store.redact: every planted kind per rule, look-alikes untouched, and fuzzed properties."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from stages.policy import Policy
from store.redact import PLACEHOLDER, Redactor, fingerprint_of, redactor, translate
from tests.secret_samples import PLANTED, lookalikes

R = redactor()


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_each_planted_kind_is_found_by_its_rule(kind: str) -> None:
    text, value = PLANTED[kind]
    out, found = R.redact(text)
    assert [f.kind for f in found] == [kind]
    assert f"[REDACTED:{kind}]" in out and value not in out
    assert found[0].fingerprint == fingerprint_of(text[found[0].start : found[0].end])


@pytest.mark.parametrize("kind", sorted(PLANTED))
def test_a_planted_kind_is_found_inside_json_rendered_arguments(kind: str) -> None:
    import orjson

    text, value = PLANTED[kind]
    rendered = "Tool: bash(" + orjson.dumps({"command": f"echo {text}"}).decode() + ")"
    out, found = R.redact(rendered)
    assert found and value[:12] not in out


def test_look_alikes_are_left_alone() -> None:
    sample = lookalikes(50)
    redacted = [t for t in sample if R.find(t)]
    assert redacted == []


def test_a_placeholder_is_not_a_credential() -> None:
    text = "key = [REDACTED:generic_api_key] and AWS [REDACTED:aws_access_token]"
    assert R.find(text) == []


def test_disabled_rules_are_not_run() -> None:
    text, _ = PLANTED["github_pat"]
    assert Redactor(["github-pat"]).find(text) == []
    assert Redactor(["github-pat"]).fingerprint != R.fingerprint


def test_the_rule_set_and_its_switches_are_in_the_policy() -> None:
    on, off = Policy(), Policy(redact=False)
    fewer = Policy(redact_disabled=("generic-api-key",))
    assert len({on.fingerprint(), off.fingerprint(), fewer.fingerprint()}) == 3
    assert ";redact:off;" in off.fingerprint() + ";"


def test_mid_pattern_flags_are_scoped_as_re2_scopes_them() -> None:
    assert translate(r"\b(p8e-(?i)[a-z0-9]{32})x") == r"\b(p8e-(?i:[a-z0-9]{32}))x"
    assert translate(r"lin_api_(?i)[a-z0-9]{40}") == r"lin_api_(?i:[a-z0-9]{40})"
    assert translate(r"(?:\s|\z)") == r"(?:\s|\Z)"


def test_every_shipped_rule_compiles() -> None:
    assert len(R.kinds) > 150
    assert all(rule.regex.pattern for rule in R.rules)


_PLANTS = st.sampled_from(sorted(PLANTED.values()))
_NOISE = st.text(alphabet=st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=80)


@settings(max_examples=150, deadline=None)
@given(before=_NOISE, plant=_PLANTS, after=_NOISE)
def test_no_part_of_a_planted_secret_survives(
    before: str, plant: tuple[str, str], after: str
) -> None:
    planted, secret = plant
    text = before + "\n" + planted + "\n" + after
    out, _ = R.redact(text)
    # no long piece of the secret is left (a short one may be ordinary text around it)
    for i in range(len(secret) - 16):
        assert secret[i : i + 16] not in out
    assert R.redact(out) == (out, ())


@settings(max_examples=150, deadline=None)
@given(before=st.text(max_size=60), plant=_PLANTS)
def test_a_finding_after_wide_characters_spans_the_secret_in_characters(
    before: str, plant: tuple[str, str]
) -> None:
    # keywords are found over UTF-8 bytes; spans come back as character offsets, also after
    # characters of 2-4 bytes and lone surrogates (3 bytes each, surrogatepass)
    planted, secret = plant
    text = before + "\u00e9\u6f22\U0001f600\ud800 " + planted
    found = R.find(text)
    assert any(text[f.start : f.end] == secret or secret in text[f.start : f.end] for f in found)
    assert all(0 <= f.start < f.end <= len(text) for f in found)


@pytest.fixture(scope="module")
def wide() -> Redactor:
    """A redactor that scans UTF-8 and converts offsets, as one whose keywords were not all
    ASCII without "?" would."""
    out = Redactor()
    out._narrow = False
    return out


@settings(max_examples=150, deadline=None)
@given(before=st.text(max_size=60), plant=_PLANTS, after=st.text(max_size=60))
def test_the_one_byte_a_character_scan_finds_what_the_utf8_scan_does(
    wide: Redactor, before: str, plant: tuple[str, str], after: str
) -> None:
    # the shipped keywords let the automaton read other characters as one "?" each
    assert R._narrow
    text = before + "\u00e9 " + plant[0] + " \U0001f600\ud800" + after
    assert R.find(text) == wide.find(text)


@settings(max_examples=200, deadline=None)
@given(st.text(max_size=300))
def test_redaction_never_crashes_and_is_idempotent(text: str) -> None:
    out, found = R.redact(text)
    assert bool(PLACEHOLDER.search(out)) == bool(found) or PLACEHOLDER.search(text)
    assert R.redact(out)[0] == out


def test_a_keyword_found_late_but_starting_early_still_opens_a_window() -> None:
    # overlapping keyword matches come by their ends ("sk" before "sk_live"); starts are sorted
    text, value = PLANTED["stripe_access_token"]
    padded = "sk " * 50 + text
    out, found = R.redact(padded)
    assert [f.kind for f in found] == ["stripe_access_token"] and value not in out


def test_rules_whose_matches_start_at_their_keyword_are_recognised() -> None:
    from store.redact import anchored

    assert anchored(r"\b((?:hvs\.[\w-]{90,120}|s\.(?i:[a-z0-9]{24})))", ("hvs.", "s."))
    assert anchored(r"ghp_[0-9a-zA-Z]{36}", ("ghp_",))
    assert not anchored(r"(?:https?://)?hooks.slack.com/x", ("hooks.slack.com",))
    assert not anchored(r"\b(\d{15,16}(\||%)[0-9a-z]{27,40})", ("facebook",))
    assert not anchored(r"(?:ab)?cd", ("ab",))


def test_a_cut_through_a_credential_moves_before_it() -> None:
    from stages.common import summarize_args
    from store.redact import clear_cut

    text, value = PLANTED["github_pat"]
    padded = "x" * 390 + " " + value + " tail"
    assert clear_cut(padded, 400) == 391
    assert clear_cut(padded, 380) == 380
    summary = summarize_args({"command": padded})
    assert summary.endswith("…") and value[:8] not in summary


def test_one_redactor_per_rule_set_however_it_is_spelled() -> None:
    # the supervisor warms redactor() before forking; index workers ask for redactor(()) via
    # their policy: both must be the same (already built) object, or each worker parses the
    # rules again on the way to the first append
    assert redactor() is redactor(()) is redactor([])
    some = sorted({r.id for r in redactor().rules})[:2]
    assert redactor(some) is redactor(tuple(reversed(some))) is redactor([*some, some[0]])
    assert redactor(some) is not redactor()
