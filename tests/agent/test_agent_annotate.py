"""The scripted skill annotator on real episodes of the five envs.

Episodes are played on the real envs (generated offline): the expert for successes, the
random agent and a perturbed expert for failures. Before each step the helper asks
``env.unwrapped.expert_plan()`` for the expert's action from that state and records it in
``StepRecord.expert_action``, as a rollout that feeds the annotator does.
"""

from __future__ import annotations

import copy
import dataclasses
import json
import random
import re
from collections.abc import Callable
from typing import Any

import gymnasium as gym
import pytest

import seed_envs  # noqa: F401  (registers the ids)
from seed_agent.skills import (
    NoSkill,
    Skill,
    annotate,
    extract_skill,
    mentions_trajectory,
    skill_json,
    skill_words,
)
from seed_agent.skills.analyzer import JSON_PREFILL, STYLE_RULES
from seed_agent.skills.annotate import (
    EPISODE_SKILL_WORD_LIMIT,
    STEP_SKILL_WORD_LIMIT,
    env_name,
    first_divergence,
    fit_summary,
)
from seed_agent.trajectory import StepRecord, Trajectory
from seed_envs.baselines import RandomAgent

#: Safety cap on steps; every env here has its own, smaller time limit.
MAX_STEPS = 100
#: Task indices tried when looking for an episode with a given outcome.
TRIES = 25
#: What a perturbed agent may say where the env lists no actions (Search QA).
OPEN_ACTIONS = ("<answer> nobody knows </answer>", "<search> weather today </search>", "hello")

#: ``choose(step, observation, info, expert_action, initial_plan) -> action``.
Chooser = Callable[[int, dict, dict, "str | None", list[str]], str]


def _limit(what: str) -> int:
    """A word limit as the analyzer prompt states it ("... under N words")."""
    return int(re.search(rf"{what} under (\d+) words", STYLE_RULES).group(1))


EPISODE_LIMIT, STEP_LIMIT = _limit("episode skill"), _limit("each step skill")


# ------------------------------------------------------------------ playing
def record(env: gym.Env, env_id: str, choose: Chooser, options: dict[str, Any]) -> Trajectory:
    """Play one episode; ``choose`` gives each action (see :data:`Chooser`).

    ``expert_action`` is the first action of the env's expert plan from the state the agent
    acts on (None when the env has no plan there); it is stored in every StepRecord, and the
    plan from the initial state in ``trajectory.info["expert_plan"]``.
    """
    observation, info = env.reset(options=options)
    plan = list(env.unwrapped.expert_plan() or [])
    trajectory = Trajectory(
        env=env_id, task=info["task"], task_id=str(info.get("task_id", "")), info={"expert_plan": plan or None}
    )
    for number in range(1, MAX_STEPS + 1):
        expert = env.unwrapped.expert_plan()
        expert_action = expert[0] if expert else None
        action = choose(number, observation, info, expert_action, plan)
        next_observation, reward, terminated, truncated, info = env.step(action)
        valid = bool(info.get("action_valid", True))
        trajectory.steps.append(
            StepRecord(
                observation=observation["text"],
                response=action,
                action=action,
                valid=valid,
                reward=float(reward),
                error="" if valid else "rejected by the env",
                expert_action=expert_action,
            )
        )
        observation = next_observation
        if terminated or truncated:
            break
    trajectory.won = bool(info.get("won", False))
    trajectory.score = float(info.get("score", 0.0))
    trajectory.info["final_observation"] = observation["text"]
    return trajectory


def plan_agent(seed: int = 0, deviate_at: int | None = None) -> Chooser:
    """The expert: replays the initial plan (as ``seed_envs.baselines.ExpertAgent`` does), random
    once it is spent. With ``deviate_at``: another action at that step, random from then on."""
    rng, fallback = random.Random(seed), RandomAgent(seed)

    def choose(number: int, obs: dict, info: dict, expert: str | None, plan: list[str]) -> str:
        planned = plan[number - 1] if number <= len(plan) else None
        if deviate_at is not None and number == deviate_at:
            return rng.choice([a for a in info.get("available_actions") or OPEN_ACTIONS if a != planned])
        if planned is None or (deviate_at is not None and number > deviate_at):
            return fallback.act(obs, info)
        return planned

    return choose


