"""The OpenEnv wire types of a served seed env: its action, observation and state.

A seed env's action is a string and its observation ``{"text": str}`` plus, in visual envs,
``{"image": HxWx3 uint8}``. Over OpenEnv they become pydantic models (OpenEnv's ``Action``,
``Observation`` and ``State``), which its server serializes to JSON and its client parses back:

- :class:`SeedAction`: ``{"text": str}``; anything else is a validation error.
- :class:`SeedObservation`: ``text``, ``image`` (a PNG data URL on the wire, decoded back to the
  same uint8 array by ``SeedObservation.model_validate``), ``terminated`` and ``truncated``
  (OpenEnv's ``done`` is their "or"), the ``info`` dict as JSON carries it, and ``reward``.
- :class:`SeedState`: the session's env id, current task and step count, plus what a client needs
  to build the Gymnasium spaces before its first reset (text and action limits, image shape,
  render modes, each split's task count).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Annotated, Any

import numpy as np
from openenv.core.env_server.types import Action, Observation, State
from pydantic import BeforeValidator, Field, PlainSerializer, PlainValidator, WithJsonSchema

from seed_envs.images import decode_png_data_url, png_data_url
from seed_envs.spaces import is_printable_text


def encode_image(image: np.ndarray) -> str:
    """An HxWx3 uint8 image as a PNG data URL (lossless)."""
    array = np.asarray(image)
    if array.dtype != np.uint8 or array.ndim != 3 or array.shape[2] != 3:
        raise ValueError(f"expected an HxWx3 uint8 image, got shape {array.shape} and dtype {array.dtype}")
    # Level 1: a third faster than the default 6 on the envs' frames, for a quarter more bytes.
    return png_data_url(array, compress_level=1)


def decode_image(value: object) -> np.ndarray:
    """The HxWx3 uint8 array of a PNG data URL (an array passes through); ValueError otherwise."""
    if isinstance(value, np.ndarray):
        if value.dtype != np.uint8 or value.ndim != 3 or value.shape[2] != 3:
            raise ValueError(f"expected an HxWx3 uint8 image, got shape {value.shape} and dtype {value.dtype}")
        return value
    return decode_png_data_url(value)  # type: ignore[arg-type]


#: An image field: a uint8 array in Python, a PNG data URL in JSON.
PngImage = Annotated[
    np.ndarray,
    PlainValidator(decode_image),
    PlainSerializer(encode_image, return_type=str),
    WithJsonSchema({"type": "string", "contentMediaType": "image/png", "description": "a PNG data URL"}),
]


def json_safe(value: Any) -> Any:
    """``value`` as JSON can carry it: numpy scalars and arrays become numbers and lists,
    tuples lists, mapping keys strings, strings valid UTF-8 (a lone surrogate becomes U+FFFD)
    and non-finite floats strings ("nan", "inf"). Any other object becomes its ``str``."""
    if value is None or isinstance(value, bool | int):
        return value
    if isinstance(value, float):
        return value if math.isfinite(value) else str(value)
    if isinstance(value, str):
        return value if is_valid_utf8(value) else "".join("\ufffd" if "\ud800" <= c <= "\udfff" else c for c in value)
    if isinstance(value, np.generic | np.ndarray):
        return json_safe(value.tolist())
    if isinstance(value, Mapping):
        return {str(json_safe(key)): json_safe(item) for key, item in value.items()}
    if isinstance(value, list | tuple | set | frozenset):
        return [json_safe(item) for item in value]
    return str(value)


def is_valid_utf8(text: str) -> bool:
    """True unless ``text`` holds a lone surrogate (which UTF-8, and so JSON, cannot carry)."""
    if is_printable_text(text):
        return True  # surrogates are not printable
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return False
    return True


class SeedAction(Action):
    """One action of a seed env: any string (the env judges it; an invalid one is reported, not raised)."""

    text: str = Field(description="the action, as the agent wrote it")


class SeedObservation(Observation):
    """What a seed env returns from reset and step, as OpenEnv carries it."""

    text: str = Field(description="the observation text")
    image: PngImage | None = Field(default=None, description="the frame of a visual env (a PNG data URL in JSON)")
    terminated: bool = Field(default=False, description="the episode ended by the env's rules")
    truncated: bool = Field(default=False, description="the episode was cut by the time limit")
    info: Annotated[dict[str, Any], BeforeValidator(json_safe)] = Field(
        default_factory=dict, description="the env's info dict (see seed_envs.core), as JSON carries it"
    )


class SeedState(State):
    """A session's env and task, and the facts a client builds the Gymnasium spaces from."""

    env_id: str = Field(description="the Gymnasium id of the served env")
    task_id: str | None = Field(default=None, description="the current task, None before the first reset")
    max_text_length: int = Field(description="the longest observation text")
    max_action_length: int = Field(description="the longest action the env reads (longer ones are rejected)")
    image_shape: tuple[int, int] | None = Field(default=None, description="(height, width) of a visual env's image")
    render_modes: list[str] = Field(default_factory=list, description="the env's render modes")
    task_counts: dict[str, int | None] = Field(
        default_factory=dict, description="each split's number of tasks (None: unbounded)"
    )
