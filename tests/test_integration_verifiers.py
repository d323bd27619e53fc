"""verifiers adapter: seed tasks played as verifiers episodes by verifiers' own machinery.

Each episode goes through verifiers' loader (the env and taskset built from the taskset id),
``Env.run_episode``, the interaction channel, the tool-less chat harness run as a local
subprocess (verifiers prepares it as a uv script), the interception server and the eval client,
whose endpoint here is a scripted chat server standing in for a model. The harness's first run
installs its script's packages with uv, from the package index.
"""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from integration_support import TEXT_ENVS, expert_outcome, expert_plans
from pydantic import ValidationError
from scripted_chat import ScriptedChat, message_text

vf = pytest.importorskip("verifiers.v1", reason="the verifiers extra is not installed")

from seed_envs.integrations.session import EpisodeSession  # noqa: E402
from seed_envs.integrations.verifiers import (  # noqa: E402
    TASKSET_ID,
    SeedPlayerEnv,
    SeedPlayerEnvConfig,
    SeedTaskset,
    load_environment,
)

REPO_ROOT = Path(__file__).resolve().parents[1]
#: Where the test's Python lives: the venv whose ``uv`` runs the harness (it is on PATH only when activated).
VENV_BIN = str(Path(sys.executable).parent)


@pytest.fixture
def harness_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put the venv's ``uv`` on PATH for verifiers' subprocess runtime."""
    path = VENV_BIN + os.pathsep + os.environ.get("PATH", "")
    if shutil.which("uv", path=path) is None:
        pytest.skip("uv is not installed (the verifiers extra installs it)")
    monkeypatch.setenv("PATH", path)


def scripted_player(plans: dict[str, list[str]]):
    """Answers a conversation with the next action of the plan of its task (found by its opening)."""

    def reply(messages: list[dict]) -> str:
        opening = next(message_text(m) for m in messages if m["role"] == "user")
        plan = next(actions for start, actions in plans.items() if start in opening)
        turn = sum(m["role"] == "assistant" for m in messages)
        return f"Here is my move.\n<action>{plan[turn] if turn < len(plan) else 'nothing'}</action>"

    return reply


def play(env: SeedPlayerEnv, tasks: list, chat: ScriptedChat) -> list:
    """Run one episode of each task, concurrently, as verifiers' runners do."""
    client = vf.EvalClientConfig(base_url=chat.url, api_key_var="SEED_SCRIPTED_CHAT_KEY")
    context = vf.ModelContext(model="scripted", client=client)

    async def run() -> list:
        async with env.serving():
            return await asyncio.gather(*(env.run_episode(task, context) for task in tasks))

    return asyncio.run(run())


def test_verifiers_loader_builds_the_env_and_taskset_from_the_taskset_id():
    config = vf.resolve_env_config({"taskset": {"id": TASKSET_ID, "env_id": "seed/Corridor-v0", "split": "valid_seen"}})
    assert isinstance(config, SeedPlayerEnvConfig)
    env = vf.load_environment(config)
    assert isinstance(env, SeedPlayerEnv) and isinstance(env.taskset, SeedTaskset)
    assert config.player.harness.id == "null" and config.player.runtime.type == "subprocess"
    tasks = list(env.taskset)
    assert len(tasks) == 200 and env.taskset.bounded
    assert tasks[3].data.task_id == "corridor/valid_seen/3" and tasks[3].key == "seed/Corridor-v0:corridor/valid_seen/3"
    assert tasks[0].data.prompt is None and "<action>" in tasks[0].data.system_prompt
    train = load_environment("seed/Corridor-v0", start=5).taskset
    assert not train.bounded
    assert [task.data.task_id for task in train.take(2)] == ["corridor/train/5", "corridor/train/6"]


@pytest.mark.usefixtures("harness_path")
@pytest.mark.parametrize(("env_id", "env_kwargs"), TEXT_ENVS)
def test_the_player_plays_each_reply_and_the_trace_reward_is_the_env_score(env_id, env_kwargs):
    env = load_environment(env_id, "valid_seen", env_kwargs=env_kwargs)
    task = next(iter(env.taskset))
    opening, plan = expert_plans(env_id, "valid_seen", [task.data.task_id], env_kwargs)[0]
    with ScriptedChat(scripted_player({opening: plan})) as chat:
        (episode,) = play(env, [task], chat)
    assert episode.ok, episode.errors
    (trace,) = episode.traces
    outcome = expert_outcome(env_id, "valid_seen", task.data.task_id, env_kwargs, plan)
    assert outcome["won"]
    assert trace.rewards["score"].score == outcome["score"] and trace.reward == outcome["score"]
    assert trace.metrics == {"won": 1.0, "steps": float(len(plan))}
    assert trace.info["task_id"] == task.data.task_id
    assert len(chat.requests) == len(plan)  # one model turn per action; the episode's end ends the exchange
    first = chat.requests[0]["messages"]
    assert first[0]["role"] == "system" and "<action>" in first[0]["content"]
    assert message_text(first[1]) == opening
    session = EpisodeSession(env_id, "valid_seen", **env_kwargs)
    session.reset(task_id=task.data.task_id)
    for action, request in zip(plan, chat.requests[1:], strict=False):
        *_, reply, answer = request["messages"]
        assert reply["content"] == f"Here is my move.\n<action>{action}</action>"
        assert message_text(answer) == session.act(action).text  # the env's answer is the next user turn
    session.close()


