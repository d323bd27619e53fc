"""The warm start: expert demonstrations rendered with the run's prompts, the SFT, the cache, the refusals."""

from __future__ import annotations

import dataclasses
import json

import gymnasium as gym
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from corridor_support import TINY_CORRIDOR  # noqa: E402

from seed_agent.models import resolve_dtype  # noqa: E402
from seed_agent.prompts import PROMPT_MODULES  # noqa: E402
from seed_agent.skills import EPISODE_SKILL_HEADER, annotate  # noqa: E402
from seed_agent.tiny_models import tiny_random_policy  # noqa: E402
from seed_envs.core import MissingDataError  # noqa: E402
from seed_envs.corridor.env import CorridorEnv  # noqa: E402
from seed_rl.cli import main  # noqa: E402
from seed_rl.config import ConfigError, load_config  # noqa: E402
from seed_rl.train.setup.run_setup import make_env, run_prompt_builder  # noqa: E402
from seed_rl.train.stage1.expert import NoExpertError  # noqa: E402
from seed_rl.train.stage1.sft import stage1_key  # noqa: E402
from seed_rl.train.stage1.supervised import CachedAdapter, adapter_learner  # noqa: E402
from seed_rl.train.stage1.warm_start import (  # noqa: E402
    demonstration_pairs,
    demonstration_skills,
    held_out_split,
    play_demonstrations,
    run_warm_start,
    skill_injector,
    warm_start_key,
)

#: Every env of the suite, with the settings that make its tasks small (generated data where an
#: env has it); an env whose optional extra or data is missing here is skipped.
ENV_SETTINGS = {
    "seed/Corridor-v0": [],
    "seed/Sokoban-v0": ["env_kwargs={observation_mode: positions}"],
    "seed/EZPoints-v0": [],
    "seed/ALFWorld-v0": ["env_kwargs={difficulty: easy}"],
    "seed/WebShop-v0": [],
    "seed/SearchQA-v0": [],
}


def demo_config(env_id: str, *extra: str):
    cfg = load_config(None, [f"env={env_id}", "model=tiny-random", "progress=false", "max_steps=12", *extra])
    return dataclasses.replace(cfg, warm_start="expert")


def playable(cfg) -> None:
    try:
        make_env(cfg.env, "train", cfg.visual, dict(cfg.env_kwargs)).close()
    except MissingDataError as error:  # the env's data is not on disk here (a missing extra fails)
        pytest.skip(f"{cfg.env} cannot be created here: {error}")


def reply_tokens(text: str) -> int:
    return len(text.split())


@pytest.mark.parametrize("env_id", sorted(ENV_SETTINGS))
def test_demonstrations_are_the_run_prompts_with_the_expert_replies(env_id):
    cfg = demo_config(env_id, *ENV_SETTINGS[env_id], "warm_start_noise=0.0")
    playable(cfg)
    builder = run_prompt_builder(cfg)
    episodes = play_demonstrations(cfg, builder, 2)
    demos = demonstration_pairs(episodes, builder, count_reply_tokens=reply_tokens, max_new_tokens=64)
    rows = [r for e in episodes for r in e.rows]
    assert demos.steps == len(rows) and len(demos.pairs) == len(rows) - demos.unlabelled_steps > 0
    assert demos.noisy_steps == 0 and demos.cut_steps == 0
    assert any(e.won for e in episodes)  # the noise-free expert solves its tasks
    labelled = [r for r in rows if r.expert_action is not None]
    for row, (prompt, reply) in zip(labelled, demos.pairs, strict=True):
        assert prompt is row.prompt and prompt.meta["env"] == builder.spec.name
        assert row.observation.strip()[:80] in prompt.user_text  # the step's own observation
        parsed = builder.parse(reply, row.info.get("available_actions") or None)  # the reply after the prefill
        assert parsed.well_formed, (reply, parsed)
        assert builder.spec.to_env_action(parsed) == row.expert_action
    assert {e.task_id for e in episodes} <= {t for t in demos.tasks}
    assert all("/train/" in t or t.startswith("train") or "train" in t for t in demos.tasks)