def expert_agent(seed: int = 0) -> Chooser:
    return plan_agent(seed)


def perturbed_expert(at: int, seed: int = 0) -> Chooser:
    return plan_agent(seed, deviate_at=at)


def random_agent(seed: int = 0) -> Chooser:
    agent = RandomAgent(seed)
    return lambda number, obs, info, expert, plan: agent.act(obs, info)


def make_env(name: str) -> tuple[gym.Env, str]:
    """A real env of each kind, built offline (generated data), and its id."""
    if name == "sokoban":
        return gym.make("seed/Sokoban-v0", observation_mode="text"), "seed/Sokoban-v0"
    if name == "ezpoints":
        return gym.make("seed/EZPoints-v0", observation_mode="text"), "seed/EZPoints-v0"
    if name == "alfworld":
        pytest.importorskip("alfworld", reason="needs the alfworld extra")
        pytest.importorskip("fast_downward", reason="needs the alfworld extra")
        try:
            return gym.make("seed/ALFWorld-v0", difficulty="tiny"), "seed/ALFWorld-v0"
        except ImportError as error:  # pragma: no cover - depends on the install
            pytest.skip(f"the ALFWorld engine cannot be imported: {error}")
    if name == "webshop":
        pytest.importorskip("bm25s", reason="needs the webshop extra")
        return gym.make("seed/WebShop-v0", type_matcher="lexicon"), "seed/WebShop-v0"
    pytest.importorskip("bm25s", reason="needs the search extra")
    return gym.make("seed/SearchQA-v0", dataset="world-easy"), "seed/SearchQA-v0"


def task(index: int) -> dict[str, Any]:
    return {"split": "train", "index": index}


def find_episode(
    env: gym.Env, env_id: str, agent: Callable[[int], Chooser], won: bool, start: int = 0
) -> tuple[int, Trajectory]:
    """The first episode from task ``start`` on whose outcome is ``won``, and its task index."""
    for index in range(start, start + TRIES):
        trajectory = record(env, env_id, agent(index), task(index))
        if trajectory.won == won:
            return index, trajectory
    raise AssertionError(f"no {'won' if won else 'lost'} episode in {TRIES} tasks of {env_id}")


def find_failure(env: gym.Env, env_id: str, chooser: Callable[[int, list[str]], Chooser]) -> Trajectory:
    """The first lost episode of ``chooser(index, initial_plan)`` over the first tasks."""
    for index in range(TRIES):
        plan = record(env, env_id, expert_agent(index), task(index)).info["expert_plan"] or []
        trajectory = record(env, env_id, chooser(index, plan), task(index))
        if not trajectory.won:
            return trajectory
    raise AssertionError(f"no lost episode in {TRIES} tasks of {env_id}")


def perturb_step(plan: list[str]) -> int:
    """Where the perturbed expert deviates: at its second action, or its only one."""
    return min(2, max(1, len(plan)))


def say_first(text: str, seed: int) -> Chooser:
    """``text`` at step 1, random actions after it."""
    agent = RandomAgent(seed)
    return lambda number, obs, info, expert, plan: text if number == 1 else agent.act(obs, info)


#: An action no env accepts (no tag for Search QA, not a command or button elsewhere).
NONSENSE = "fly to the moon"


@dataclasses.dataclass
class Played:
    name: str
    success: Trajectory
    random_failure: Trajectory
    perturbed_failure: Trajectory
    invalid_failure: Trajectory
    replay: Trajectory  # the success's task, played again on a fresh env

    @property
    def failures(self) -> list[Trajectory]:
        return [self.random_failure, self.perturbed_failure, self.invalid_failure]

    @property
    def all(self) -> list[Trajectory]:
        return [self.success, *self.failures]


