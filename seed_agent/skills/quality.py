"""Cheap checks of a hindsight skill, for the trainer's metrics and the annotator's limits.

- :func:`skill_words`: how long a skill is, in words (what is injected into ``h_skill``);
  :func:`cut_words` and :func:`fit_sentences` keep texts under a word limit;
- :func:`mentions_trajectory`: whether a skill is grounded in its own episode, i.e. names
  at least one object or action word that the episode's task, observations or actions
  contain (stop words and words that fit any task, such as "step" or "first", do not count).

A skill copied from another task, or one that says only "do the task carefully", fails
the second check.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from seed_agent.skills.extract import Skill, SkillResult
from seed_agent.trajectory import Trajectory

_LETTERS = re.compile(r"[a-z]+")
#: Words shorter than this never count as content (drops "a", "to", "up", "go", unit letters).
MIN_CONTENT_CHARS = 3

#: Common English function words (not the direction words of moves: up, down, in, on, ...).
STOP_WORDS = frozenset(
    (
        "a",
        "about",
        "above",
        "after",
        "again",
        "against",
        "all",
        "also",
        "am",
        "an",
        "and",
        "any",
        "are",
        "aren",
        "as",
        "at",
        "be",
        "because",
        "been",
        "before",
        "being",
        "below",
        "between",
        "both",
        "but",
        "by",
        "can",
        "cannot",
        "could",
        "did",
        "didn",
        "do",
        "does",
        "doesn",
        "doing",
        "don",
        "during",
        "each",
        "few",
        "for",
        "from",
        "further",
        "had",
        "has",
        "have",
        "having",
        "he",
        "her",
        "here",
        "hers",
        "herself",
        "him",
        "himself",
        "his",
        "how",
        "i",
        "if",
        "into",
        "is",
        "isn",
        "it",
        "its",
        "itself",
        "just",
        "me",
        "more",
        "most",
        "my",
        "myself",
        "no",
        "nor",
        "not",
        "now",
        "of",
        "once",
        "only",
        "or",
        "other",
        "our",
        "ours",
        "ourselves",
        "own",
        "same",
        "she",
        "should",
        "so",
        "some",
        "such",
        "than",
        "that",
        "the",
        "their",
        "theirs",
        "them",
        "themselves",
        "then",
        "there",
        "these",
        "they",
        "this",
        "those",
        "through",
        "to",
        "too",
        "until",
        "very",
        "was",
        "wasn",
        "we",
        "were",
        "weren",
        "what",
        "when",
        "where",
        "which",
        "while",
        "who",
        "whom",
        "why",
        "will",
        "with",
        "won",
        "would",
        "you",
        "your",
        "yours",
        "yourself",
        "yourselves",
    )
)

#: Words that fit any task or any skill: they say nothing about *this* episode.
GENERIC_WORDS = frozenset(
    (
        "act",
        "action",
        "actions",
        "admissible",
        "agent",
        "always",
        "another",
        "attempt",
        "avoid",
        "before",
        "begin",
        "best",
        "better",
        "careful",
        "carefully",
        "check",
        "choose",
        "chosen",
        "core",
        "correct",
        "current",
        "different",
        "directly",
        "done",
        "end",
        "episode",
        "episodes",
        "every",
        "expert",
        "fail",
        "failed",
        "failure",
        "finish",
        "first",
        "follow",
        "following",
        "get",
        "give",
        "goal",
        "good",
        "got",
        "help",
        "instead",
        "keep",
        "kind",
        "know",
        "last",
        "later",
        "like",
        "look",
        "make",
        "mistake",
        "must",
        "need",
        "never",
        "new",
        "next",
        "once",
        "one",
        "order",
        "plan",
        "point",
        "possible",
        "reply",
        "replies",
        "route",
        "rule",
        "rules",
        "same",
        "see",
        "seen",
        "sign",
        "signs",
        "skill",
        "skills",
        "start",
        "state",
        "step",
        "steps",
        "still",
        "success",
        "sure",
        "task",
        "tasks",
        "then",
        "thing",
        "things",
        "time",
        "times",
        "try",
        "two",
        "use",
        "used",
        "using",
        "valid",
        "invalid",
        "wait",
        "want",
        "warning",
        "way",
        "well",
        "whenever",
        "workflow",
        "wrong",
    )
)


def _stem(word: str) -> str:
    """A light plural fold, so that "mugs" matches "mug" and "boxes" matches "box"."""
    if len(word) > 4 and word.endswith("ies"):
        return word[:-3] + "y"
    if len(word) > 4 and word.endswith("es") and word[:-2].endswith(("s", "x", "z", "ch", "sh")):
        return word[:-2]
    if len(word) > 3 and word.endswith("s") and not word.endswith("ss"):
        return word[:-1]
    return word


def content_words(texts: str | Iterable[str]) -> set[str]:
    """The (plural-folded) content words of some text: letters only, at least
    :data:`MIN_CONTENT_CHARS` long, neither stop words nor generic words."""
    if isinstance(texts, str):
        texts = (texts,)
    found: set[str] = set()
    for text in texts:
        for word in _LETTERS.findall(text.lower()):
            if len(word) >= MIN_CONTENT_CHARS and word not in STOP_WORDS and word not in GENERIC_WORDS:
                found.add(_stem(word))
    return found - {_stem(w) for w in GENERIC_WORDS}


def skill_texts(skill: Skill) -> list[str]:
    """The texts of a skill that are injected into the agent's prompt: the episode skill and
    every step skill (not the summary)."""
    return [skill.episode_skill, *(text for _, text in skill.step_skills)]


def skill_words(skill: SkillResult | None) -> int:
    """Words (whitespace-separated) in the episode skill and all step skills; 0 for no skill."""
    if not isinstance(skill, Skill):
        return 0
    return sum(len(text.split()) for text in skill_texts(skill))


def trajectory_texts(trajectory: Trajectory) -> list[str]:
    """The task, every observation and action, and the final observation if recorded."""
    texts = [trajectory.task]
    for step in trajectory.steps:
        texts.append(step.observation)
        if step.action:
            texts.append(step.action)
    final = trajectory.info.get("final_observation")
    if isinstance(final, str):
        texts.append(final)
    return texts


def mentions_trajectory(skill: SkillResult | None, trajectory: Trajectory) -> bool:
    """True if the skill names at least one content word of the trajectory's task,
    observations or actions (see :func:`content_words`). False for no skill."""
    if not isinstance(skill, Skill):
        return False
    return bool(content_words(skill_texts(skill)) & content_words(trajectory_texts(trajectory)))


def cut_words(text: str, max_words: int) -> str:
    """``text`` with whitespace folded and at most ``max_words`` words; "..." marks a cut."""
    words = text.split()
    if len(words) <= max_words:
        return " ".join(words)
    return " ".join(words[:max_words]).rstrip(",;:.") + "..."


def fit_sentences(sentences: Sequence[tuple[int, str]], limit: int) -> str:
    """Sentences ``(priority, text)`` joined in their order, with fewer than ``limit`` words.

    The lowest-priority sentences (highest number; the later one on a tie) are dropped first;
    a lone sentence still too long is cut by :func:`cut_words`.
    """
    chosen = [(priority, " ".join(text.split())) for priority, text in sentences if text.strip()]
    while len(chosen) > 1 and sum(len(text.split()) for _, text in chosen) >= limit:
        chosen.pop(max(range(len(chosen)), key=lambda i: (chosen[i][0], i)))
    return cut_words(" ".join(text for _, text in chosen), limit - 1)