def test_noisy_steps_keep_the_expert_label():
    cfg = demo_config("seed/Sokoban-v0", *ENV_SETTINGS["seed/Sokoban-v0"], "warm_start_noise=0.5")
    builder = run_prompt_builder(cfg)
    episodes = play_demonstrations(cfg, builder, 6)
    demos = demonstration_pairs(episodes, builder, count_reply_tokens=reply_tokens, max_new_tokens=64)
    assert demos.noisy_steps > 0
    noisy = [r for e in episodes for r in e.rows if r.expert_action is not None and r.action != r.expert_action]
    assert len(noisy) == demos.noisy_steps
    replies = {id(p): reply for p, reply in demos.pairs}
    for row in noisy:  # the label is the expert's reply from that state, not the random action taken
        assert row.expert_action in replies[id(row.prompt)] and row.action not in replies[id(row.prompt)]


def test_a_demonstration_longer_than_the_context_is_cut_by_whole_turns_and_counted():
    cfg = demo_config("seed/Sokoban-v0", *ENV_SETTINGS["seed/Sokoban-v0"], "history_length=4", "max_steps=8")
    words = lambda prompt: len(prompt.user_text.split())  # noqa: E731  (a model-free token count)
    full = run_prompt_builder(cfg)
    shortest = words(full.build("task", "observation", None))
    builder = run_prompt_builder(cfg, words, shortest + 60)  # room for about one turn of history
    episodes = play_demonstrations(cfg, builder, 4)
    demos = demonstration_pairs(episodes, builder, count_reply_tokens=reply_tokens, max_new_tokens=64)
    assert demos.cut_steps > 0
    cut = 0
    for prompt, _ in demos.pairs:
        assert words(prompt) <= shortest + 60 + 40  # within the budget (observations differ in length)
        step = prompt.meta["step"]
        cut += prompt.meta["history_turns"] < min(step - 1, builder.history_length)
    assert cut == demos.cut_steps
    long = demonstration_pairs(episodes, builder, count_reply_tokens=lambda text: 100, max_new_tokens=4)
    assert long.long_replies == long.steps - long.unlabelled_steps and not long.pairs


def test_skill_aware_demonstrations_render_each_step_with_and_without_its_episodes_skill():
    cfg = demo_config("seed/Sokoban-v0", *ENV_SETTINGS["seed/Sokoban-v0"], "warm_start_noise=0.3", "max_steps=6")
    builder = run_prompt_builder(cfg)
    episodes = play_demonstrations(cfg, builder, 6)
    skills = demonstration_skills(episodes, 30)
    words = lambda prompt: len(prompt.user_text.split())  # noqa: E731  (a model-free token count)
    plain = demonstration_pairs(episodes, builder, count_reply_tokens=reply_tokens, max_new_tokens=64)
    demos = demonstration_pairs(
        episodes,
        builder,
        count_reply_tokens=reply_tokens,
        max_new_tokens=64,
        skills=skills,
        inject_skill=skill_injector(words, 10_000),
    )
    assert demos.skill_pairs == len(plain.pairs) and len(demos.pairs) == 2 * len(plain.pairs)
    assert demos.pairs[0::2] == plain.pairs and demos.tasks[0::2] == plain.tasks == demos.tasks[1::2]
    by_task = {e.task_id: skill for e, skill in zip(episodes, skills, strict=True)}
    for (h, reply), (h_skill, skill_reply), task in zip(
        demos.pairs[0::2], demos.pairs[1::2], demos.tasks[0::2], strict=True
    ):
        assert skill_reply == reply and EPISODE_SKILL_HEADER not in h.user_text
        assert by_task[task].episode_skill in h_skill.user_text  # the annotator's skill of this very episode
        assert h_skill.prefill == h.prefill and h.user_text.split("\n")[-1] == h_skill.user_text.split("\n")[-1]
    episode = episodes[0]
    assert skills[0] == annotate(episode.trajectory(), episode.expert_plan, 30)
    tight = demonstration_pairs(
        episodes,
        builder,
        count_reply_tokens=reply_tokens,
        max_new_tokens=64,
        skills=skills,
        inject_skill=skill_injector(words, min(words(h) for h, _ in plain.pairs)),  # no room for a skill
    )
    assert tight.skill_pairs == 0 and tight.skill_cut_steps == len(plain.pairs) and tight.pairs == plain.pairs
    with pytest.raises(ValueError, match="one skill"):
        demonstration_pairs(episodes, builder, count_reply_tokens=reply_tokens, max_new_tokens=64, skills=skills)


