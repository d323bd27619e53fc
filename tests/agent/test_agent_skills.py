from __future__ import annotations

import json

from hypothesis import given, settings
from hypothesis import strategies as st

from seed_agent.chat import IMAGE_PLACEHOLDER, SECTION_SEPARATOR
from seed_agent.prompts import PromptBuilder, prompt_spec
from seed_agent.skills import (
    EPISODE_SKILL_HEADER,
    NoSkill,
    Skill,
    SkillLibrary,
    analyzer_images,
    analyzer_prompt,
    extract_skill,
    inject,
    inject_within_budget,
)
from seed_agent.trajectory import StepRecord, Trajectory
from seed_envs.testing import bad_actions


def trajectory(won: bool, images: bool = False) -> Trajectory:
    steps = [
        StepRecord(
            "You are in a room.",
            "<think>go</think><action>go to fridge 1</action>",
            "go to fridge 1",
            True,
            has_image=images,
        ),
        StepRecord(
            "The fridge 1 is closed.",
            "<action>take mug 1</action>",
            "take mug 1",
            False,
            error="not_admissible",
            has_image=False,
        ),
        StepRecord("Nothing happens.", "<action>open fridge 1</action>", "open fridge 1", True, has_image=images),
    ]
    return Trajectory(env="alfworld", task="put a cool mug in cabinet.", steps=steps, won=won, score=float(won))


def test_analyzer_prompt_success_and_failure():
    ok = analyzer_prompt(trajectory(True)).user_text
    bad = analyzer_prompt(trajectory(False)).user_text
    for text in (ok, bad):
        assert "Task: put a cool mug in cabinet." in text
        assert "Step 1" in text and "Step 3" in text and "Observation: The fridge 1 is closed." in text
        # a reply that says more than its action is shown; a bare tagged action is not repeated
        assert "Agent response: <think>go</think><action>go to fridge 1</action>" in text
        assert "Agent response: <action>take mug 1</action>" not in text and "Action: take mug 1" in text
        assert "INVALID (not_admissible)" in text and "[valid]" in text
        for key in ("episode_summary", "episode_skill", "step_skills"):
            assert key in text
        assert "imperative" in text and IMAGE_PLACEHOLDER not in text
    assert "SUCCESS" in ok and "workflow" in ok and "avoidance rule" not in ok
    # every analysis starts with the same section, so a batch computes it once (a shared prefix)
    first = [analyzer_prompt(trajectory(won)).sections[0] for won in (True, False)]
    assert first[0] == first[1] and first[0].name == "format" and "episode_skill" in first[0].text
    assert ok.startswith(first[0].text) and bad.startswith(first[0].text)
    assert "FAILURE" in bad and "core mistake" in bad and "warning signs" in bad and "avoidance rule" in bad


def test_analyzer_prompt_shows_a_repeated_long_line_once_and_keeps_short_ones():
    legend = "Legend: # wall, _ floor, O target, X box, * box on a target, P you."
    steps = [StepRecord(f"######\n#P_X{i}#\n######\n{legend}", "<action>up</action>", "up", True) for i in range(3)]
    text = analyzer_prompt(Trajectory(env="sokoban", task="push", steps=steps, won=False)).user_text
    assert text.count(legend) == 1
    assert text.count("######") == 6 and all(f"#P_X{i}#" in text for i in range(3))


def test_visual_analyzer_has_a_placeholder_per_image():
    traj = trajectory(False, images=True)
    prompt = analyzer_prompt(traj, visual=True)
    assert prompt.image_count() == 2
    frames = ["frame1", None, "frame3"]
    assert analyzer_images(traj, frames) == ["frame1", "frame3"]


SKILL = {
    "episode_summary": "It went to the fridge.",
    "episode_skill": "Open a closed receptacle before taking.",
    "step_skills": [{"step": 2, "skill": "Open the fridge first."}],
}


def test_extraction_tolerates_common_mistakes():
    plain = json.dumps(SKILL)
    for reply in (
        plain,
        f"```json\n{plain}\n```\nHope this helps!",
        f"Here you go: {plain} Let me know.",
        str(SKILL),  # single quotes (a Python dict)
        plain.replace("}]", "},]").replace('"}', '",}'),  # trailing commas
    ):
        skill = extract_skill(reply)
        assert isinstance(skill, Skill), reply
        assert skill.episode_skill == SKILL["episode_skill"]
        assert skill.for_step(2) == "Open the fridge first." and skill.for_step(1) is None
    as_dict = extract_skill('{"episode_skill": "x", "step_skills": {"3": "y", "zero": "z", "0": "w"}}')
    assert as_dict.step_skills == ((3, "y"),)


