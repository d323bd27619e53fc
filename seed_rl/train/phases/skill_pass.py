"""SEED's two extra passes over a batch of finished episodes.

1. **Analysis** (:func:`write_skills`): one hindsight skill per episode, from
   - the current policy, frozen and greedy (``analyzer=self``, the paper's setting),
   - the policy as it was when RL began (``analyzer=frozen-initial``, an ablation),
   - an OpenAI-compatible server (``analyzer=http://HOST:PORT#MODEL``, as the paper's Stage 1
     uses a large model; :func:`external_analyzer`),
   - the offline scripted annotator (``analyzer=scripted``: an oracle of good skills, a
     diagnostic, never the SEED row),
   - or a static library built once from early rollouts (``skills=static-library``).
   A reply that does not parse means no OPD for that episode; GRPO still applies.
2. **Teacher prompts** (:func:`teacher_prompts`): for every step of an episode with a skill,
   ``h_skill = inject(h, skill)``, kept within the context by shortening the skill, never ``h``.
   :func:`teacher_logprobs` scores the sampled action tokens there without gradient.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import torch

from seed_agent.chat import ChatPrompt
from seed_agent.policies.base import Policy, SamplingParams
from seed_agent.skills import (
    JSON_PREFILL,
    NoSkill,
    Skill,
    SkillLibrary,
    SkillResult,
    analyzer_images,
    analyzer_prompt,
    extract_skill,
    inject_within_budget,
)
from seed_agent.skills.annotate import annotate
from seed_agent.skills.quality import mentions_trajectory
from seed_rl.config import TrainConfig
from seed_rl.progress import bar
from seed_rl.records.rows import ScoreRow
from seed_rl.rollout import Episode
from seed_rl.train.learner.learner import Learner


def external_analyzer(url: str) -> Policy:
    """The OpenAI-compatible server at ``url`` (``http://HOST:PORT[#MODEL]``) as an analyzer."""
    from seed_agent.policies.http import HttpPolicy

    base, _, model = url.partition("#")
    return HttpPolicy(base, model or "default")


#: Below this parse rate a run warns: OPD then rarely fires.
LOW_PARSE_RATE = 0.5
#: Episodes analysed per ``generate`` call.
ANALYSIS_CHUNK = 8


@dataclass(frozen=True)
class AnalyzerSettings:
    """How the analyzer writes skills: length cap, prefill, step skills, repetition penalty."""

    max_new_tokens: int = 160
    prefill: bool = True
    step_skills: bool = False
    failed_only: bool = False
    visual: bool = False
    observation_chars: int = 300
    response_chars: int = 200
    #: Greedy decoding of a small model loops ("left, right, left, right, ..."); > 1 breaks loops.
    repetition_penalty: float = 1.0

    @classmethod
    def from_config(cls, cfg: TrainConfig) -> AnalyzerSettings:
        """A run's analyzer settings."""
        return cls(
            max_new_tokens=cfg.analyzer_max_new_tokens,
            prefill=cfg.analyzer_prefill,
            step_skills=cfg.step_skills,
            failed_only=cfg.failed_only,
            visual=cfg.visual,
            repetition_penalty=cfg.analyzer_repetition_penalty,
        )

    @property
    def sampling(self) -> SamplingParams:
        """Greedy, stopped at the closing brace of the JSON object when only the episode skill is
        asked for (nested ``step_skills`` objects would end it early)."""
        stop = () if self.step_skills else ("}",)
        return SamplingParams(
            temperature=0.0, max_new_tokens=self.max_new_tokens, stop=stop, repetition_penalty=self.repetition_penalty
        )

    def analyses(self, episode: Episode) -> bool:
        """Whether ``episode`` is analysed (not a success under ``failed_only``)."""
        return not (self.failed_only and episode.won)

    def prompt(self, episode: Episode) -> ChatPrompt:
        return analyzer_prompt(
            episode.trajectory(),
            visual=self.visual,
            step_skills=self.step_skills,
            prefill=JSON_PREFILL if self.prefill else "",
            observation_chars=self.observation_chars,
            response_chars=self.response_chars,
        )


@dataclass
class SkillReport:
    """What the analysis of one batch produced (all counts over the episodes analysed)."""

    analyzed: int = 0
    parsed: int = 0
    mentions: int = 0
    generated_tokens: int = 0
    #: Replies the analyzer generated: one per distinct prompt (greedy decoding, :func:`distinct`).
    replies: int = 0
    skill_tokens: list[int] = field(default_factory=list)
    seconds: float = 0.0
    failures: list[str] = field(default_factory=list)

    @property
    def parse_rate(self) -> float:
        return self.parsed / self.analyzed if self.analyzed else float("nan")

    @property
    def mention_rate(self) -> float:
        return self.mentions / self.parsed if self.parsed else float("nan")

    def metrics(self) -> dict[str, float]:
        mean_tokens = sum(self.skill_tokens) / len(self.skill_tokens) if self.skill_tokens else float("nan")
        return {
            "skill_parse_rate": self.parse_rate,
            "skill_mentions_trajectory": self.mention_rate,
            "skill_tokens_mean": mean_tokens,
            "skills_analyzed": float(self.analyzed),
            "analyzer_tokens_generated": float(self.generated_tokens),
            "analyzer_replies": float(self.replies),
        }


def distinct(prompts: Sequence[ChatPrompt]) -> tuple[list[ChatPrompt], list[int]]:
    """The distinct prompts in first-seen order, and for each prompt the index of its own among them."""
    index: dict[ChatPrompt, int] = {}
    slots = [index.setdefault(prompt, len(index)) for prompt in prompts]
    return list(index), slots


def write_skills(
    episodes: Sequence[Episode],
    *,
    source: str,
    settings: AnalyzerSettings,
    policy: Policy | None = None,
    library: SkillLibrary | None = None,
    count_tokens: Callable[[str], int] | None = None,
    on_analyzed: Callable[[int], None] | None = None,
) -> tuple[list[SkillResult | None], SkillReport]:
    """One skill per episode (None where the episode was not analysed, e.g. a success under
    ``failed_only``). ``source``: ``policy`` (greedy generation with ``policy``), ``scripted``
    or ``library`` (retrieval from ``library`` by task type and task text).

    ``count_tokens`` measures a skill's length for the report (the policy's tokenizer);
    ``on_analyzed(n)`` is called as each chunk of ``n`` episodes is done.

    The analyzer decodes greedily, so episodes whose prompts are equal (a group's episodes that
    took the same actions) get one reply, generated once (``report.replies``).
    """
    started = time.perf_counter()
    chosen = [i for i, e in enumerate(episodes) if settings.analyses(e)]
    skills: list[SkillResult | None] = [None] * len(episodes)
    report = SkillReport(analyzed=len(chosen))
    if source == "policy":
        if policy is None:
            raise ValueError("source='policy' needs a policy")
        prompts = [settings.prompt(episodes[i]) for i in chosen]
        images = None
        if settings.visual:
            images = [
                analyzer_images(episodes[i].trajectory(), [r.images[0] if r.images else None for r in episodes[i].rows])
                for i in chosen
            ]
            asked, reply_of = prompts, list(range(len(prompts)))
        else:  # greedy: episodes that read alike (a group's that took the same actions) share one reply
            asked, reply_of = distinct(prompts)
        completions = []
        for start in range(0, len(asked), ANALYSIS_CHUNK):  # chunks, so progress can be shown
            part = slice(start, start + ANALYSIS_CHUNK)
            completions += policy.generate(
                asked[part], images=images[part] if images else None, sampling=settings.sampling
            )
            if on_analyzed is not None:
                on_analyzed(sum(start <= k < start + ANALYSIS_CHUNK for k in reply_of))
        for i, prompt, k in zip(chosen, prompts, reply_of, strict=True):
            skills[i] = extract_skill(prompt.prefill + completions[k].text)
        report.replies = len(completions)
        report.generated_tokens = sum(len(c.token_ids) for c in completions)
    elif source == "scripted":
        for i in chosen:
            trajectory = episodes[i].trajectory()
            skills[i] = annotate(trajectory, episodes[i].expert_plan)
    elif source == "library":
        if library is None:
            raise ValueError("source='library' needs a library")
        for i in chosen:
            episode = episodes[i]
            found = library.retrieve(episode.task, task_type=episode.start_info.get("task_type"), env=episode.env_id)
            skills[i] = found[0].skill if found else NoSkill("the library has no skill for this task")
    else:
        raise ValueError(f"unknown skill source {source!r}; expected policy, scripted or library")
    for i in chosen:
        skill = skills[i]
        if isinstance(skill, Skill):
            report.parsed += 1
            report.mentions += mentions_trajectory(skill, episodes[i].trajectory())
            if count_tokens is not None:
                report.skill_tokens.append(count_tokens(skill.episode_skill))
        elif isinstance(skill, NoSkill):
            report.failures.append(skill.reason)
    report.seconds = time.perf_counter() - started
    return skills, report


def keep_critical_steps(skill: SkillResult | None, spreads: dict[int, float], k: int) -> SkillResult | None:
    """SEED's critical-step skills: ``skill`` with its step skills kept for at most ``k`` steps.

    ``spreads`` maps each step of the trajectory that shares its anchor state with other steps of
    its group to the spread of the returns from that state (:meth:`~seed_rl.algo.gigpo.StepCredit.spreads`).
    Kept: the analyzer's step skills at the steps of largest spread (ties: the earlier step), in
    step order; a step whose state no other step shared is not kept. Where no step of the
    trajectory shares its state, the analyzer's own choice stands: its first ``k`` step skills."""
    if not isinstance(skill, Skill) or not skill.step_skills:
        return skill
    if not spreads:
        kept = skill.step_skills[:k]
    else:
        ranked = sorted((s for s in skill.step_skills if s[0] in spreads), key=lambda s: (-spreads[s[0]], s[0]))
        kept = tuple(sorted(ranked[:k]))
    return replace(skill, step_skills=tuple(kept))


def add_to_library(library: SkillLibrary, episodes: Sequence[Episode], skills: Sequence[SkillResult | None]) -> int:
    """Keep every parsed skill of this batch in ``library`` (the static-library ablation); returns how many."""
    added = 0
    for episode, skill in zip(episodes, skills, strict=True):
        if isinstance(skill, Skill):
            library.add(
                episode.task, skill, task_type=episode.start_info.get("task_type"), env=episode.env_id, won=episode.won
            )
            added += 1
    return added


def teacher_prompts(
    episodes: Sequence[Episode],
    skills: Sequence[SkillResult | None],
    *,
    count_tokens: Callable[[ChatPrompt], int],
    max_prompt_tokens: int,
) -> dict[tuple[int, int], ChatPrompt]:
    """``h_skill`` for each (episode position, step index) whose episode has a skill and whose
    prompt could take it within ``max_prompt_tokens``."""
    out: dict[tuple[int, int], ChatPrompt] = {}
    for e, (episode, skill) in enumerate(zip(episodes, skills, strict=True)):
        if not isinstance(skill, Skill):
            continue
        for s, row in enumerate(episode.rows):
            if row.prompt is None or not row.token_ids:
                continue
            prompt, injected = inject_within_budget(row.prompt, skill, count_tokens, max_prompt_tokens, step=row.step)
            if injected is not None:
                out[(e, s)] = prompt
    return out


@dataclass
class TeacherRows:
    """The rows of the teacher pass: ``chosen[k]`` is the train row whose step ``rows[k]`` scores
    under ``h_skill`` (labelled with its episode, ``ScoreRow.group``), ``step_skill[k]`` whether that
    ``h_skill`` carries a step skill."""

    chosen: list[int]
    rows: list[ScoreRow]
    step_skill: list[bool]


def teacher_rows(
    learner: Learner,
    episodes: Sequence[Episode],
    skills: Sequence[SkillResult | None],
    places: Sequence[tuple[int, int]],
    encode: Callable[[list[Any], list[ChatPrompt]], list[tuple[list[int], dict[str, Any]]]],
    *,
    max_prompt_tokens: int,
) -> TeacherRows:
    """The rows :func:`teacher_logprobs` scores (``places[i]`` is train row ``i``'s (episode, step))."""
    prompts = teacher_prompts(episodes, skills, count_tokens=learner.count_tokens, max_prompt_tokens=max_prompt_tokens)
    out = TeacherRows([], [], [])
    for i, place in enumerate(places):
        if place not in prompts:
            continue
        e, s = place
        step = episodes[e].rows[s]
        ((ids, vision),) = encode([step], [prompts[place]])
        out.chosen.append(i)
        out.rows.append(ScoreRow(ids, list(step.token_ids), vision, group=e))
        out.step_skill.append("step_skill" in prompts[place].section_names())
    return out


def distinct_rows(rows: Sequence[ScoreRow]) -> tuple[list[int], list[int]]:
    """The rows to score once: the first of each set of rows with equal prompt and completion
    tokens (rows with vision inputs are never merged), and for every row the index of its own among
    them. A pass without gradient gives equal rows equal log-probs, so each is computed once."""
    index: dict[Hashable, int] = {}
    kept: list[int] = []
    score_of: list[int] = []
    for k, row in enumerate(rows):
        key = ("vision", k) if row.vision else (tuple(row.prompt_ids), tuple(row.token_ids))
        if key not in index:
            index[key] = len(kept)
            kept.append(k)
        score_of.append(index[key])
    return kept, score_of


def teacher_logprobs(
    learner: Learner,
    episodes: Sequence[Episode],
    skills: Sequence[SkillResult | None],
    places: Sequence[tuple[int, int]],
    encode: Callable[[list[Any], list[ChatPrompt]], list[tuple[list[int], dict[str, Any]]]],
    *,
    max_prompt_tokens: int,
    temperature: float,
    show_progress: bool = False,
) -> dict[int, tuple[torch.Tensor, bool]]:
    """The teacher pass: ``log pi(a | h_skill)`` of the sampled action tokens of every step whose
    episode has a skill (``places[i]`` is train row ``i``'s (episode, step)), scored by the
    current policy without gradient. Returns them by train row, each with whether its ``h_skill``
    carried a step skill; rows without a skill are absent. Under FSDP a process with no skill row
    still takes part in the (empty) pass.

    The rows of an episode are one group: what they share under ``h_skill`` (the prompt through
    the skill, and the history where it is the same) runs once per episode, in the same batched
    pass as the other episodes (:mod:`seed_agent.policies.engine.layout`; the engine's
    ``layout.share_groups``). Rows with images, and passes under FSDP (no shared prefix there), run
    every row whole."""
    todo = teacher_rows(learner, episodes, skills, places, encode, max_prompt_tokens=max_prompt_tokens)
    kept, score_of = distinct_rows(todo.rows)  # a group's episodes alike to the end score alike
    with bar(len(kept), "teacher", show_progress) as progress:
        scored = learner.logprobs([todo.rows[k] for k in kept], grad=False, temperature=temperature)
        progress.update(len(kept))
    return {
        i: (scored[k].float(), with_step_skill)
        for i, k, with_step_skill in zip(todo.chosen, score_of, todo.step_skill, strict=True)
    }


def low_parse_rate_warning(report: SkillReport, model: str) -> str | None:
    """A warning naming the cause and the fix when too few analyses parsed, else None."""
    if report.analyzed == 0 or report.parse_rate >= LOW_PARSE_RATE:
        return None
    reasons = sorted(set(report.failures))[:2]
    return (
        f"only {report.parsed}/{report.analyzed} analyses gave a parseable skill ({report.parse_rate:.0%}); "
        f"OPD fires only on those. Cause: the analyzer ({model}) does not write the skill JSON "
        f"(e.g. {'; '.join(reasons)}). Fix: run Stage 1 first (sft=true), or use a larger analyzer."
    )