ENV_NAMES = ["sokoban", "ezpoints", "alfworld", "webshop", "searchqa"]


@pytest.fixture(scope="module", params=ENV_NAMES)
def played(request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory) -> Played:
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEED_CACHE_DIR", str(tmp_path_factory.getbasetemp() / "seed-cache"))
        patch.delenv("ALFWORLD_DATA", raising=False)
        env, env_id = make_env(request.param)
        index, success = find_episode(env, env_id, expert_agent, won=True)
        _, random_failure = find_episode(env, env_id, random_agent, won=False)
        perturbed = find_failure(env, env_id, lambda i, plan: perturbed_expert(perturb_step(plan), i))
        invalid = find_failure(env, env_id, lambda i, plan: say_first(NONSENSE, i))
        fresh, _ = make_env(request.param)
        replay = record(fresh, env_id, expert_agent(index), task(index))
        return Played(request.param, success, random_failure, perturbed, invalid, replay)


# ------------------------------------------------- independent expectations
def fold(text: str | None) -> str:
    return " ".join((text or "").split()).lower()


def tag_content(action: str) -> str:
    match = re.search(r"<(search|answer)>(.*?)</\1>", action, re.DOTALL)
    return fold(match.group(2)) if match else fold(action)


def result_title(observation: str, asin: str) -> str:
    fields = [f.strip() for f in observation.split("[SEP]")]
    return next((fields[i + 1] for i, f in enumerate(fields[:-1]) if f.lower() == asin), "")


def phrase(name: str, action: str, observation: str) -> str:
    """Words that a skill naming ``action`` (taken on ``observation``) must contain."""
    text = fold(action)
    if name == "alfworld":
        return re.sub(r" \d+\b", "", text)
    if name == "searchqa":
        return " ".join(tag_content(action).split()[:3])
    if name == "webshop":
        inner = re.fullmatch(r"(?:click|search)\[(.*)\]", text)
        inner_text = inner.group(1) if inner else text
        title = result_title(observation, inner_text)
        return fold(" ".join(title.split()[:3])) if title else " ".join(inner_text.split()[:3])
    return text


def expert_per_step(name: str, trajectory: Trajectory) -> list[str | None]:
    """The expert's action at each step: the recorded one; for WebShop, whose plan always starts
    with a search (legal on every page), the initial plan's action while the agent follows it."""
    if name != "webshop":
        return [step.expert_action for step in trajectory.steps]
    plan, out = trajectory.info["expert_plan"] or [], []
    for i, step in enumerate(trajectory.steps):
        followed = i < len(plan) and all(
            fold(s.action) == fold(a) for s, a in zip(trajectory.steps[:i], plan, strict=False)
        )
        out.append(plan[i] if followed else step.expert_action)
    return out


def divergence_step(name: str, trajectory: Trajectory) -> int:
    """The first invalid step or the first whose action differs from the expert's."""
    for number, (step, expert) in enumerate(
        zip(trajectory.steps, expert_per_step(name, trajectory), strict=True), start=1
    ):
        if not step.valid or (expert is not None and fold(step.action) != fold(expert)):
            return number
    raise AssertionError("the failure never left the expert's way")


def key_phrases(name: str, trajectory: Trajectory) -> list[str]:
    """What a success's workflow must name: the key actions the agent took."""
    actions = [step.action for step in trajectory.steps if step.valid and step.action]
    if name == "sokoban":
        return sorted(set(map(fold, actions)))
    if name == "ezpoints":
        return [" ".join(a for a in actions if a != "="), "="]
    if name == "alfworld":
        return [
            phrase(name, a, "") for a in actions if a.split()[0] not in ("go", "look", "inventory", "help", "examine")
        ]
    if name == "searchqa":
        return [tag_content(a) for a in actions]
    clicks = [re.fullmatch(r"click\[(.*)\]", a).group(1) for a in actions if a.startswith("click[")]
    options = [c for c in clicks if not re.fullmatch(r"b0[0-9a-z]{8}", c) and c != "buy now"]
    query = next(a for a in actions if a.startswith("search["))
    return [" ".join(fold(query).split()[:3]), "click[buy now]", *options]


