"""The one interface every seed env shares.

A seed env is a :class:`gymnasium.Env` whose action is a string and whose
observation is ``{"text": str}`` (plus ``"image"`` in visual envs). Subclasses
implement a handful of hooks; the base class owns task selection, the ``info``
contract, and the rule that *no input ever raises*:

=====================  ==========================================================
``info`` key           meaning
=====================  ==========================================================
``task``               the instruction in natural language
``task_id``            a stable id; ``reset(options={"task_id": id})`` replays it
``split``              ``train``, ``valid_seen`` or ``valid_unseen``
``available_actions``  list of str, or None where the action space is open
``action_valid``       bool, for the last action (True after reset)
``won``                bool
``score``              float, the benchmark's own score
``anchor``             str, the state the next action is taken from, as GiGPO's
                       anchor-state groups compare it: steps with equal anchors
                       are in the same state (see :meth:`SeedEnv._anchor`)
=====================  ==========================================================
"""

from __future__ import annotations

import hashlib
import os
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar

import gymnasium as gym
import numpy as np

from seed_envs.spaces import action_space, clean_text, observation_space, quote_action

Observation = dict[str, Any]
SPLITS: tuple[str, ...] = ("train", "valid_seen", "valid_unseen")

#: Index range for drawing a task when a split has no fixed size (procedural train sets).
UNBOUNDED_SPLIT_SIZE = 2**31 - 1


class MissingDataError(FileNotFoundError):
    """Data an env needs is not on disk.

    ``path`` is the missing file or directory (``paths`` lists every one, when several
    are missing at once) and ``command`` is the ``seed data ...`` command that fetches it;
    the message names both, plus ``hint`` (other ways to get the data) when given.
    Every env raises this one type, so callers catch ``seed_envs.core.MissingDataError``.
    """

    def __init__(
        self,
        path: str | os.PathLike[str],
        command: str,
        *,
        what: str = "data",
        also_missing: Sequence[str | os.PathLike[str]] = (),
        hint: str = "",
    ) -> None:
        if not command.strip():
            raise ValueError("MissingDataError needs the command that fetches the data")
        self.path = Path(path)
        self.paths: tuple[Path, ...] = (self.path, *(Path(p) for p in also_missing))
        self.command = command
        self.what = what
        self.hint = hint
        if len(self.paths) == 1:
            where = f"{what} not found: {self.path}. "
        else:
            where = f"{what} not found:\n" + "".join(f"  {p}\n" for p in self.paths)
        super().__init__(f"{where}Fetch with `{command}`" + (f"; {hint}" if hint else "") + ".")

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # Pickled with its attributes, as when a vector worker sends the error back.
        return (
            _rebuild_missing_data_error,
            (str(self.path), self.command, self.what, tuple(map(str, self.paths[1:])), self.hint),
        )


def _rebuild_missing_data_error(
    path: str, command: str, what: str, also_missing: tuple[str, ...], hint: str
) -> MissingDataError:
    return MissingDataError(path, command, what=what, also_missing=also_missing, hint=hint)


def check_split(split: str) -> str:
    """Return ``split`` if it is one of :data:`SPLITS`, else raise a clear ValueError."""
    if split not in SPLITS:
        raise ValueError(f"unknown split {split!r}; expected one of {', '.join(SPLITS)}")
    return split


@dataclass
class TaskStart:
    """What an env's ``_start_task`` hook returns after loading a task."""

    text: str
    task: str
    split: str
    extra_info: dict[str, Any] = field(default_factory=dict)


@dataclass
class Transition:
    """What an env's ``_play`` hook returns for one action.

    ``won`` and ``score`` update the episode's running values when not None.
    """

    text: str
    reward: float = 0.0
    terminated: bool = False
    truncated: bool = False
    action_valid: bool = True
    won: bool | None = None
    score: float | None = None
    extra_info: dict[str, Any] = field(default_factory=dict)