def test_a_cut_off_reply_keeps_a_complete_episode_skill():
    cut = '{"episode_summary": "It pushed.", "episode_skill": "Push \\"down\\" first.", "step_skills": [{"step'
    skill = extract_skill(cut)
    assert isinstance(skill, Skill) and skill.episode_skill == 'Push "down" first.'
    assert skill.episode_summary == "It pushed." and skill.step_skills == ()
    # an unfinished skill string is no skill
    assert isinstance(extract_skill('{"episode_summary": "It pushed.", "episode_skill": "Push dow'), NoSkill)
    assert isinstance(extract_skill('{"episode_summary": "The agent pushed the box. The box'), NoSkill)


def test_extraction_failures_are_typed():
    for reply in ("no json here", '{"episode_summary": "only"}', '{"episode_skill": ""}', "{{{{", None, 42):
        result = extract_skill(reply)
        assert isinstance(result, NoSkill) and result.reason


@settings(max_examples=300, deadline=None)
@given(st.text() | st.binary().map(lambda b: b.decode("latin-1")))
def test_extraction_never_raises(reply):
    assert isinstance(extract_skill(reply), (Skill, NoSkill))


def test_extraction_survives_hostile_input():
    for text in bad_actions(2_000, seed=5):
        assert isinstance(extract_skill(text), (Skill, NoSkill))
    assert isinstance(extract_skill("{" * 100_000), NoSkill)
    assert isinstance(extract_skill('{"a": ' * 5_000), NoSkill)
    assert isinstance(extract_skill("[" * 100_000 + "{"), NoSkill)


def _h():
    return PromptBuilder(prompt_spec("alfworld"), style="act").build(
        "put a cool mug in cabinet.", "The fridge 1 is closed.", ["open fridge 1", "look"]
    )


def test_inject_places_skills_and_changes_nothing_else():
    h = _h()
    skill = Skill("Open a closed receptacle before taking.", step_skills=((1, "Open the fridge first."),))
    h_skill = inject(h, skill)
    names = h_skill.section_names()
    assert names[names.index("task") + 1] == "skill"
    assert names[names.index("observation") - 1] == "step_skill"
    assert h_skill.system == h.system and h_skill.examples == h.examples and h_skill.prefill == h.prefill
    assert [m["content"] for m in h_skill.messages()[:-1]] == [m["content"] for m in h.messages()[:-1]]
    # h_skill is h plus exactly the inserted blocks
    removed = h_skill.user_text
    for name in ("skill", "step_skill"):
        removed = removed.replace(h_skill.section(name).text + SECTION_SEPARATOR, "")
    assert removed == h.user_text
    assert EPISODE_SKILL_HEADER in h_skill.section("skill").text
    # no step skill for other steps; no change at all without a skill
    assert "step_skill" not in inject(h, skill, step=4).section_names()
    assert inject(h, NoSkill("failed")) == h and inject(h, None) == h


def test_inject_within_budget_shortens_the_skill_not_h():
    h = _h()

    def count(prompt):
        return len(prompt.render())

    long_skill = Skill("Check every receptacle carefully. " * 40, step_skills=((1, "Open it. " * 10),))
    full = inject(h, long_skill)
    prompt, used = inject_within_budget(h, long_skill, count, count(full))
    assert used == long_skill and prompt == full
    prompt, used = inject_within_budget(h, long_skill, count, count(h) + 400)
    assert count(prompt) <= count(h) + 400 and used is not None and not used.step_skills
    assert "more characters cut" in used.episode_skill
    prompt, used = inject_within_budget(h, long_skill, count, count(h) + 10)
    assert prompt == h and used is None


def test_static_library(tmp_path):
    library = SkillLibrary()
    library.add(
        "put a clean apple in fridge.", Skill("clean at the sinkbasin first"), task_type="clean", env="alfworld"
    )
    library.add("put a hot potato in countertop.", Skill("heat with the microwave"), task_type="heat", env="alfworld")
    library.add("put a clean mug in cabinet.", Skill("clean mug at sinkbasin"), task_type="clean", env="alfworld")
    library.add("buy red shoes", Skill("search then filter"), env="webshop")
    hit = library.retrieve("put a clean mug in coffeemachine.", task_type="clean")[0]
    assert hit.skill.episode_skill == "clean mug at sinkbasin"
    assert library.retrieve("heat some potato", env="alfworld")[0].task_type == "heat"
    # no word in common: ties go to the most recent entry first
    assert [e.task for e in library.retrieve("anything", task_type="clean", k=5)] == [
        "put a clean mug in cabinet.",
        "put a clean apple in fridge.",
    ]
    assert library.retrieve("x", env="sokoban") == []
    path = tmp_path / "library.json"
    library.save(path)
    loaded = SkillLibrary.load(path)
    assert loaded.entries == library.entries