def skill_text(skill: Skill) -> str:
    return fold(" ".join([skill.episode_skill, *(text for _, text in skill.step_skills)]))


# -------------------------------------------------------------------- tests
def test_skills_round_trip_through_extraction(played: Played):
    for trajectory in played.all:
        skill = annotate(trajectory)
        reply = skill_json(skill)
        assert extract_skill(reply) == skill
        assert "\n" not in reply and reply.startswith(JSON_PREFILL)
        keys = list(json.loads(reply))
        assert keys == ["episode_summary", "episode_skill", "step_skills"][: len(keys)] and len(keys) >= 2
        assert ("step_skills" in keys) == bool(skill.step_skills)
        short_reply = skill_json(skill, step_skills=False)
        assert list(json.loads(short_reply)) == ["episode_summary", "episode_skill"]
        assert extract_skill(short_reply) == dataclasses.replace(skill, step_skills=())


def test_word_limits_hold_even_for_long_episodes(played: Played):
    assert (EPISODE_SKILL_WORD_LIMIT, STEP_SKILL_WORD_LIMIT) == (EPISODE_LIMIT, STEP_LIMIT)  # the prompt's own
    longer = [dataclasses.replace(t, steps=t.steps * 8, task=" ".join([t.task] * 10)) for t in played.all]
    for trajectory in played.all + longer:
        skill = annotate(trajectory)
        assert 0 < len(skill.episode_skill.split()) < EPISODE_LIMIT
        assert all(0 < len(text.split()) < STEP_LIMIT for _, text in skill.step_skills)
        texts = [skill.episode_skill, *dict(skill.step_skills).values()]
        assert skill_words(skill) == sum(len(text.split()) for text in texts)


def test_annotation_is_deterministic(played: Played):
    for trajectory in played.all:
        assert annotate(copy.deepcopy(trajectory)) == annotate(trajectory)
        assert skill_json(annotate(trajectory)) == skill_json(annotate(trajectory))
    assert played.replay == played.success
    assert annotate(played.replay) == annotate(played.success)


def test_success_skill_is_the_workflow_of_the_actions_taken(played: Played):
    skill = annotate(played.success)
    text = skill_text(skill)
    for key in key_phrases(played.name, played.success):
        assert key in text, (key, skill.episode_skill)
    assert skill.episode_skill.startswith("To ")
    assert "succeeded" in skill.episode_summary and f"{len(played.success.steps)} step" in skill.episode_summary
    assert mentions_trajectory(skill, played.success)
    if played.name == "alfworld":  # instance numbers are stripped, the object and place kinds kept
        assert not re.search(r"\b\d+\b", skill.episode_skill)


def test_failure_skill_names_the_divergence_and_the_expert_action(played: Played):
    for trajectory in played.failures:
        number = divergence_step(played.name, trajectory)
        step = trajectory.steps[number - 1]
        expert = expert_per_step(played.name, trajectory)[number - 1]
        assert expert is not None
        divergence = first_divergence(trajectory)
        assert divergence is not None and divergence.step == number
        assert divergence.kind == ("invalid" if not step.valid else "off_plan")
        skill = annotate(trajectory)
        assert [n for n, _ in skill.step_skills] == [number]
        did, instead = phrase(played.name, step.action, step.observation), phrase(played.name, expert, step.observation)
        for text in (fold(skill.episode_skill), fold(skill.for_step(number))):
            assert did in text and instead in text, (did, instead, text)
        assert "failed" in skill.episode_summary and f"step {number}" in skill.episode_summary
        assert mentions_trajectory(skill, trajectory)


