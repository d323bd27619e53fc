"""The one rollout loop: batched decisions over a vector env, one row per env step."""

from __future__ import annotations

import sys
from pathlib import Path

import gymnasium as gym
import pytest

sys.path.insert(0, str(Path(__file__).resolve().parent / "agent"))

import seed_envs  # noqa: F401
from seed_agent.agent import LLMAgent, ScriptedAgent
from seed_agent.parsing import INVALID_ACTION_PENALTY
from seed_agent.policies.base import Completion, SamplingParams
from seed_agent.prompts import PromptBuilder, prompt_spec
from seed_agent.skills import analyzer_prompt
from seed_envs.vector import SeedVectorEnv, make_vec
from seed_rl.cli import main
from seed_rl.records.transcript import format_transcript
from seed_rl.rollout import EpisodeStart, group_starts, run_episodes


class PlanPolicy:
    """A test double that replies with each prompt's next expert action, read from a table
    keyed by the prompt's observation; it records how many prompts each call carried."""

    def __init__(self, replies):
        self.replies = replies  # observation text -> reply
        self.batch_sizes = []
        self.prompts = []

    def generate(self, prompts, images=None, sampling=None):
        self.batch_sizes.append(len(prompts))
        self.prompts += prompts
        out = []
        for prompt in prompts:
            observation = prompt.section("observation").text.split("observation is:\n", 1)[1]
            out.append(Completion(text=self.replies(observation), finish_reason="stop"))
        return out

    def score(self, prompts, completion_token_ids, images=None, temperature=1.0):
        raise NotImplementedError


def sokoban_vec(n, backend="sync"):
    return make_vec("seed/Sokoban-v0", n, backend=backend, workers=1, observation_mode="text")


def expert_replies(task_options, prefix=""):
    """Replies that follow each task's expert plan: observation text -> the expert's next action,
    recorded by playing the plans in a separate env."""
    env = gym.make("seed/Sokoban-v0", observation_mode="text")
    table = {}
    for options in task_options:
        obs, _ = env.reset(options=options)
        for action in env.unwrapped.expert_plan():
            table[obs["text"]] = action
            obs, *_ = env.step(action)
    return lambda observation: prefix + f"<action>{table[observation]}</action>", table


def test_llm_agent_decides_for_every_live_env_at_once_and_plays_the_expert_plan():
    options = [{"split": "valid_unseen", "index": i} for i in range(4)]
    replies, table = expert_replies(options, "<think>push</think>")
    policy = PlanPolicy(replies)
    agent = LLMAgent(policy, PromptBuilder(prompt_spec("sokoban"), style="think"))
    with sokoban_vec(4) as vec:
        episodes = run_episodes(vec, agent, [EpisodeStart(options=o) for o in options], env_id="seed/Sokoban-v0")
    assert [e.won for e in episodes] == [True] * 4
    assert sum(len(e.rows) for e in episodes) == len(table)
    # one generate call per turn, covering every live env
    assert policy.batch_sizes[0] == 4 and sum(policy.batch_sizes) == len(table)
    assert policy.batch_sizes == sorted(policy.batch_sizes, reverse=True)
    for episode in episodes:
        assert [row.step for row in episode.rows] == list(range(1, len(episode.rows) + 1))
        assert all(row.valid and row.prompt is not None for row in episode.rows)
        assert episode.parse_rate == 1.0
    long = max(episodes, key=lambda e: len(e.rows))
    if len(long.rows) > 1:
        assert f"Action 1: '{long.rows[0].action}'" in long.rows[1].prompt.section("history").text
    text = format_transcript(long, show_prompts=True)
    assert "won=True" in text and "[prompt]" in text


def test_unparsed_replies_are_invalid_penalised_once_and_the_episode_goes_on():
    class Confused(PlanPolicy):
        def __init__(self):
            super().__init__(lambda observation: "I am not sure.")

    policy = Confused()
    with sokoban_vec(1) as vec:
        episode = run_episodes(
            vec,
            LLMAgent(policy, PromptBuilder(prompt_spec("sokoban"), style="act")),
            [EpisodeStart(options={"split": "valid_unseen", "index": 0})],
        )[0]
    assert len(episode.rows) == 15 and episode.truncated and not episode.won  # the env's time limit
    assert episode.invalid_steps == 15
    assert all("unclosed_tag" in row.error for row in episode.rows)  # the prefill opened <action>
    for row in episode.rows:
        assert row.reward == pytest.approx(row.env_reward - INVALID_ACTION_PENALTY)
    assert episode.parse_rate == 0.0
    assert "FAILURE after 15 step(s)" in analyzer_prompt(episode.trajectory()).user_text