class SeedEnv(gym.Env[Observation, str]):
    """Base class of every seed env.

    Subclasses set the class attributes and implement:

    - ``task_count(split)``: number of tasks in a split, or None if unbounded;
    - ``task_id_for(split, index)``: the id of the index-th task of a split;
    - ``_start_task(task_id, rng)``: load a task, return a :class:`TaskStart`;
    - ``_play(action)``: apply a str action, return a :class:`Transition`;
    - ``_available_actions()``: the admissible actions now, or None;
    - ``_image()``: the current frame (visual envs only);
    - ``_anchor(obs)``: optionally, the current state as a string (``info["anchor"]``);
    - ``expert_plan()``: optionally, actions that solve the task from here.

    Task choice at ``reset``: ``options={"task_id": ...}``, or ``{"split", "index"}``,
    or else a task of ``self.split`` drawn with ``self.np_random``.
    """

    metadata: ClassVar[dict[str, Any]] = {"render_modes": ["ansi"], "render_fps": 4}
    #: Hard cap on the observation text; longer text is cut with a marker.
    max_text_length: ClassVar[int] = 16_384
    #: Actions longer than this are rejected as invalid without being parsed.
    max_action_length: ClassVar[int] = 4_096
    #: (height, width) of ``obs["image"]`` for visual envs, None for text-only envs.
    image_shape: ClassVar[tuple[int, int] | None] = None
    #: Reward for an action the env rejects (base-level and, by default, env-level).
    invalid_action_reward: ClassVar[float] = 0.0

    def __init__(self, split: str = "train", render_mode: str | None = None) -> None:
        self.split = check_split(split)
        if render_mode is not None and render_mode not in self.metadata["render_modes"]:
            raise ValueError(
                f"render_mode {render_mode!r} not supported; expected one of {self.metadata['render_modes']}"
            )
        self.render_mode = render_mode
        self.observation_space = observation_space(self.max_text_length, self.image_shape)
        self.action_space = action_space(self.max_action_length)
        self._task_id: str | None = None
        self._task_start: TaskStart | None = None
        self._text = ""
        #: The observation text of the last accepted transition (the default text anchor).
        self._state_text = ""
        self._won = False
        self._score = 0.0
        self._episode_over = False

    # ------------------------------------------------------------------ hooks
    def task_count(self, split: str) -> int | None:
        raise NotImplementedError

    def task_id_for(self, split: str, index: int) -> str:
        raise NotImplementedError

    def _start_task(self, task_id: str, rng: np.random.Generator) -> TaskStart:
        raise NotImplementedError

    def _play(self, action: str) -> Transition:
        raise NotImplementedError

    def _available_actions(self) -> list[str] | None:
        return None

    def _image(self) -> np.ndarray:
        raise NotImplementedError(f"{type(self).__name__} is not a visual env")

    def _anchor(self, obs: Observation) -> str:
        """The current state as a string, for ``info["anchor"]`` (after reset and every step).

        GiGPO groups the steps of one task's trajectories whose anchors are equal, so two
        steps must get the same anchor exactly when they are taken from the same state,
        whatever the history. It must be a non-empty str, and an action the env rejects
        (``action_valid=False``) must leave it as it was.

        The default: in a visual env, a hash of the image (``"image:<hex>"``); in a text env,
        the observation text of the last *accepted* transition (the start text after reset),
        so a rejection message never enters it. Override where the text mixes feedback on the
        action with the state, or where the state is available more exactly.
        """
        if "image" in obs:
            image = np.ascontiguousarray(obs["image"])
            digest = hashlib.blake2b(digest_size=16)
            digest.update(f"{image.shape}{image.dtype}".encode())
            digest.update(image.tobytes())
            return "image:" + digest.hexdigest()
        return self._state_text

    def expert_plan(self) -> list[str] | None:
        """Actions that solve the current task from the current state, if known."""
        return None

    @classmethod
    def prefetch_batch(cls, envs: Sequence[gym.Env], actions: Sequence[object]) -> None:
        """Called by vector workers before stepping several envs of this class at once.

        An env whose steps share expensive work (one retriever call for many
        searches, say) does it here in one batch; the steps that follow must give
        exactly what they would have given alone. The default does nothing.
        """

    # --------------------------------------------------------------- task ids
    def task_ids(self, split: str | None = None, limit: int | None = None) -> list[str]:
        """The ids of a split's tasks, in order (the first ``limit`` for unbounded splits)."""
        split = check_split(split or self.split)
        count = self.task_count(split)
        if count is None and limit is None:
            raise ValueError(f"split {split!r} is unbounded for {type(self).__name__}; pass limit=")
        n = count if limit is None else min(limit, count if count is not None else limit)
        return [self.task_id_for(split, i) for i in range(n)]

    def _resolve_task_id(self, options: dict[str, Any] | None) -> str:
        options = options or {}
        if options.get("task_id") is not None:
            return str(options["task_id"])
        split = check_split(options.get("split") or self.split)
        count = self.task_count(split)
        if count == 0:
            raise ValueError(f"split {split!r} of {type(self).__name__} has no tasks (see the env's data/README)")
        if options.get("index") is not None:
            index = int(options["index"])
            if count is not None and not 0 <= index < count:
                raise IndexError(f"index {index} out of range for split {split!r} with {count} tasks")
        else:
            index = int(self.np_random.integers(count if count is not None else UNBOUNDED_SPLIT_SIZE))
        return self.task_id_for(split, index)

    # ------------------------------------------------------------ gym API
    def reset(
        self, *, seed: int | None = None, options: dict[str, Any] | None = None
    ) -> tuple[Observation, dict[str, Any]]:
        super().reset(seed=seed)
        task_id = self._resolve_task_id(options)
        # The task's own randomness depends on the task id only, so a task replays exactly.
        start = self._start_task(task_id, np.random.default_rng(stable_seed(task_id)))
        self._task_id = task_id
        self._task_start = start
        self._won = False
        self._score = 0.0
        self._episode_over = False
        self._text = start.text
        self._state_text = start.text
        obs = self._observation()
        info = self._info(action_valid=True, extra=start.extra_info)
        info["anchor"] = self._anchor(obs)
        return obs, info

    def step(self, action: str) -> tuple[Observation, float, bool, bool, dict[str, Any]]:
        if self._task_start is None:
            raise gym.error.ResetNeeded("call reset() before step()")
        rejection = self._reject_reason(action)
        if rejection is not None:
            transition = Transition(
                text=f"{rejection}\n\n{self._text}",
                reward=self.invalid_action_reward,
                action_valid=False,
            )
        else:
            transition = self._play(action)
        if transition.won is not None:
            self._won = transition.won
        if transition.score is not None:
            self._score = float(transition.score)
        self._text = transition.text
        if transition.action_valid:  # a rejected action leaves the state (and so the anchor)
            self._state_text = transition.text
        if transition.terminated or transition.truncated:
            self._episode_over = True
        info = self._info(action_valid=transition.action_valid, extra=transition.extra_info)
        obs = self._observation()
        info["anchor"] = self._anchor(obs)
        return (
            obs,
            float(transition.reward),
            bool(transition.terminated),
            bool(transition.truncated),
            info,
        )

    def render(self) -> str | np.ndarray | None:
        if self.render_mode == "ansi":
            return self._text
        if self.render_mode == "rgb_array":
            return self._image()
        return None

    # --------------------------------------------------------------- helpers
    def _reject_reason(self, action: object) -> str | None:
        """A message for actions rejected before the env sees them, else None."""
        if not isinstance(action, str):
            return f"Invalid action: expected a string, got {type(action).__name__}."
        if self._episode_over:
            return "Invalid action: the episode is over; call reset() to start a new task."
        if len(action) > self.max_action_length:
            return (
                f"Invalid action: it is {len(action)} characters long; "
                f"the limit is {self.max_action_length}. Action began {quote_action(action)}."
            )
        return None

    def _observation(self) -> Observation:
        obs: Observation = {"text": clean_text(self._text, self.max_text_length)}
        if self.image_shape is not None:
            obs["image"] = self._image()
        return obs

    def _info(self, action_valid: bool, extra: dict[str, Any]) -> dict[str, Any]:
        assert self._task_start is not None
        info = {
            "task": self._task_start.task,
            "task_id": self._task_id,
            "split": self._task_start.split,
            "available_actions": self._available_actions(),
            "action_valid": action_valid,
            "won": self._won,
            "score": self._score,
        }
        info.update(extra)
        return info


def indexed_task_id(prefix: str, split: str, index: int) -> str:
    """The id ``<prefix>/<split>/<index>`` of a procedurally generated task."""
    return f"{prefix}/{check_split(split)}/{int(index)}"


def parse_indexed_task_id(task_id: str, prefix: str) -> tuple[str, int]:
    """Split an :func:`indexed_task_id` back into (split, index); ValueError if it is not one."""
    parts = task_id.split("/")
    try:
        if len(parts) != 3 or parts[0] != prefix:
            raise ValueError
        return check_split(parts[1]), int(parts[2])
    except ValueError:
        expected = f"{prefix}/<split>/<index>"
        raise ValueError(f"task_id {task_id!r} is not a task of this env; expected {expected!r}") from None


def stable_seed(*parts: object) -> int:
    """A 64-bit seed that depends on ``parts`` only (not on the process or PYTHONHASHSEED)."""
    key = "\x1f".join(map(str, parts)).encode("utf-8")
    return int.from_bytes(hashlib.blake2b(key, digest_size=8).digest(), "little")


def stable_bucket(parts: Sequence[object], buckets: int) -> int:
    """A process-independent bucket in ``range(buckets)`` for a key; used to hold out splits."""
    return stable_seed(*parts) % buckets