def test_taken_skill_labels_follow_the_moves_a_won_episodes_skill_names():
    cfg = demo_config("seed/Sokoban-v0", *ENV_SETTINGS["seed/Sokoban-v0"], "warm_start_noise=0.35", "max_steps=6")
    builder = run_prompt_builder(cfg)
    episodes = play_demonstrations(cfg, builder, 24)
    skills = demonstration_skills(episodes, 30)
    words = lambda prompt: len(prompt.user_text.split())  # noqa: E731
    kwargs = dict(
        count_reply_tokens=reply_tokens, max_new_tokens=64, skills=skills, inject_skill=skill_injector(words, 10_000)
    )
    expert = demonstration_pairs(episodes, builder, **kwargs)
    taken = demonstration_pairs(episodes, builder, skill_labels="taken", **kwargs)
    assert taken.pairs[0::2] == expert.pairs[0::2]  # without a skill, the label stays the expert's
    replies = iter(zip(expert.pairs[1::2], taken.pairs[1::2], strict=True))
    differ = 0
    for episode in episodes:
        for row in episode.rows:
            (h_skill, expert_reply), (same_prompt, taken_reply) = next(replies)
            assert same_prompt == h_skill
            action = row.action if episode.won else row.expert_action
            assert builder.reply(action).endswith(taken_reply) and builder.reply(row.expert_action).endswith(
                expert_reply
            )
            differ += taken_reply != expert_reply
    assert differ == taken.skill_labels_taken > 0 and expert.skill_labels_taken == 0
    assert any(not e.won for e in episodes)  # lost episodes (avoidance rules) were there, and kept the expert's labels
    with pytest.raises(ConfigError, match="warm_start_skill_labels=taken needs"):
        load_config(None, ["model=tiny-random", "warm_start=expert", "warm_start_skill_labels=taken"])
    with pytest.raises(ConfigError, match="warm_start_skill_labels must be one of: expert, taken"):
        load_config(None, ["model=tiny-random", "warm_start=expert", "warm_start_skill_labels=skill"])
    keyed = lambda *extra: warm_start_key(demo_config(*extra))  # noqa: E731
    noisy = ("seed/Sokoban-v0", "warm_start_skills=true", "warm_start_noise=0.35")
    assert (
        keyed(*noisy, "warm_start_skill_labels=taken")
        != keyed(*noisy)
        == keyed(*noisy, "warm_start_skill_labels=expert")
    )


def test_held_out_demonstrations_are_whole_tasks():
    cfg = demo_config("seed/Corridor-v0", "max_steps=4")
    builder = run_prompt_builder(cfg)
    demos = demonstration_pairs(
        play_demonstrations(cfg, builder, 10), builder, count_reply_tokens=reply_tokens, max_new_tokens=8
    )
    train, held = held_out_split(demos, 0.2)
    assert held and train and sorted(train + held) == list(range(len(demos.pairs)))
    assert not {demos.tasks[i] for i in train} & {demos.tasks[i] for i in held}


def tiny_warm_config(*extra: str):
    return load_config(
        None,
        [
            *TINY_CORRIDOR,
            "warm_start=expert",
            "warm_start_demos=16",
            "warm_start_epochs=3",
            "warm_start_lr=3e-3",
            "warm_start_held_out=0.25",
            *extra,
        ],
    )


