"""TRL adapter: seed envs played through ``GRPOTrainer``'s own environment and tool-calling code.

The model is a tiny random Llama given Qwen2.5's tool-calling chat template (shipped in TRL).
Only its sampling is replaced, by a scripted player that writes tool calls
(``<tool_call>{"name": "act", ...}</tool_call>``); the rest is TRL's: the environment pool,
``reset`` with the dataset row, parsing the tool calls, calling ``act``, appending the tool
responses, the reward functions (which get the rollouts' environments) and one optimizer step.
"""

from __future__ import annotations

import copy
import json

import pytest
from integration_support import TEXT_ENVS, expert_outcome, expert_plans, expert_script, scripted_action

pytest.importorskip("trl", reason="the trl extra is not installed")
pytest.importorskip("torch")

from trl import GRPOConfig, GRPOTrainer
from trl.chat_template_utils import qwen2_5_chat_template

from seed_agent.tiny_models import tiny_llama
from seed_envs.integrations.trl import (
    SeedToolEnv,
    environment_factory,
    return_reward,
    score_reward,
    task_dataset,
    won_reward,
)

NUM_GENERATIONS = 2


@pytest.fixture(autouse=True)
def _quiet_trl(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("TRL_EXPERIMENTAL_SILENCE", "1")


def tool_call(action: str) -> str:
    return "<tool_call>\n" + json.dumps({"name": "act", "arguments": {"action": action}}) + "\n</tool_call><|im_end|>"


def scripted_trainer(tmp_path, factory, dataset, script, reward_funcs) -> GRPOTrainer:
    """A GRPOTrainer over a tiny model whose sampling plays ``script`` through the ``act`` tool."""
    model, tokenizer = tiny_llama()
    tokenizer = copy.deepcopy(tokenizer)
    tokenizer.chat_template = qwen2_5_chat_template
    args = GRPOConfig(
        output_dir=str(tmp_path),
        per_device_train_batch_size=len(dataset) * NUM_GENERATIONS,
        num_generations=NUM_GENERATIONS,
        max_steps=1,
        max_completion_length=2048,
        logging_steps=1,
        report_to=[],
        use_cpu=True,
        save_strategy="no",
    )
    trainer = GRPOTrainer(
        model=model,
        processing_class=tokenizer,
        args=args,
        train_dataset=dataset,
        environment_factory=factory,
        reward_funcs=reward_funcs,
    )

    def generate(prompt_ids, images, multimodal_fields, num_generations, has_tool_images=False):
        replies = []
        for ids in prompt_ids:
            text = tokenizer.decode(ids)
            action = scripted_action(script, text, turn=text.count("<tool_response>"))
            replies.append(tool_call(action) if action is not None else "I am done.<|im_end|>")
        return [tokenizer.encode(reply, add_special_tokens=False) for reply in replies], None

    trainer._generate_single_turn = generate  # the scripted player stands in for sampling
    return trainer


@pytest.mark.parametrize(("env_id", "env_kwargs"), TEXT_ENVS)
def test_a_grpo_step_plays_each_task_through_the_act_tool_and_its_outcome_is_the_reward(tmp_path, env_id, env_kwargs):
    dataset = task_dataset(env_id, "train", count=2, **env_kwargs)
    winning, losing = dataset["task_id"]
    wins = expert_script(env_id, "train", [winning], env_kwargs, extra=lambda plan: [*plan, plan[0]])
    loses = expert_script(env_id, "train", [losing], env_kwargs, extra=lambda plan: ["take a nap"])
    script = {**wins, **loses}
    expected = {
        winning: expert_outcome(env_id, "train", winning, env_kwargs, next(iter(wins.values()))),
        losing: expert_outcome(env_id, "train", losing, env_kwargs, ["take a nap"]),
    }
    assert expected[winning]["won"] and not expected[losing]["won"]
    seen = []

    def recorded_score(environments, prompts, completions, **kwargs):
        rewards = score_reward(environments, **kwargs)
        seen.extend(zip(environments, prompts, completions, rewards, strict=True))
        return rewards

    factory = environment_factory(env_id, **env_kwargs)
    trainer = scripted_trainer(tmp_path, factory, dataset, script, [recorded_score, won_reward])
    assert [tool.__name__ for tool in trainer._env_tools[None]] == ["act"]  # reset is not a tool
    trainer.train()

    assert len(seen) == 2 * NUM_GENERATIONS
    for env, prompt, completion, reward in seen:
        outcome = expected[env.task_id]
        assert isinstance(env, SeedToolEnv)
        assert reward == outcome["score"] and env.won == outcome["won"]
        assert env.total_reward == pytest.approx(outcome["total_reward"])
        assert "Your task is to:" in prompt[-1]["content"]  # reset's text reached the prompt
        answers = [message["content"] for message in completion if message["role"] == "tool"]
        if env.task_id == winning:
            assert "The episode is over" in answers[-2] and "already over" in answers[-1]
        else:
            assert len(answers) == 1 and not env.done
    log = trainer.state.log_history[0]
    mean_score = sum(expected[env.task_id]["score"] for env, *_ in seen) / len(seen)
    assert log["rewards/recorded_score/mean"] == pytest.approx(mean_score)
    assert log["rewards/won_reward/mean"] == pytest.approx(0.5)
    calls = sum(len(plan) for plan in script.values()) * NUM_GENERATIONS / len(seen)
    assert log["tools/call_frequency"] == pytest.approx(calls)
    assert log["tools/failure_frequency"] == 0.0


def test_the_return_reward_sums_the_env_rewards_of_the_rollout_after_worked_examples(tmp_path):
    env_id, env_kwargs = "seed/Sokoban-v0", {"observation_mode": "text", "max_solution_moves": 2}
    dataset = task_dataset(env_id, "valid_seen", count=1, examples=1, **env_kwargs)
    script = expert_script(env_id, "valid_seen", dataset["task_id"], env_kwargs)
    factory = environment_factory(env_id, "valid_seen", **env_kwargs)
    trainer = scripted_trainer(tmp_path, factory, dataset, script, [return_reward])
    trainer.train()
    outcome = expert_outcome(env_id, "valid_seen", dataset["task_id"][0], env_kwargs, next(iter(script.values())))
    assert outcome["total_reward"] > 1.0  # the step penalties and the solve bonus
    assert trainer.state.log_history[0]["rewards/return_reward/mean"] == pytest.approx(outcome["total_reward"])


def test_worked_examples_show_the_expert_calling_act_on_tasks_of_another_split():
    env_kwargs = {"observation_mode": "text"}
    dataset = task_dataset("seed/EZPoints-v0", "train", count=3, examples=2, **env_kwargs)
    prompt = dataset[0]["prompt"]
    assert [m["role"] for m in prompt] == ["system", "user", "assistant", "user", "assistant", "user"]
    assert all(row["prompt"] == prompt for row in dataset) and prompt[-1]["content"] == ""
    plans = expert_plans(
        "seed/EZPoints-v0", "valid_unseen", ["ezpoints/valid_unseen/0", "ezpoints/valid_unseen/1"], env_kwargs
    )
    for (opening, plan), user, assistant in zip(plans, prompt[1:5:2], prompt[2:5:2], strict=True):
        assert user["content"] == opening
        (call,) = assistant["tool_calls"]
        assert call["function"] == {"name": "act", "arguments": {"action": plan[0]}}
    tokenizer = copy.deepcopy(tiny_llama()[1])
    tokenizer.chat_template = qwen2_5_chat_template
    env = environment_factory("seed/EZPoints-v0", **env_kwargs)()
    text = tokenizer.apply_chat_template(prompt, tools=[env.act], tokenize=False)
    expected = json.dumps({"name": "act", "arguments": {"action": plans[0][1][0]}})
    assert f"<tool_call>\n{expected}\n</tool_call>" in text


def test_visual_envs_return_the_frame_with_the_text():
    env = environment_factory("seed/Sokoban-v0", max_solution_moves=1)()
    opening = env.reset(task_id="sokoban-6x6-b1-m1/train/3")
    assert [block["type"] for block in opening] == ["image", "text"]
    assert opening[0]["image"].size == (192, 192) and "Your task is to:" in opening[1]["text"]
    after = env.act("up")
    assert [block["type"] for block in after] == ["image", "text"]
    assert after[0]["image"].tobytes() != opening[0]["image"].tobytes() or "blocked" in after[1]["text"]


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValueError, match="unknown env id 'seed/Nope-v0'; the seed envs are: seed/ALFWorld-v0"):
        environment_factory("seed/Nope-v0")
    with pytest.raises(ValueError, match="unknown split 'test'"):
        environment_factory("seed/Corridor-v0", "test")
    with pytest.raises(TypeError, match="unexpected keyword argument 'colour'"):
        environment_factory("seed/Corridor-v0", colour="red")
    with pytest.raises(ValueError, match=r"has 200 tasks; tasks 150\.\.249 were asked for"):
        task_dataset("seed/Corridor-v0", "valid_seen", count=100, start=150)
    env = environment_factory("seed/Corridor-v0")()
    with pytest.raises(RuntimeError, match="before reset"):
        env.act("left")
    with pytest.raises(ValueError, match="not a task of this env"):
        env.reset(task_id="sokoban-6x6-b1/train/0")
    with pytest.raises(TypeError, match=r"seed_envs\.integrations\.trl\.environment_factory"):
        score_reward([object()])
