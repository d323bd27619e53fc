"""The analyzer prompt: a finished trajectory in, a request for one hindsight skill out.

The prompt starts with what every analysis shares (the style rules and the answer's JSON keys), so
that a batch of analyses computes it once, as a shared prefix. Then it shows the task, whether the
episode succeeded, and every step (observation, the agent's reply where it says more than its
action, the action, and whether it was valid; long lines an earlier step already showed, such as
a legend, are not repeated), and ends with the outcome's request. It asks for a JSON object::

    {"episode_summary": "...", "episode_skill": "...",
     "step_skills": [{"step": 3, "skill": "..."}]}        # step_skills optional

- on **success**: the reusable workflow behind it (ordered sub-goals, key actions,
  general enough for other tasks of the same kind);
- on **failure**: the core mistake, the warning signs that showed it coming, and an
  avoidance rule (what to do instead).

Skills are written as direct instructions to the agent ("Before X, check Y"), not as a
story of what happened, since they are injected into the agent's own prompt. The
visual variant puts an image placeholder in each step that had an image.
"""

from __future__ import annotations

import re

from seed_agent.chat import IMAGE_PLACEHOLDER, ChatPrompt, Section
from seed_agent.history import cut_text
from seed_agent.trajectory import Trajectory

ANALYZER_SYSTEM = (
    "You review an agent's finished episode and write one skill that will help the same agent "
    "do better on tasks like this one. You answer with a single JSON object and nothing else."
)

SUCCESS_REQUEST = (
    "The episode SUCCEEDED. Extract the reusable workflow that made it succeed: the ordered sub-goals "
    "and the key actions for each, stated for this kind of task in general (name kinds of objects and "
    "places, not instance numbers), so that the agent can repeat it on a new task of the same kind."
)
FAILURE_REQUEST = (
    "The episode FAILED. Identify (1) the core mistake that made it fail, (2) the warning signs in the "
    "observations that showed the mistake was happening, and (3) an avoidance rule: what the agent must "
    "do instead. Base this on the steps shown, not on guesses."
)
STYLE_RULES = (
    "Write every skill as a direct instruction to the agent, in the second person and the imperative "
    '(for example "Before you ..., check ..."; "When you see ..., do ..."). Do not narrate the '
    "episode in the past tense. Keep the episode skill under 80 words and each step skill under 40 words."
)
#: What ``episode_skill`` must hold, by outcome (won -> text): said at the end, with the request.
EPISODE_SKILL_WHAT = {
    True: "The episode skill is the reusable workflow for this kind of task.",
    False: "The episode skill is the avoidance rule, naming the mistake and its warning signs.",
}
JSON_REQUEST = (
    "Answer with one JSON object with these keys:\n"
    '- "episode_summary": one or two sentences on what happened;\n'
    '- "episode_skill": the skill the request at the end asks for;\n'
    '- "step_skills" (optional): a list of {"step": <step number>, "skill": "<instruction>"} for the '
    "steps where a specific decision mattered.\n"
    'Example: {"episode_summary": "...", "episode_skill": "...", "step_skills": [{"step": 2, "skill": "..."}]}'
)
#: The request when only the episode skill is wanted (SEED's default setting).
EPISODE_ONLY_JSON_REQUEST = (
    "Answer with one JSON object with these keys:\n"
    '- "episode_summary": one or two sentences on what happened;\n'
    '- "episode_skill": the skill the request at the end asks for.\n'
    'Example: {"episode_summary": "...", "episode_skill": "..."}'
)
#: Bumped when the prompt changes: Stage 1 adapters trained on another prompt are not reused.
ANALYZER_PROMPT_VERSION = 2
#: A reply prefill that starts the JSON object (helps small models keep the format).
JSON_PREFILL = '{"episode_summary": "'


def analyzer_prompt(
    trajectory: Trajectory,
    *,
    visual: bool = False,
    observation_chars: int = 600,
    response_chars: int = 600,
    step_skills: bool = True,
    prefill: str = "",
) -> ChatPrompt:
    """The analyzer's prompt for ``trajectory`` (sections ``format``, the same for every trajectory,
    then ``task``, ``trajectory`` and the outcome's ``request``); ``visual`` shows an image placeholder per step
    that had an image (fill them with the step images, in order). ``step_skills=False`` asks
    for the episode skill only; ``prefill`` starts the reply (e.g. :data:`JSON_PREFILL`)."""
    outcome = "SUCCESS" if trajectory.won else "FAILURE"
    header = (
        f"Task: {trajectory.task}\n"
        f"Outcome: {outcome} after {len(trajectory.steps)} step(s) (score {trajectory.score:g})."
    )
    lines = []
    seen: set[str] = set()
    for number, step in enumerate(trajectory.steps, start=1):
        validity = "valid" if step.valid else f"INVALID ({step.error or 'rejected'})"
        observation = cut_text(_without_repeated_lines(step.observation, seen), observation_chars)
        block = [f"Step {number}", f"Observation: {observation}"]
        if visual and step.has_image:
            block.append(f"Image: {IMAGE_PLACEHOLDER}")
        if not _only_the_action(step.response, step.action):  # a bare "<action>up</action>" adds nothing
            block.append(f"Agent response: {cut_text(step.response.strip(), response_chars)}")
        block.append(f"Action: {step.action if step.action is not None else '(none parsed)'} [{validity}]")
        lines.append("\n".join(block))
    steps_text = "\n\n".join(lines) if lines else "(the episode has no steps)"
    answer_format = JSON_REQUEST if step_skills else EPISODE_ONLY_JSON_REQUEST
    request = SUCCESS_REQUEST if trajectory.won else FAILURE_REQUEST
    sections = (  # what every analysis shares first: computed once for a batch (a shared prefix)
        Section("format", f"{STYLE_RULES}\n\n{answer_format}"),
        Section("task", header),
        Section("trajectory", f"Trajectory:\n{steps_text}"),
        Section("request", f"{request} {EPISODE_SKILL_WHAT[trajectory.won]}"),
    )
    return ChatPrompt(
        system=ANALYZER_SYSTEM, sections=sections, prefill=prefill, meta={"env": trajectory.env, "analyzer": True}
    )


#: Lines at least this long that an earlier step already showed are not shown again.
REPEATED_LINE_CHARS = 40


def _without_repeated_lines(observation: str, seen: set[str]) -> str:
    """``observation`` without the long lines an earlier step showed (a legend, the task text,
    a page header); short lines (grid rows) always stay. ``seen`` collects the long lines."""
    kept = []
    for line in observation.splitlines():
        key = line.strip()
        if len(key) >= REPEATED_LINE_CHARS:
            if key in seen:
                continue
            seen.add(key)
        kept.append(line)
    return "\n".join(kept)


_TAGS = re.compile(r"</?(action|search|answer)\s*>", re.IGNORECASE)


def _only_the_action(response: str, action: str | None) -> bool:
    """The reply is the action in its tags and nothing more (the act style's replies)."""
    return action is not None and " ".join(_TAGS.sub(" ", response).split()) == " ".join(action.split())


def analyzer_images(trajectory: Trajectory, images: list) -> list:
    """The images of the steps that had one, in order: what fills the visual prompt's placeholders.

    ``images`` holds one entry per step (None for steps without an image).
    """
    pairs = zip(trajectory.steps, images, strict=False)
    return [image for step, image in pairs if step.has_image and image is not None]
