from __future__ import annotations

import gymnasium as gym
import pytest

import seed_envs  # noqa: F401
from seed_agent.chat import IMAGE_PLACEHOLDER
from seed_agent.history import EpisodeHistory
from seed_agent.prompts import PROMPT_MODULES, PromptBuilder, prompt_spec, task_line
from seed_agent.prompts.webshop import match_webshop_action
from seed_envs.core import MissingDataError

ENVS = list(PROMPT_MODULES)

# Observations in each benchmark's upstream format, for envs not tested against the real env here.
FAKE_STEPS = {
    "seed/ALFWorld-v0": (
        "put a cool mug in cabinet.",
        "You arrive at fridge 1. The fridge 1 is closed.",
        ["close fridge 1", "examine fridge 1", "go to cabinet 1", "help", "inventory", "look", "open fridge 1"],
        "open fridge 1",
    ),
    "seed/WebShop-v0": (
        "i want a pack of 3 blue ballpoint pens, and price lower than 20.00 dollars",
        "WebShop [SEP] Instruction: [SEP] i want a pack of 3 blue ballpoint pens, and price lower than 20.00 "
        "dollars [SEP] Search",
        ["search[<your query>]"],
        "search[blue ballpoint pens 3 pack]",
    ),
    "seed/SearchQA-v0": (
        "when was the eiffel tower built?",
        '\n\n<information>Doc 1(Title: "Eiffel Tower") The tower was built from 1887 to 1889.\n</information>\n\n',
        None,
        "1887 to 1889",
    ),
}


@pytest.mark.parametrize("env", ENVS)
@pytest.mark.parametrize("style", ["think", "act"])
def test_prompt_shows_everything_and_its_example_parses(env, style):
    spec = prompt_spec(env)
    builder = PromptBuilder(spec, style=style)
    history = EpisodeHistory()
    history.add("first observation", "first action")
    prompt = builder.build("do the thing", "the current observation", ["alpha", "beta"], history)
    text = prompt.user_text
    assert "Your task is to: do the thing" in text
    assert "step 2" in text and "first observation" in text and "the current observation" in text
    assert '"alpha", "beta"' in text
    tags = spec.tags
    assert all(f"<{t}>" in prompt.section("instruction").text for t in tags)
    assert ("<think>" in prompt.section("instruction").text) == (style == "think")
    assert prompt.section_names() == ["intro", "task", "history", "observation", "actions", "instruction"]
    # the one-shot example is an earlier chat turn, and its reply is valid by the builder's own rules
    assert [m.role for m in prompt.examples] == ["user", "assistant"]
    example = spec.example
    reply = prompt.examples[1].content
    completion = reply[len(builder.prefill) :] if reply.startswith(builder.prefill) else reply
    parsed = builder.parse(completion, list(example.available_actions) if example.available_actions else None)
    assert parsed.valid, parsed
    assert prompt.messages()[-1]["content"] == text


def test_act_style_prefills_the_action_tag():
    builder = PromptBuilder(prompt_spec("sokoban"), style="act")
    prompt = builder.build("push", "grid", ["up"])
    assert prompt.prefill == "<action>" and builder.stop == ("</action>",)
    assert builder.parse("up</action>", ["up", "down"]).action == "up"
    search = PromptBuilder(prompt_spec("searchqa"), style="act")
    assert search.prefill == "<" and search.parse("answer> Paris </answer>", None).action == "Paris"
    assert PromptBuilder(prompt_spec("sokoban"), style="think").prefill == ""


def test_visual_variant_has_one_placeholder_and_examples_have_none():
    builder = PromptBuilder(prompt_spec("ezpoints"), visual=True)
    prompt = builder.build("make 12", "The cards are shown in the image.", ["1", "="])
    assert prompt.image_count() == 1
    assert IMAGE_PLACEHOLDER in prompt.section("observation").text
    assert all(IMAGE_PLACEHOLDER not in m.content for m in prompt.examples)
    assert PromptBuilder(prompt_spec("ezpoints")).build("t", "o", ["1"]).image_count() == 0


