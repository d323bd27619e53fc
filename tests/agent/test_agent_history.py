from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from seed_agent.chat import ChatPrompt, Section
from seed_agent.history import (
    HISTORY_LENGTHS,
    MIN_OBSERVATION_CHARS,
    EpisodeHistory,
    PromptTooLong,
    cut_text,
    fit_prompt,
    render_turns,
)
from seed_agent.prompts import PromptBuilder, prompt_spec


def words(prompt: ChatPrompt) -> int:
    """A stand-in tokenizer: one token per whitespace-separated word of the rendered prompt."""
    return len(prompt.render().split())


def test_seed_history_lengths():
    assert HISTORY_LENGTHS == {"alfworld": 5, "webshop": 2, "searchqa": 4, "sokoban": 2, "ezpoints": 2}
    for name, k in HISTORY_LENGTHS.items():
        assert prompt_spec(name).history_length == k


def test_cut_text_marks_the_cut_and_respects_the_limit():
    text = "x" * 1000
    cut = cut_text(text, 100)
    assert len(cut) <= 100
    assert "more characters cut" in cut
    dropped = int(cut.split("[... ")[1].split(" ")[0])
    assert dropped == 1000 - cut.index(" [...")
    assert cut_text("short", 100) == "short"
    assert cut_text(text, None) == text


def test_history_keeps_steps_and_renders_the_last_k():
    history = EpisodeHistory()
    for i in range(1, 8):
        history.add(f"obs {i}", f"act {i}")
    assert history.next_step == 8
    recent = history.recent(3)
    assert [t.step for t in recent] == [5, 6, 7]
    text = render_turns(recent, None)
    assert "[Observation 5: 'obs 5', Action 5: 'act 5']" in text
    assert "obs 4" not in text
    assert history.recent(0) == []


def test_step_one_has_no_history_section_and_later_steps_do():
    builder = PromptBuilder(prompt_spec("alfworld"))
    history = EpisodeHistory()
    first = builder.build("put a mug in fridge.", "You are in a room.", ["look"], history)
    assert "history" not in first.section_names()
    assert "step 1" in first.section("observation").text
    for i in range(7):
        history.add(f"observation number {i + 1}", f"go to cabinet {i + 1}")
    later = builder.build("put a mug in fridge.", "You see a mug.", ["look"], history)
    shown = later.section("history").text
    assert "taken 7 step(s)" in shown and "most recent 5" in shown
    assert "observation number 2'" not in shown and "observation number 3'" in shown
    assert "step 8" in later.section("observation").text


def test_history_observations_are_cut_with_a_marker():
    spec = prompt_spec("sokoban")
    builder = PromptBuilder(spec)
    history = EpisodeHistory()
    history.add("y" * 5000, "up")
    prompt = builder.build("push", "now", ["up"], history)
    assert "more characters cut" in prompt.section("history").text
    assert len(prompt.section("history").text) < 5000


def _builder(budget: int) -> PromptBuilder:
    return PromptBuilder(prompt_spec("alfworld"), one_shot=False, count_tokens=words, max_prompt_tokens=budget)


def test_budget_drops_oldest_turns_first():
    history = EpisodeHistory()
    for i in range(5):
        history.add(f"turn{i} " + "word " * 50, f"action{i}")
    full = _builder(100_000).build("task", "current", ["look"], history)
    assert full.meta["history_turns"] == 5
    budget = words(full) - 60  # over budget by a bit more than one turn
    fitted = _builder(budget).build("task", "current", ["look"], history)
    assert words(fitted) <= budget
    assert fitted.meta["history_turns"] == 3 or fitted.meta["history_turns"] == 4
    kept = fitted.section("history").text
    assert "turn0" not in kept and "turn4" in kept  # the oldest went first


def test_budget_then_cuts_the_current_observation_then_raises():
    long_observation = "word " * 2000
    bare = _builder(100_000).build("task", "", ["look"])
    budget = words(bare) + 100
    fitted = _builder(budget).build("task", long_observation, ["look"])
    assert words(fitted) <= budget
    assert "more characters cut" in fitted.section("observation").text
    with pytest.raises(PromptTooLong, match="budget"):
        _builder(words(bare) - 5).build("task", long_observation, ["look"])


@settings(max_examples=60, deadline=None)
@given(
    observations=st.lists(st.text(min_size=0, max_size=400), max_size=6),
    current=st.text(max_size=3000),
    budget=st.integers(min_value=50, max_value=1500),
)
def test_a_fitted_prompt_is_never_over_budget(observations, current, budget):
    history = EpisodeHistory()
    for i, obs in enumerate(observations):
        history.add(obs, f"a{i}")
    try:
        prompt = _builder(budget).build("task", current, ["look", "go"], history)
    except PromptTooLong:
        # only when the barest prompt (no history, observation cut to the minimum) is too long
        bare = _builder(10**9)._prompt("task", current, ["look", "go"], history.next_step, [], MIN_OBSERVATION_CHARS)
        assert words(bare) > budget
        return
    assert words(prompt) <= budget


def test_fit_prompt_is_predictable():
    calls = []

    def build(n, chars):
        calls.append((n, chars))
        return ChatPrompt(
            system="",
            sections=(Section("observation", "o" * (chars or 1000)),),
            meta={"observation_chars": chars or 1000},
        )

    with pytest.raises(PromptTooLong):
        fit_prompt(build, 3, lambda p: 10**6, 10)
    assert calls[:4] == [(3, None), (2, None), (1, None), (0, None)]
    assert [c for _, c in calls[4:]] == [500, 250, 125, 64]