def test_the_experts_own_win_has_no_divergence(played: Played):
    assert first_divergence(played.success) is None
    assert first_divergence(played.success, played.success.info["expert_plan"]) is None


def test_perturbed_expert_is_caught_where_it_deviates(played: Played):
    trajectory = played.perturbed_failure
    plan = trajectory.info["expert_plan"]
    deviated = perturb_step(plan)
    assert fold(trajectory.steps[deviated - 1].action) != fold(plan[deviated - 1])
    assert first_divergence(trajectory).step <= deviated


def test_invalid_action_gets_the_admissible_rule(played: Played):
    skill = annotate(played.invalid_failure)
    assert first_divergence(played.invalid_failure).kind == "invalid"
    assert f"'{NONSENSE}'" in skill.episode_skill
    rule = "neither <search>" if played.name == "searchqa" else "admissible actions"
    assert rule in skill.episode_skill


def test_initial_plan_stands_in_for_missing_expert_actions(played: Played):
    for trajectory in played.failures:
        plan = trajectory.info["expert_plan"]
        bare = dataclasses.replace(
            trajectory, info={}, steps=[dataclasses.replace(s, expert_action=None) for s in trajectory.steps]
        )
        number = next(
            n
            for n, (s, a) in enumerate(zip(bare.steps, plan + [None] * len(bare.steps), strict=False), start=1)
            if not s.valid or fold(s.action) != fold(a)
        )
        assert first_divergence(bare, plan).step == number
        assert annotate(dataclasses.replace(bare, info={"expert_plan": plan})) == annotate(bare, plan)
        assert first_divergence(bare) is None or first_divergence(bare).kind != "off_plan"


def test_generic_phrasing_for_an_unknown_env(played: Played):
    for trajectory in played.all:
        unknown = dataclasses.replace(trajectory, env="acme/Maze-v2")
        skill = annotate(unknown)
        assert extract_skill(skill_json(skill)) == skill and mentions_trajectory(skill, unknown)
        assert len(skill.episode_skill.split()) < EPISODE_LIMIT
    success = dataclasses.replace(played.success, env="acme/Maze-v2")
    if len(success.steps) <= 4:  # short enough for every action to be listed
        for step in success.steps:
            assert fold(step.action) in fold(annotate(success).episode_skill)
    short_name = dataclasses.replace(played.success, env=played.name)
    assert annotate(short_name) == annotate(played.success)


def test_env_names():
    assert env_name("seed/Sokoban-v0") == "sokoban" and env_name("sokoban") == "sokoban"
    assert env_name("seed_envs:seed/WebShopBrowser-v0") == "webshop"
    assert env_name("seed/SearchQA-v0") == "searchqa" and env_name("seed/ALFWorld-v0") == "alfworld"
    assert env_name("EZPoints") == "ezpoints" and env_name("acme/Maze-v2") == "generic"


def test_a_loop_is_the_core_mistake_when_no_expert_is_known():
    env, env_id = make_env("sokoban")
    stuck = lambda number, obs, info, expert, plan: "up"  # noqa: E731
    trajectory = next(t for t in (record(env, env_id, stuck, task(i)) for i in range(TRIES)) if not t.won)
    bare = dataclasses.replace(
        trajectory, info={}, steps=[dataclasses.replace(s, expert_action=None) for s in trajectory.steps]
    )
    seen, number = set(), None
    for n, step in enumerate(bare.steps, start=1):
        situation = (fold(step.observation), fold(step.action))
        if situation in seen or (n > 2 and {fold(s.action) for s in bare.steps[n - 3 : n]} == {"up"}):
            number = n
            break
        seen.add(situation)
    divergence = first_divergence(bare)
    assert divergence is not None and (divergence.kind, divergence.step) == ("repeat", number)
    skill = annotate(bare)
    assert "repeat" in skill.episode_skill and "up" in skill.episode_skill and skill.for_step(number)


