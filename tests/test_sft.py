"""Stage 1: trajectory -> skill pairs (scripted or from an external analyzer), SFT, the cache."""

from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("peft")

from seed_agent.policies.base import Completion  # noqa: E402
from seed_agent.policies.server import serve_policy  # noqa: E402
from seed_agent.skills import extract_skill  # noqa: E402
from seed_agent.skills.analyzer import JSON_PREFILL  # noqa: E402
from seed_agent.tiny_models import tiny_random_policy  # noqa: E402
from seed_rl.config import load_config  # noqa: E402
from seed_rl.train.phases.skill_pass import AnalyzerSettings  # noqa: E402
from seed_rl.train.setup.run_setup import run_prompt_builder  # noqa: E402
from seed_rl.train.stage1.sft import (  # noqa: E402
    ACTING_LOSS_RISE,
    acting_loss_warning,
    collect_stage1_data,
    rehearsal_rows,
    replies_over_budget,
    run_stage1,
    skill_pairs,
    stage1_key,
)
from seed_rl.train.stage1.supervised import adapter_learner  # noqa: E402
from seed_rl.train.stage1.warm_start import demonstration_pairs  # noqa: E402

TINY = [
    "model=tiny-random",
    "max_steps=4",
    "progress=false",
    "max_new_tokens=6",
    "sft_tasks=3",
    "sft_rollouts=2",
    "sft_epochs=1",
    "sft_eval_trajectories=2",
    "analyzer_max_new_tokens=12",
]


@pytest.fixture(scope="module")
def data():
    cfg = load_config("sokoban_seed", TINY)
    return cfg, collect_stage1_data(cfg, tiny_random_policy())


def test_stage1_trajectories_come_from_the_policy_and_a_noisy_expert(data):
    cfg, collected = data
    assert len(collected.train) == 2 * cfg.sft_tasks and len(collected.held_out) >= 2
    own, expert = collected.train[: cfg.sft_tasks], collected.train[cfg.sft_tasks :]
    assert all(row.expert_action is not None or episode.won for episode in own for row in episode.rows[:1])
    assert any(e.won for e in expert)  # the noise-free expert slots solve their rooms
    assert all(r.response.startswith("<action>") for e in expert for r in e.rows)  # the policy's reply format
    train_ids = {e.task_id for e in collected.train}
    assert not train_ids & {e.task_id for e in collected.held_out}  # held-out tasks are other tasks


def test_scripted_pairs_are_the_analyzer_prompt_and_the_skill_json_after_the_prefill(data):
    cfg, collected = data
    settings = AnalyzerSettings(prefill=True)
    pairs = skill_pairs(cfg, collected.train, settings)
    assert len(pairs) == len(collected.train)
    for prompt, target in pairs:
        assert prompt.prefill and "Trajectory:" in prompt.user_text
        skill = extract_skill(prompt.prefill + target)
        assert skill.episode_skill and "step_skills" not in target


class CannedAnalyzer:
    """An external analyzer stand-in: answers every analyzer prompt with one fixed skill."""

    REPLY = '{"episode_summary": "It pushed.", "episode_skill": "Push the box toward the target."}'

    def generate(self, prompts, images=None, sampling=None):
        return [Completion(text=self.REPLY, finish_reason="stop") for _ in prompts]

    def score(self, prompts, completion_token_ids, images=None, temperature=1.0):
        raise NotImplementedError


def test_external_pairs_come_from_an_openai_compatible_analyzer(data):
    cfg, collected = data
    server, thread = serve_policy(CannedAnalyzer(), port=0, model_name="analyzer")
    try:
        host, port = server.server_address[:2]
        external = load_config(
            "sokoban_seed", [*TINY, "sft_source=external", f"sft_analyzer_url=http://{host}:{port}#analyzer"]
        )
        pairs = skill_pairs(external, collected.train[:3], AnalyzerSettings(prefill=False))
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=10)
    assert len(pairs) == 3
    assert all(extract_skill(t).episode_skill == "Push the box toward the target." for _, t in pairs)


def test_stage1_trains_merges_and_caches_the_adapter(tmp_path):
    cfg = load_config("sokoban_seed", [*TINY, f"run_dir={tmp_path / 'a'}", "sft_lr=0.01"])
    policy = tiny_random_policy()
    before = {n: p.detach().clone() for n, p in policy.model.named_parameters()}
    report = run_stage1(cfg, policy, tmp_path / "a")
    assert not report["cached"] and report["pairs"] > 0
    assert 0.0 <= report["parse_rate_before"] <= 1.0 and 0.0 <= report["parse_rate_after"] <= 1.0
    assert report["loss_last"] is not None
    # the acting role is measured on the expert's actions of the held-out trajectories, before and after
    assert report["acting_loss_before"] > 0 and report["acting_loss_after"] > 0
    assert report["acting_loss_after"] != report["acting_loss_before"]
    after = dict(policy.model.named_parameters())
    assert set(after) == set(before)  # merged: no adapter modules left
    assert any(not torch.equal(before[n], after[n]) for n in before)
    assert (tmp_path / "a" / "stage1_report.json").is_file()
    # a second run with the same settings loads the cached adapter, to the same weights
    again = tiny_random_policy()
    cached = run_stage1(cfg, again, tmp_path / "b")
    assert cached["cached"]
    for name, parameter in again.model.named_parameters():
        assert torch.equal(parameter, after[name]), name