def test_the_warm_start_lowers_the_held_out_demonstration_loss_and_changes_the_policy(tmp_path):
    cfg = tiny_warm_config()
    policy = tiny_random_policy()
    before = {k: v.clone() for k, v in policy.model.state_dict().items()}
    report = run_warm_start(cfg, policy, tmp_path)
    assert not report["cached"] and report["held_out_pairs"] > 0 and report["train_pairs"] > 0
    assert report["held_out_loss_after"] < report["held_out_loss_before"]
    assert report["expert_success"] == 1.0
    after = policy.model.state_dict()
    assert set(after) == set(before)  # the adapter is merged: the same plain model, other weights
    assert any(not torch.equal(before[k], after[k]) for k in before)
    assert json.loads((tmp_path / "warm_start_report.json").read_text())["train_pairs"] == report["train_pairs"]


def test_the_adapter_is_cached_under_a_key_of_what_determines_it(tmp_path):
    cfg = tiny_warm_config("warm_start_epochs=1")
    first, second = tiny_random_policy(), tiny_random_policy()
    assert not run_warm_start(cfg, first, tmp_path / "a")["cached"]
    assert run_warm_start(cfg, second, tmp_path / "b")["cached"]
    for key, value in first.model.state_dict().items():
        assert torch.equal(value, second.model.state_dict()[key]), key
    key = warm_start_key(cfg)
    changes = ("warm_start_demos=12", "warm_start_noise=0.3", "warm_start_lr=1e-3", "warm_start_seed=1", "max_steps=3")
    for change in changes:
        assert warm_start_key(tiny_warm_config("warm_start_epochs=1", change)) != key, change
    # both arms of a comparison, and every training seed, start from the same adapter
    for same in ("algo=seed", "lambda_opd=0.5", "updates=3", "lr=1e-4", "seed=1", "sft_skill_words=20"):
        assert warm_start_key(tiny_warm_config("warm_start_epochs=1", same)) == key, same
    skill_aware = warm_start_key(tiny_warm_config("warm_start_epochs=1", "warm_start_skills=true"))
    assert skill_aware != key
    assert warm_start_key(tiny_warm_config("warm_start_epochs=1", "warm_start_skills=true", "sft_skill_words=20")) != (
        skill_aware
    )
    # `seed warmstart` leaves dtype=auto as written, a trainer resolves it: the two share the adapter
    resolved = resolve_dtype("auto", "cpu")
    for key_of in (warm_start_key, stage1_key):
        auto = key_of(dataclasses.replace(cfg, dtype="auto"))
        assert auto == key_of(dataclasses.replace(cfg, dtype=resolved)), key_of.__name__
        other = "float32" if resolved == "bfloat16" else "bfloat16"
        assert auto != key_of(dataclasses.replace(cfg, dtype=other)), key_of.__name__
    # Stage 1 composes on top: its adapter is keyed on the warm start it trained from
    assert stage1_key(cfg) != stage1_key(dataclasses.replace(cfg, warm_start="none"))
    assert stage1_key(cfg) != stage1_key(dataclasses.replace(cfg, warm_start_demos=12))


def test_the_warm_start_is_seeded_by_its_own_seed_and_leaves_the_runs_rng_alone(tmp_path, monkeypatch):
    weights = []
    for seed, cache in ((0, "a"), (1, "b")):  # two training seeds, each training the adapter afresh
        monkeypatch.setenv("SEED_CACHE_DIR", str(tmp_path / cache))
        policy = tiny_random_policy()
        torch.manual_seed(100 + seed)
        rng_before = torch.get_rng_state()
        run_warm_start(tiny_warm_config("warm_start_epochs=1", f"seed={seed}"), policy)
        assert torch.equal(torch.get_rng_state(), rng_before)  # the run's own draws are not shifted
        weights.append(policy.model.state_dict())
    for key, value in weights[0].items():
        assert torch.equal(value, weights[1][key]), key
    other = tiny_random_policy()
    run_warm_start(tiny_warm_config("warm_start_epochs=1", "warm_start_seed=1"), other)
    assert any(not torch.equal(v, other.model.state_dict()[k]) for k, v in weights[0].items())