def corner_push(observation: str) -> str | None:
    """A move that pushes the box into a corner cell without a target, if the grid has one."""
    rows = [line for line in observation.splitlines() if line and set(line) <= set("#_OX*PS")]
    at = {(r, c): ch for r, row in enumerate(rows) for c, ch in enumerate(row)}
    ((pr, pc),) = (cell for cell, ch in at.items() if ch in "PS")
    for move, (dr, dc) in {"up": (-1, 0), "down": (1, 0), "left": (0, -1), "right": (0, 1)}.items():
        r, c = pr + 2 * dr, pc + 2 * dc
        wall = lambda *cells: any(at.get(cell) == "#" for cell in cells)  # noqa: E731
        if (
            at.get((pr + dr, pc + dc)) == "X"
            and at.get((r, c)) == "_"
            and wall((r - 1, c), (r + 1, c))
            and wall((r, c - 1), (r, c + 1))
        ):
            return move
    return None


def deviate_once(at: int, action: str, then: str | None = None) -> Chooser:
    """The initial plan, ``action`` at step ``at``, then ``then`` (default: ``action`` again)."""

    def choose(number: int, obs: dict, info: dict, expert: str | None, plan: list[str]) -> str:
        if number < at:
            return plan[number - 1]
        return action if number == at or then is None else then

    return choose


def test_pushing_a_box_into_a_corner_is_named():
    env, env_id = make_env("sokoban")
    for seed in range(4 * TRIES):
        trajectory = record(env, env_id, random_agent(seed), task(seed % TRIES))
        at = next(
            (
                n
                for n, s in enumerate(trajectory.steps, start=1)
                if s.expert_action is not None and corner_push(s.observation) == fold(s.action) != fold(s.expert_action)
            ),
            None,
        )
        if at is None:
            continue
        # Up to the push into the corner: the agent's own moves, then the expert's move there, as the plan.
        plan = [s.action for s in trajectory.steps[: at - 1]] + [trajectory.steps[at - 1].expert_action]
        cut = dataclasses.replace(
            trajectory,
            won=False,
            info={},
            steps=[dataclasses.replace(s, expert_action=None) for s in trajectory.steps[:at]],
        )
        assert first_divergence(cut, plan).step == at
        skill = annotate(cut, plan)
        assert "corner" in skill.episode_skill and trajectory.steps[at - 1].action in skill.for_step(at)
        return
    pytest.skip("no random episode pushed a box into a corner")


def test_put_instead_of_move_gets_the_alfworld_syntax_rule():
    env, env_id = make_env("alfworld")
    plan = record(env, env_id, expert_agent(), task(0)).info["expert_plan"]
    at = next(n for n, a in enumerate(plan, start=1) if a.startswith("move "))
    wrong = plan[at - 1].replace("move ", "put ", 1).replace(" to ", " in ", 1)
    trajectory = record(env, env_id, deviate_once(at, wrong), task(0))
    divergence = first_divergence(trajectory)
    assert not trajectory.won and (divergence.kind, divergence.step) == ("invalid", at)
    skill = annotate(trajectory)
    assert "'move X to Y'" in skill.episode_skill and phrase("alfworld", wrong, "") in skill.episode_skill
    assert phrase("alfworld", plan[at - 1], "") in skill.for_step(at)


def test_mentions_trajectory_needs_a_word_of_this_episode():
    sokoban_env, sokoban_id = make_env("sokoban")
    cards_env, cards_id = make_env("ezpoints")
    _, boxes = find_episode(sokoban_env, sokoban_id, expert_agent, won=True)
    _, cards = find_episode(cards_env, cards_id, expert_agent, won=True)
    assert mentions_trajectory(annotate(boxes), boxes) and mentions_trajectory(annotate(cards), cards)
    assert not mentions_trajectory(annotate(boxes), cards)
    assert not mentions_trajectory(annotate(cards), boxes)
    vague = Skill("First check the task, then follow the plan step by step and avoid every mistake.")
    assert not mentions_trajectory(vague, boxes) and not mentions_trajectory(vague, cards)
    assert not mentions_trajectory(NoSkill("no JSON"), boxes)
    assert mentions_trajectory(Skill("Walk around the boxes."), boxes)  # plural folded to "box"


