"""A scripted hindsight-skill annotator: the SFT targets of SEED's Stage 1, written offline.

:func:`annotate` reads a finished :class:`~seed_agent.trajectory.Trajectory` and writes the
skill the analyzer prompt asks for, deterministically and without a model:

- **success**: the reusable workflow, built from the trajectory's own valid actions and the
  env's semantics: ordered sub-goals and key actions, as instructions, naming the task's
  object and place kinds (instance numbers stripped) and the real action verbs;
- **failure**: the core mistake, i.e. the first divergence (:func:`first_divergence`): the
  first invalid action, the first action that differs from the expert's action for that
  state, or the first loop; its warning sign (what the observation showed there); and an
  avoidance rule (the expert's action there, generalised, plus the env's own rules).

The expert's view comes from ``StepRecord.expert_action`` where recorded, else from the
expert plan of the initial state (``expert_plan=`` or ``trajectory.info["expert_plan"]``)
for as long as the agent followed it. Each env's phrasing is a small
:class:`~seed_agent.skills.annotate.base.Phrasing` subclass in its own module here; an
unknown env gets the generic base class. The episode skill is kept under
:data:`EPISODE_SKILL_WORD_LIMIT` words and each step skill under
:data:`STEP_SKILL_WORD_LIMIT`, as the analyzer prompt asks. :func:`skill_json` is the reply
the analyzer should give for a skill (the SFT target); :func:`fit_summary` shortens its summary
where that reply must fit in the analyzer's token budget.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Sequence
from dataclasses import replace

from seed_agent.skills.annotate.alfworld import ALFWorldPhrasing
from seed_agent.skills.annotate.base import (
    INVALID,
    OFF_PLAN,
    REPEAT,
    UNFINISHED,
    Context,
    Divergence,
    Phrasing,
    cap,
    fold,
    quoted,
    short,
)
from seed_agent.skills.annotate.corridor import CorridorPhrasing
from seed_agent.skills.annotate.ezpoints import EZPointsPhrasing
from seed_agent.skills.annotate.searchqa import SearchQAPhrasing
from seed_agent.skills.annotate.sokoban import SokobanPhrasing
from seed_agent.skills.annotate.webshop import WebShopPhrasing
from seed_agent.skills.extract import Skill
from seed_agent.skills.quality import cut_words, fit_sentences
from seed_agent.trajectory import Trajectory

#: The episode skill has fewer words than this (the analyzer prompt's "under 80 words").
EPISODE_SKILL_WORD_LIMIT = 80
#: Each step skill has fewer words than this (the analyzer prompt's "under 40 words").
STEP_SKILL_WORD_LIMIT = 40
#: Env names the annotator knows, matched against ``Trajectory.env`` (an id or a short name).
KNOWN_ENVS = ("alfworld", "webshop", "searchqa", "sokoban", "ezpoints", "corridor")

_KIND_WORDS = {
    INVALID: "an invalid action",
    OFF_PLAN: "an off-plan action",
    REPEAT: "a repeated action",
    UNFINISHED: "its last action",
}

PHRASINGS: dict[str, Phrasing] = {
    "alfworld": ALFWorldPhrasing(),
    "webshop": WebShopPhrasing(),
    "searchqa": SearchQAPhrasing(),
    "sokoban": SokobanPhrasing(),
    "ezpoints": EZPointsPhrasing(),
    "corridor": CorridorPhrasing(),
    "generic": Phrasing(),
}


def env_name(env: str) -> str:
    """The short name of an env id (``seed/Sokoban-v0``, ``seed_envs:seed/WebShopBrowser-v0``,
    ``sokoban``); ``generic`` for an env the annotator does not know."""
    key = re.sub(r"[^a-z]", "", env.split(":", 1)[-1].rsplit("/", 1)[-1].lower())
    return next((name for name in KNOWN_ENVS if name in key), "generic")


def phrasing_for(env: str) -> Phrasing:
    """The :class:`Phrasing` for an env id or short name (the generic one when unknown)."""
    return PHRASINGS[env_name(env)]


def expected_actions(trajectory: Trajectory, expert_plan: Sequence[str] | None = None) -> list[str | None]:
    """The expert's action for each step's state: ``StepRecord.expert_action`` where recorded,
    else the initial plan's action while every earlier step followed that plan, else None."""
    phrasing = phrasing_for(trajectory.env)
    plan = list(expert_plan if expert_plan is not None else trajectory.info.get("expert_plan") or [])
    expected: list[str | None] = []
    on_plan = True
    for index, step in enumerate(trajectory.steps):
        from_plan = plan[index] if on_plan and index < len(plan) else None
        expected.append(phrasing.expected(step, step.expert_action, from_plan))
        on_plan = from_plan is not None and phrasing.canonical(step.action) == phrasing.canonical(from_plan)
    return expected