def test_replies_longer_than_the_analyzer_may_write_are_counted(data):
    cfg, collected = data
    pairs = skill_pairs(cfg, collected.train, AnalyzerSettings(prefill=True))
    words = [len(reply.split()) for _, reply in pairs]
    budget = sorted(words)[len(words) // 2]

    def count_words(reply: str) -> int:
        return len(reply.split())

    count, longest = replies_over_budget(pairs, count_words, AnalyzerSettings(max_new_tokens=budget))
    assert longest == max(words) and count == sum(n > budget for n in words)
    assert replies_over_budget(pairs, count_words, AnalyzerSettings(max_new_tokens=max(words))) == (0, max(words))


def test_replies_over_the_analyzers_budget_lose_summary_sentences_not_skill_words(data):
    cfg, collected = data
    full = skill_pairs(cfg, collected.train, AnalyzerSettings(prefill=True))
    words = [len(reply.split()) for _, reply in full]
    settings = AnalyzerSettings(prefill=True, max_new_tokens=sorted(words)[len(words) // 2])

    def count_words(reply: str) -> int:
        return len(reply.split())

    fitted = skill_pairs(cfg, collected.train, settings, count_words)
    assert replies_over_budget(fitted, count_words, settings)[0] < replies_over_budget(full, count_words, settings)[0]
    for (_, before), (_, after) in zip(full, fitted, strict=True):
        old, new = extract_skill(JSON_PREFILL + before), extract_skill(JSON_PREFILL + after)
        assert new.episode_skill == old.episode_skill and old.episode_summary.startswith(new.episode_summary)
        if count_words(before) <= settings.max_new_tokens:
            assert after == before  # a reply that fits is left as it is
        else:  # shortened to fit, or to one sentence where nothing fits
            assert count_words(after) <= settings.max_new_tokens or new.episode_summary.count(". ") == 0


def test_stage1_warns_of_replies_the_analyzer_cannot_finish_and_counts_them(tmp_path, capsys):
    # the tiny tokenizer spells a skill JSON out in 60-220 tokens: every reply is over a 12-token budget,
    # with its summary cut to one sentence too
    cfg = load_config("sokoban_seed", [*TINY, f"run_dir={tmp_path}"])
    report = run_stage1(cfg, tiny_random_policy(), tmp_path)
    assert report["long_replies"] == report["pairs"] > 0
    out = capsys.readouterr().out
    assert f"{report['pairs']} of {report['pairs']} Stage-1 skill replies are longer than the analyzer may write" in out
    assert "analyzer_max_new_tokens is 12" in out and "Set analyzer_max_new_tokens=" in out
    assert "sft_skill_words" in out


def test_stage1_warns_when_it_unlearns_the_acting_role():
    assert acting_loss_warning(0.08, 0.08 + ACTING_LOSS_RISE) is None
    assert acting_loss_warning(None, 3.0) is None
    warning = acting_loss_warning(0.08, 2.5)
    assert warning and "0.080 to 2.500" in warning and "sft_lr" in warning


def test_rehearsal_draws_the_configured_number_of_expert_steps(data):
    cfg, collected = data
    policy = tiny_random_policy()
    learner = adapter_learner(cfg, policy, cfg.sft_lr)
    assert rehearsal_rows(cfg, learner, policy, collected.train) == []  # the default: skill pairs only
    some = load_config("sokoban_seed", [*TINY, "sft_acting_pairs=5"])
    rows = rehearsal_rows(some, learner, policy, collected.train)
    assert len(rows) == 5
    demos = demonstration_pairs(
        collected.train, run_prompt_builder(cfg), count_reply_tokens=policy.count_text_tokens, max_new_tokens=99
    )
    assert {policy.tokenizer.decode(r.token_ids) for r in rows} <= {reply for _, reply in demos.pairs}
    everything = load_config("sokoban_seed", [*TINY, "sft_acting_pairs=100000"])
    labelled = sum(r.expert_action is not None and r.prompt is not None for e in collected.train for r in e.rows)
    assert len(rehearsal_rows(everything, learner, policy, collected.train)) == labelled
    # the key counts in the adapter's cache key only when set, so that older adapters keep theirs
    assert stage1_key(some) != stage1_key(cfg) == stage1_key(load_config("sokoban_seed", TINY))


def test_rehearsal_keeps_the_acting_role_that_skill_pairs_alone_move_away_from(tmp_path):
    overrides = [*TINY, "sft_lr=0.01", "sft_epochs=2"]
    alone = run_stage1(load_config("sokoban_seed", [*overrides, f"run_dir={tmp_path}"]), tiny_random_policy(), tmp_path)
    both = run_stage1(
        load_config("sokoban_seed", [*overrides, "sft_acting_pairs=1000", f"run_dir={tmp_path}"]),
        tiny_random_policy(),
        tmp_path,
    )
    assert both["acting_pairs"] > 0 == alone["acting_pairs"]  # every labelled step, where fewer than asked
    assert both["acting_loss_before"] == pytest.approx(alone["acting_loss_before"])  # the same start
    assert both["acting_loss_after"] < alone["acting_loss_after"]