@pytest.mark.usefixtures("harness_path")
def test_losing_and_the_step_limit_end_the_episode_with_the_score_so_far():
    env = load_environment("seed/Corridor-v0", "valid_seen", env_kwargs={"max_episode_steps": 2})
    wrong_way, stalled = list(env.taskset.take(2))
    plans = dict(expert_plans("seed/Corridor-v0", "valid_seen", [wrong_way.data.task_id, stalled.data.task_id], {}))
    side = {"left": "right", "right": "left"}
    script = {
        opening: [side[plan[0]]] if i == 0 else ["jump", "jump"] for i, (opening, plan) in enumerate(plans.items())
    }
    with ScriptedChat(scripted_player(script)) as chat:
        lost, timed_out = play(env, [wrong_way, stalled], chat)
    assert lost.ok and timed_out.ok
    assert lost.traces[0].reward == 0.0 and lost.traces[0].metrics == {"won": 0.0, "steps": 1.0}
    assert timed_out.traces[0].reward == 0.0 and timed_out.traces[0].metrics == {"won": 0.0, "steps": 2.0}
    assert timed_out.traces[0].info["outcome"] == "not won, score 0.00"
    assert len(chat.requests) == 3  # one wrong step, two invalid ones: then each episode is over


@pytest.mark.usefixtures("harness_path")
def test_a_visual_env_sends_each_frame_as_an_image_part():
    env_kwargs = {"max_solution_moves": 1}
    env = load_environment("seed/Sokoban-v0", "valid_seen", env_kwargs=env_kwargs)
    task = next(iter(env.taskset))
    opening, plan = expert_plans("seed/Sokoban-v0", "valid_seen", [task.data.task_id], env_kwargs)[0]
    with ScriptedChat(scripted_player({opening: plan})) as chat:
        (episode,) = play(env, [task], chat)
    assert episode.ok and episode.traces[0].reward == 1.0
    parts = chat.requests[0]["messages"][1]["content"]
    assert [part["type"] for part in parts] == ["image_url", "text"]
    assert parts[0]["image_url"]["url"].startswith("data:image/png;base64,")
    assert "shown in the image" in parts[1]["text"]


@pytest.mark.usefixtures("harness_path")
def test_vf_eval_runs_the_seed_taskset_from_the_command_line(tmp_path):
    env_kwargs = {"max_distance": 2}
    ids = ["corridor/valid_seen/2", "corridor/valid_seen/3"]  # two steps each
    plans = dict(expert_plans("seed/Corridor-v0", "valid_seen", ids, env_kwargs))
    command = [VENV_BIN + "/vf-eval", TASKSET_ID, "--env.taskset.env-id", "seed/Corridor-v0"]
    command += ["--env.taskset.split", "valid_seen", "--env.taskset.start", "2"]
    command += ["--env.taskset.env-kwargs", json.dumps(env_kwargs)]
    command += ["--select.limit", "2", "-m", "scripted", "--no-push", "-o", str(tmp_path)]
    environment = {**os.environ, "SEED_SCRIPTED_CHAT_KEY": "unused", "PYTHONPATH": str(REPO_ROOT)}
    with ScriptedChat(scripted_player(plans)) as chat:
        command += ["--client.base-url", chat.url, "--client.api-key-var", "SEED_SCRIPTED_CHAT_KEY"]
        result = subprocess.run(command, env=environment, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    (traces,) = tmp_path.glob("*/traces.jsonl")
    episodes = [json.loads(line) for line in traces.read_text().splitlines()]
    assert sorted(e["task"]["data"]["task_id"] for e in episodes) == ids
    for episode in episodes:
        (trace,) = episode["traces"]
        assert episode["ok"] and trace["rewards"]["score"]["score"] == 1.0
        assert trace["metrics"] == {"won": 1.0, "steps": 2.0}
    assert len(chat.requests) == sum(len(plan) for plan in plans.values())


def test_bad_input_is_refused_with_a_clear_message():
    with pytest.raises(ValidationError, match="unknown env id 'seed/Nope-v0'; the seed envs are"):
        load_environment("seed/Nope-v0")
    with pytest.raises(ValidationError, match="unknown split 'test'"):
        load_environment("seed/Corridor-v0", "test")
    with pytest.raises(ValidationError, match="greater than or equal to 0"):
        load_environment("seed/Corridor-v0", start=-1)