def first_divergence(trajectory: Trajectory, expert_plan: Sequence[str] | None = None) -> Divergence | None:
    """The first invalid, off-plan or repeated action (see :class:`Divergence`); None if there is none."""
    phrasing = phrasing_for(trajectory.env)
    seen: set[tuple[str, str]] = set()
    recent: list[str] = []
    expected = expected_actions(trajectory, expert_plan)
    for number, (step, expert) in enumerate(zip(trajectory.steps, expected, strict=True), start=1):
        action = phrasing.canonical(step.action)
        situation = (fold(step.observation), action)
        if step.action is None or not step.valid:
            kind = INVALID
        elif expert is not None and action != phrasing.canonical(expert):
            kind = OFF_PLAN
        elif expert is None and (situation in seen or recent[-2:] == [action, action]):
            kind = REPEAT
        else:
            seen.add(situation)
            recent.append(action)
            continue
        return Divergence(number, kind, step.action or "", expert, step.observation)
    return None


def annotate(
    trajectory: Trajectory, expert_plan: Sequence[str] | None = None, max_words: int = EPISODE_SKILL_WORD_LIMIT
) -> Skill:
    """The hindsight skill of ``trajectory`` (see the module docstring). Deterministic.

    ``expert_plan``: the expert's plan from the initial state (default
    ``trajectory.info["expert_plan"]``), used where steps carry no ``expert_action``.
    ``max_words`` caps the episode skill (at most :data:`EPISODE_SKILL_WORD_LIMIT`): shorter
    skills are cheaper for a small analyzer to learn and to write.
    """
    max_words = min(max_words, EPISODE_SKILL_WORD_LIMIT)
    phrasing = phrasing_for(trajectory.env)
    plan = tuple(expert_plan if expert_plan is not None else trajectory.info.get("expert_plan") or ())
    ctx = Context(env_name(trajectory.env), trajectory, plan, tuple(expected_actions(trajectory, plan)))
    if not trajectory.steps:
        return _fitted(
            Skill(
                f"Act at once: to {phrasing.goal(ctx)}, start with one of the admissible actions.",
                _summary(ctx, phrasing, None),
            ),
            max_words,
        )
    if trajectory.won:
        sentences, step_skills = phrasing.workflow(ctx)
        return _fitted(
            Skill(fit_sentences(sentences, max_words), _summary(ctx, phrasing, None), tuple(step_skills)), max_words
        )
    last = trajectory.steps[-1]
    d = first_divergence(trajectory, plan) or Divergence(
        len(trajectory.steps), UNFINISHED, last.action or "", ctx.expected[-1], last.observation
    )
    sentences, step_skill = _failure(ctx, phrasing, d)
    return _fitted(
        Skill(fit_sentences(sentences, max_words), _summary(ctx, phrasing, d), ((d.step, step_skill),)), max_words
    )


def _failure(ctx: Context, phrasing: Phrasing, d: Divergence) -> tuple[list[tuple[int, str]], str]:
    """A failure's prioritised sentences (lower numbers are kept first) and its step skill."""
    did = phrasing.describe(ctx, d.step, d.action) or "(nothing)"
    sign = phrasing.sign(ctx, d.step)
    instead = phrasing.describe(ctx, d.step, d.expert_action) if d.expert_action else ""
    then = phrasing.rest(ctx, d.step) if instead else []
    mistakes = {
        INVALID: phrasing.invalid(ctx, d.action),
        OFF_PLAN: f"Avoid {quoted(did)} at this point: it leads away from the goal.",
        REPEAT: f"Do not repeat {quoted(did)} in the same situation: it changes nothing.",
        UNFINISHED: f"Do not run out of steps: make every action bring you closer to the goal ({phrasing.goal(ctx)}).",
    }
    sentences = [(0, mistakes[d.kind]), (2, f"Warning sign: {sign}." if sign else "")]
    if instead:
        sentences.append((1, f"Instead, {instead}" + (f", then {', '.join(then)}" if then else "") + "."))
    sentences += [(3 + i, rule) for i, rule in enumerate(phrasing.rules(ctx, d))]
    where = cap(sign) if sign else "Here"
    if instead:
        step_text = f"{where}: {instead}, not {did}."
    elif d.kind == INVALID:
        rule = phrasing.invalid(ctx, d.action)
        step_text = f"{where}: {rule[:1].lower()}{rule[1:]}"
    else:
        step_text = f"{where}: do not {did}; act toward the goal."
    return sentences, step_text