def test_registry():
    assert prompt_spec("seed/Sokoban-v0") is prompt_spec("sokoban") is prompt_spec("seed_envs:seed/Sokoban-v0")
    for env in ENVS:
        assert prompt_spec(env).env_id == env
    with pytest.raises(KeyError, match="known envs"):
        prompt_spec("seed/Nope-v0")


def test_task_line_does_not_double_the_phrase():
    assert task_line("Your task is to: put a mug in fridge.") == "Your task is to: put a mug in fridge."
    assert task_line("  put\na mug ") == "Your task is to: put a mug"


def test_webshop_matching():
    assert match_webshop_action("search[red shoes]", ["search[<your query>]"]) == "search[red shoes]"
    assert match_webshop_action("search[red shoes]", ["click[back to search]"]) is None
    assert match_webshop_action("search[]", ["search[<your query>]"]) is None
    assert match_webshop_action("search[<your query>]", ["search[<your query>]"]) is None
    assert match_webshop_action('search[search[<query>]"]', ["search[<query>]"]) is None
    assert match_webshop_action("Click[Buy Now]", ["click[buy now]"]) == "click[buy now]"


@pytest.mark.parametrize("env", sorted(FAKE_STEPS))
def test_upstream_format_observations(env):
    task, observation, actions, action = FAKE_STEPS[env]
    spec = prompt_spec(env)
    builder = PromptBuilder(spec)
    prompt = builder.build(task, observation, actions)
    assert observation.strip() in prompt.user_text
    tag = spec.tags[0] if env != "seed/SearchQA-v0" else "answer"
    parsed = builder.parse(f"<think>ok</think><{tag}>{action}</{tag}>", actions)
    assert parsed.valid, parsed
    env_action = spec.to_env_action(parsed)
    assert env_action == (action if env != "seed/SearchQA-v0" else f"<answer> {action} </answer>")


def make_real_env(env_id):
    """The env in its text mode. Skips only where its data is not on disk (the error names the
    command that fetches it); a missing extra or any other error fails the test."""
    try:
        try:
            return gym.make(env_id, observation_mode="text")
        except TypeError:  # envs with text observations only
            return gym.make(env_id)
    except MissingDataError as error:
        pytest.skip(f"{env_id} cannot be created here: {error}")


def expert_reply(spec, action):
    """An expert action written as a model would answer our prompt."""
    body = action if spec.tags != ("action",) else f"<action>{action}</action>"
    return f"<think>follow the plan</think>{body}"


@pytest.mark.parametrize(
    "env_id", ["seed/ALFWorld-v0", "seed/Sokoban-v0", "seed/EZPoints-v0", "seed/WebShop-v0", "seed/SearchQA-v0"]
)
def test_prompts_against_the_real_env(env_id):
    """Expert actions, written as replies to our prompts, parse back to actions the env accepts."""
    env = make_real_env(env_id)
    builder = PromptBuilder(prompt_spec(env_id), style="think")
    history = EpisodeHistory()
    obs, info = env.reset(options={"split": "valid_unseen", "index": 3})
    plan = env.unwrapped.expert_plan()
    assert plan
    for expert_action in plan:
        prompt = builder.build(info["task"], obs["text"], info["available_actions"], history)
        assert obs["text"].strip()[:200] in prompt.user_text
        assert " ".join(info["task"].split())[:40] in prompt.user_text
        parsed = builder.parse(expert_reply(builder.spec, expert_action), info["available_actions"])
        assert parsed.valid, (expert_action, parsed)
        history.add(obs["text"], parsed.action)
        obs, _, terminated, truncated, info = env.step(builder.spec.to_env_action(parsed))
        assert info["action_valid"]
        if terminated or truncated:
            break
    assert info["won"]
