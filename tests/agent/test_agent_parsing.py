from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from seed_agent.parsing import (
    EMPTY_ACTION,
    ERRORS,
    INVALID_ACTION_PENALTY,
    MISSING_TAGS,
    MISSING_THINK,
    MULTIPLE_ACTIONS,
    NOT_ADMISSIBLE,
    NOT_TEXT,
    SEARCH_TAGS,
    UNCLOSED_TAG,
    action_penalty,
    parse_response,
)
from seed_envs.testing import bad_actions

ADMISSIBLE = ["go to fridge 1", "open fridge 1", "look"]


def test_a_well_formed_reply():
    parsed = parse_response(
        "<think>The mug may be cold.</think>\n<action>go to fridge 1</action>",
        admissible=ADMISSIBLE,
        require_think=True,
    )
    assert parsed.valid and parsed.action == "go to fridge 1" and parsed.tag == "action"
    assert parsed.think == "The mug may be cold."


def test_admissible_matching_returns_the_envs_spelling():
    parsed = parse_response("<action>  Go To  Fridge 1. </action>", admissible=ADMISSIBLE)
    assert parsed.valid and parsed.action == "go to fridge 1"
    parsed = parse_response("<ACTION>open fridge 1</Action>", admissible=ADMISSIBLE)
    assert parsed.valid and parsed.action == "open fridge 1"


def test_each_error_is_reported():
    assert parse_response("I will go to the fridge.").errors == (MISSING_TAGS,)
    assert UNCLOSED_TAG in parse_response("<action>go to fridge 1").errors
    assert parse_response("<action>go to fridge 1").action == "go to fridge 1"
    several = parse_response("<action>look</action><action>open fridge 1</action>", admissible=ADMISSIBLE)
    assert several.errors == (MULTIPLE_ACTIONS,) and several.action == "look"
    assert EMPTY_ACTION in parse_response("<action>   </action>").errors
    assert parse_response("<action>look</action>", require_think=True).errors == (MISSING_THINK,)
    think_after = parse_response("<action>look</action><think>hm</think>", require_think=True)
    assert MISSING_THINK in think_after.errors
    not_listed = parse_response("<action>fly to the moon</action>", admissible=ADMISSIBLE)
    assert not_listed.errors == (NOT_ADMISSIBLE,) and not_listed.well_formed
    assert parse_response(None).errors == (NOT_TEXT,)
    assert parse_response(b"<action>look</action>").errors == (NOT_TEXT,)


def test_open_action_space_accepts_any_action():
    assert parse_response("<action>anything at all</action>", admissible=None).valid


def test_repeated_prefill_is_tolerated():
    parsed = parse_response("<action><action>look</action>", admissible=ADMISSIBLE)
    assert parsed.valid and parsed.action == "look"


def test_search_tags():
    search = parse_response(
        "<think>need facts</think><search> capital of france </search>", tags=SEARCH_TAGS, require_think=True
    )
    assert search.valid and search.tag == "search" and search.action == "capital of france"
    answer = parse_response("<answer>Paris</answer>", tags=SEARCH_TAGS)
    assert answer.valid and answer.tag == "answer"
    both = parse_response("<search>q</search><answer>a</answer>", tags=SEARCH_TAGS)
    assert MULTIPLE_ACTIONS in both.errors
    assert parse_response("<action>look</action>", tags=SEARCH_TAGS).errors == (MISSING_TAGS,)


def test_penalty():
    good = parse_response("<action>look</action>", admissible=ADMISSIBLE)
    bad = parse_response("look")
    inadmissible = parse_response("<action>jump</action>", admissible=ADMISSIBLE)
    assert INVALID_ACTION_PENALTY == 0.1
    assert action_penalty(good) == 0.0
    assert action_penalty(bad) == -0.1
    assert action_penalty(inadmissible) == -0.1
    assert action_penalty(inadmissible, count_not_admissible=False) == 0.0
    assert action_penalty(bad, penalty=0.5) == -0.5


def test_a_broken_custom_matcher_does_not_break_parsing():
    def broken(action, admissible):
        raise RuntimeError("boom")

    assert parse_response("<action>look</action>", admissible=ADMISSIBLE, match=broken).errors == (NOT_ADMISSIBLE,)


def _check(parsed, admissible):
    assert set(parsed.errors) <= set(ERRORS)
    assert parsed.valid == (not parsed.errors)
    if parsed.valid and admissible is not None:
        assert parsed.action in admissible


PIECES = [*"<>/ actionhkrsw", "<action>", "</action>", "<think>", "</think>", "<search>", "</answer>", "look"]
TAGGY = st.lists(st.sampled_from(PIECES), max_size=40).map("".join)


@settings(max_examples=400, deadline=None)
@given(text=st.one_of(st.text(), TAGGY), require_think=st.booleans(), search=st.booleans(), listed=st.booleans())
def test_fuzz_never_raises(text, require_think, search, listed):
    admissible = ADMISSIBLE if listed else None
    parsed = parse_response(
        text, tags=SEARCH_TAGS if search else ("action",), admissible=admissible, require_think=require_think
    )
    _check(parsed, admissible)


def test_hostile_corpus_never_raises():
    for text in bad_actions(10_000, seed=3):
        for wrapped in (text, f"<action>{text}</action>", f"<think>{text}</think><action>{text}"):
            _check(parse_response(wrapped, admissible=ADMISSIBLE, require_think=True), ADMISSIBLE)


def test_huge_inputs_parse():
    for text in ("<" * 1_000_000, "<action" + " " * 1_000_000, "<action>" * 200_000, "{[<" * 300_000):
        _check(parse_response(text, admissible=ADMISSIBLE), ADMISSIBLE)