def _summary(ctx: Context, phrasing: Phrasing, d: Divergence | None) -> str:
    t = ctx.trajectory
    count = len(t.steps)
    steps = f"{count} step{'s' if count != 1 else ''}"
    outcome = f"succeeded in {steps}" if t.won else f"failed after {steps}"
    first = f"The agent had to {phrasing.goal(ctx)}. It {outcome} (score {t.score:g})."
    if d is None:
        return first
    did = quoted(short(phrasing.describe(ctx, d.step, d.action) or "(nothing)", 12))
    return f"{first} It first went wrong at step {d.step} with {_KIND_WORDS[d.kind]}: {did}."


def _fitted(skill: Skill, max_words: int = EPISODE_SKILL_WORD_LIMIT) -> Skill:
    """The skill with folded whitespace, the word limits enforced (fewer than ``max_words`` in the
    episode skill), and step skills sorted and unique: what survives :func:`skill_json` and
    :func:`~seed_agent.skills.extract.extract_skill`."""
    steps = {n: cut_words(text, STEP_SKILL_WORD_LIMIT - 1) for n, text in skill.step_skills if n >= 1 and text.strip()}
    return Skill(
        cut_words(skill.episode_skill, max_words - 1),
        fold(skill.episode_summary),
        tuple(sorted(steps.items())),
    )


def skill_json(skill: Skill, *, step_skills: bool = True) -> str:
    """The analyzer's reply for ``skill``: one line of JSON with ``episode_summary``,
    ``episode_skill`` and (when there are any, and ``step_skills``) ``step_skills``, in that
    order. It starts with the analyzer's ``JSON_PREFILL``; ``step_skills=False`` is the reply
    to the episode-skill-only request (``analyzer_prompt(..., step_skills=False)``).

    ``extract_skill(skill_json(s)) == s`` for every skill with folded whitespace, a
    non-empty episode skill and step numbers >= 1, unique and in order (all that
    :func:`annotate` returns). Raises ValueError for an empty episode skill, which no reply
    can carry.
    """
    episode_skill = fold(skill.episode_skill)
    if not episode_skill:
        raise ValueError("a skill needs a non-empty episode_skill")
    data: dict[str, object] = {"episode_summary": fold(skill.episode_summary), "episode_skill": episode_skill}
    if step_skills and skill.step_skills:
        data["step_skills"] = [{"step": n, "skill": fold(text)} for n, text in skill.step_skills]
    return json.dumps(data, ensure_ascii=False)


def fit_summary(skill: Skill, fits: Callable[[Skill], bool]) -> Skill:
    """``skill`` with the last sentences of its summary dropped, one at a time, until ``fits`` accepts
    it (Stage 1 passes "its reply is within the analyzer's token budget"); the first sentence is
    kept. The summary is what the reply tells its reader, never injected into a prompt, so the
    skill's own text stays as it is: on the demo, a failure's summary ends with the first wrong
    move, which its skill names again ("Avoid 'move up' at this point"). The shortest version where
    none fits: the caller counts what is still too long."""
    sentences = re.split(r"(?<=[.!?])\s+", fold(skill.episode_summary))
    fitted = skill
    while len(sentences) > 1 and not fits(fitted):
        sentences.pop()
        fitted = replace(skill, episode_summary=" ".join(sentences))
    return fitted


__all__ = [
    "EPISODE_SKILL_WORD_LIMIT",
    "INVALID",
    "KNOWN_ENVS",
    "OFF_PLAN",
    "PHRASINGS",
    "REPEAT",
    "STEP_SKILL_WORD_LIMIT",
    "UNFINISHED",
    "Context",
    "Divergence",
    "Phrasing",
    "annotate",
    "env_name",
    "expected_actions",
    "first_divergence",
    "fit_summary",
    "phrasing_for",
    "skill_json",
]