def test_more_episodes_than_envs_reuse_finished_envs_and_keep_the_order_of_starts():
    task_ids = [f"sokoban-6x6-b1/valid_seen/{i}" for i in range(3)]
    starts = group_starts(task_ids, group_size=3)
    assert [s.group for s in starts] == [0, 0, 0, 1, 1, 1, 2, 2, 2]
    with sokoban_vec(2) as vec:
        episodes = run_episodes(vec, ScriptedAgent("expert"), starts)
    assert [e.task_id for e in episodes] == [s.task_id for s in starts]
    assert [e.group for e in episodes] == [s.group for s in starts]
    assert all(e.won for e in episodes)
    assert all(e.expert_plan for e in episodes)


def test_record_expert_gives_each_step_the_experts_next_action():
    starts = [EpisodeStart(task_id="sokoban-6x6-b1/valid_seen/1")]
    with sokoban_vec(1) as vec:
        episode = run_episodes(vec, ScriptedAgent("random", seed=3), starts, record_expert=True)[0]
    trajectory = episode.trajectory()
    assert all(
        step.expert_action in ("up", "down", "left", "right") for step in trajectory.steps[:-1] if not episode.won
    )
    assert trajectory.info["expert_plan"] and trajectory.info["expert_plan"][0] == trajectory.steps[0].expert_action


def test_a_worker_failure_truncates_the_episode_and_is_reported():
    from crash_env import make_crash_env

    class Crasher:
        needs_expert_plan = False

        def reset(self, slot, info, expert_plan=None):
            pass

        def act(self, slots, observations, infos):
            from seed_agent.agent import AgentStep

            return [AgentStep("segfault" if slot == 0 else "ok", "x") for slot in slots]

    sys.path.insert(0, str(Path(__file__).resolve().parent))
    vec = SeedVectorEnv([make_crash_env] * 2, workers=2, backend="process")
    try:
        episodes = run_episodes(vec, Crasher(), [EpisodeStart(seed=0), EpisodeStart(seed=1)], max_steps=3)
    finally:
        vec.close()
    assert episodes[0].lost is not None and episodes[0].truncated and len(episodes[0].rows) == 1
    assert episodes[1].lost is None and len(episodes[1].rows) == 3
    assert vec.failures and vec.failures[0]["env_id"] == 0


def test_llm_agent_with_a_tiny_model_and_images(tiny_vl_policy):
    builder = PromptBuilder(prompt_spec("ezpoints"), style="act", visual=True)
    agent = LLMAgent(tiny_vl_policy, builder, SamplingParams(max_new_tokens=6, seed=0))
    with make_vec("seed/EZPoints-v0", 2, backend="sync", observation_mode="both") as vec:
        episodes = run_episodes(
            vec, agent, [EpisodeStart(options={"split": "valid_unseen", "index": i}) for i in range(2)]
        )
    for episode in episodes:
        assert 1 <= len(episode.rows) <= 8
        assert all(len(row.images) == 1 for row in episode.rows)
        assert all(row.token_ids and len(row.logprobs) == len(row.token_ids) for row in episode.rows)
        assert all(row.prompt_ids for row in episode.rows)


@pytest.mark.parametrize("env_id", ["seed/Sokoban-v0", "seed/EZPoints-v0"])
def test_scripted_agents(env_id):
    with make_vec(env_id, 1, backend="sync", observation_mode="text") as vec:
        start = [EpisodeStart(options={"split": "valid_unseen", "index": 2})]
        assert run_episodes(vec, ScriptedAgent("expert"), start)[0].won
        assert len(run_episodes(vec, ScriptedAgent("random", seed=1), start)[0].rows) >= 1
    with pytest.raises(KeyError):
        ScriptedAgent("oracle")


def test_seed_play_scripted(capsys):
    assert main(["play", "--env", "seed/Sokoban-v0", "--policy", "expert", "--episodes", "2"]) == 0
    out = capsys.readouterr().out
    assert out.count("=== result: won=True") == 2 and "won 2/2" in out
    assert main(["play", "--env", "seed/EZPoints-v0", "--policy", "random", "--split", "valid_seen"]) == 0
    assert "[valid_seen]" in capsys.readouterr().out


def test_seed_play_with_a_saved_model_folder(tmp_path, tiny_llama_policy, capsys):
    folder = tmp_path / "tiny"
    tiny_llama_policy.model.save_pretrained(folder)
    tiny_llama_policy.tokenizer.save_pretrained(folder)
    code = main(
        [
            "play",
            "--env",
            "seed/EZPoints-v0",
            "--policy",
            f"hf:{folder}",
            "--style",
            "act",
            "--max-new-tokens",
            "4",
            "--show-prompts",
        ]
    )
    assert code == 0
    out = capsys.readouterr().out
    assert "[prompt]" in out and "Your task is to:" in out and "parse rate" in out


def test_models_commands_name_the_fetch_command(capsys):
    assert main(["models", "path", "smollm2"]) == 1
    assert "seed models fetch smollm2" in capsys.readouterr().err
    assert main(["models", "list"]) == 0
    assert "not fetched" in capsys.readouterr().out
    assert main(["play", "--env", "seed/Sokoban-v0", "--policy", "smollm2"]) == 2
    assert "seed models fetch smollm2" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["play", "--env", "seed/Sokoban-v0", "--policy", "nonsense"])