def test_an_adapter_is_saved_even_where_its_cache_folder_went_while_it_trained(tmp_path):
    cfg = tiny_warm_config()
    learner = adapter_learner(cfg, tiny_random_policy(), lr=1e-3)
    with torch.no_grad():
        for parameter in learner.trainable_state().values():
            parameter.add_(0.5)
    cache = CachedAdapter(tmp_path / "cache" / "key", "adapter.safetensors", "report.json")
    cache.save(learner, {"trained": True})  # the folder was never made (or was removed meanwhile)
    fresh = adapter_learner(cfg, tiny_random_policy(), lr=1e-3)
    initial = {k: v.clone() for k, v in fresh.trainable_state().items()}
    assert cache.load(fresh) == {"trained": True, "cached": True, "loaded_from": str(cache.folder)}
    assert any(not torch.equal(initial[k], v) for k, v in fresh.trainable_state().items())
    for key, value in learner.trainable_state().items():
        assert torch.equal(value, fresh.trainable_state()[key]), key


def test_a_warm_start_on_a_valid_split_is_refused(capsys):
    for split in ("valid_seen", "valid_unseen"):
        with pytest.raises(ConfigError, match="train tasks only"):
            load_config(None, [*TINY_CORRIDOR, "warm_start=expert", f"split={split}"])
    assert main(["warmstart", *TINY_CORRIDOR, "--splits", "train"]) == 2
    assert "train tasks" in capsys.readouterr().err
    with pytest.raises(ConfigError, match="warm_start must be one of: none, expert"):
        load_config(None, [*TINY_CORRIDOR, "warm_start=teacher"])


class NoExpertCorridor(CorridorEnv):
    """The corridor without its expert."""

    def expert_plan(self) -> list[str] | None:
        return None


def test_an_env_without_an_expert_gets_an_error_naming_it(monkeypatch):
    env_id = "seed-test/NoExpertCorridor-v0"
    if env_id not in gym.registry:
        gym.register(id=env_id, entry_point=NoExpertCorridor)
    monkeypatch.setitem(PROMPT_MODULES, env_id, PROMPT_MODULES["seed/Corridor-v0"])  # the corridor's prompt
    cfg = tiny_warm_config(f"env={env_id}")
    with pytest.raises(NoExpertError, match=env_id):
        run_warm_start(cfg, tiny_random_policy())


def test_a_comparison_from_a_warm_start_evaluates_the_untrained_and_the_warm_started_model(tmp_path):
    from seed_rl.compare.arm_summary import arms_start
    from seed_rl.compare.comparison import evaluate_starts
    from seed_rl.compare.table import comparison_report

    cfg = tiny_warm_config("warm_start_epochs=1")
    tasks = {"valid_unseen": [0, 1]}
    starts = evaluate_starts(cfg, tasks, (0,), tmp_path)
    assert list(starts) == ["untrained", "warm start"] and arms_start(starts)[0] == "warm start"
    # each saved evaluation names the weights it played: the base model's is never reused for a warm start
    assert json.loads((tmp_path / "untrained_evaluation.json").read_text())["warm_start"] is None
    assert json.loads((tmp_path / "warm_start_evaluation.json").read_text())["warm_start"] == warm_start_key(cfg)
    base = evaluate_starts(dataclasses.replace(cfg, warm_start="none"), tasks, (0,), tmp_path)
    assert list(base) == ["untrained"] and base["untrained"] == starts["untrained"]
    report = comparison_report(starts, [], [])
    rows = [line.split("|")[1].strip() for line in report.splitlines() if line.startswith("| ")]
    assert rows[1:3] == ["untrained", "warm start"]  # under the header, before any arm