def test_skill_words_counts_what_is_injected():
    episode, step = "Push the box left.", "Push left now."
    skill = Skill(episode, "A summary that is not injected.", ((2, step),))
    assert skill_words(skill) == len(episode.split()) + len(step.split())
    assert skill_words(NoSkill("none")) == 0 and skill_words(None) == 0


def test_skill_json_refuses_an_empty_skill():
    with pytest.raises(ValueError):
        skill_json(Skill("   "))


def test_max_words_caps_the_episode_skill():
    env = gym.make("seed/Sokoban-v0", observation_mode="text")
    trajectory = record(env, "seed/Sokoban-v0", random_agent(3), {"split": "valid_unseen", "index": 1})
    full, short_skill = annotate(trajectory), annotate(trajectory, max_words=20)
    assert len(short_skill.episode_skill.split()) < 20 <= len(full.episode_skill.split())
    assert short_skill.episode_summary == full.episode_summary


@pytest.mark.parametrize("index", [0, 3])
def test_corridor_skills_name_the_side_of_the_exit_only(index):
    """A won episode with a step into the wall names the exit's side only (a skill a small model
    follows by reading one word); a dead end's skill ends with the same rule."""
    assert env_name("seed/Corridor-v0") == "corridor"
    side = "left" if index % 2 == 0 else "right"
    wrong = "right" if side == "left" else "left"
    walls = gym.make("seed/Corridor-v0", dead_ends=False)
    bumped = record(
        walls, "seed/Corridor-v0", lambda n, *_: wrong if n == 1 else side, {"split": "train", "index": index}
    )
    dead_end = record(
        gym.make("seed/Corridor-v0"), "seed/Corridor-v0", lambda *_: wrong, {"split": "train", "index": index}
    )
    assert bumped.won and not dead_end.won
    success = annotate(bumped).episode_skill
    assert success == f"The exit is to the {side}: walk {side} every step until you reach it."
    failure = annotate(dead_end)
    assert f"Instead, walk {side}" in failure.episode_skill
    assert failure.episode_skill.endswith(f"The exit is to the {side}: walk {side} every step.")
    assert extract_skill(skill_json(failure)) == failure


def test_a_summary_loses_its_last_sentences_until_the_reply_fits_and_the_skill_never_changes():
    skill = Skill(
        "Avoid 'move up' at this point: it leads away from the goal. Instead, push left.",
        "The agent had to push the box onto the target. It failed after 3 steps (score 0). "
        "It first went wrong at step 1 with an off-plan action: 'move up'.",
        ((1, "Here: push left, not move up."),),
    )

    def within(words: int) -> Callable[[Skill], bool]:
        return lambda s: len(skill_json(s).split()) <= words

    full = len(skill_json(skill).split())
    assert fit_summary(skill, within(full)) == skill  # a reply that fits is left as it is
    two = fit_summary(skill, within(full - 1))
    assert two.episode_summary == "The agent had to push the box onto the target. It failed after 3 steps (score 0)."
    one = fit_summary(skill, within(len(skill_json(two).split()) - 1))
    assert one.episode_summary == "The agent had to push the box onto the target."
    assert fit_summary(skill, within(1)) == one  # nothing fits: the first sentence stays, the caller counts it
    for fitted in (two, one):
        assert (fitted.episode_skill, fitted.step_skills) == (skill.episode_skill, skill.step_skills)
        assert extract_skill(skill_json(fitted)) == fitted
