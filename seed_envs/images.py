"""Frames as PNG data URLs (``data:image/png;base64,...``): the one encoder and decoder that the
chat clients, the OpenEnv wire types, the framework adapters and the episode log share."""

from __future__ import annotations

import base64
import binascii
import io
from typing import Any

import numpy as np

PNG_DATA_URL_PREFIX = "data:image/png;base64,"


def png_data_url(image: Any, *, compress_level: int = 6, optimize: bool = False) -> str:
    """An HxWx3 uint8 array or a PIL image as a lossless PNG data URL."""
    from PIL import Image

    picture = image if isinstance(image, Image.Image) else Image.fromarray(np.asarray(image, dtype=np.uint8))
    buffer = io.BytesIO()
    picture.save(buffer, format="PNG", compress_level=compress_level, optimize=optimize)
    return PNG_DATA_URL_PREFIX + base64.b64encode(buffer.getvalue()).decode("ascii")


def decode_png_data_url(value: str) -> np.ndarray:
    """The HxWx3 uint8 array of a PNG data URL; ValueError for anything else."""
    from PIL import Image

    if not isinstance(value, str) or not value.startswith(PNG_DATA_URL_PREFIX):
        raise ValueError(f"expected an image as a {PNG_DATA_URL_PREFIX!r} data URL")
    try:
        data = base64.b64decode(value[len(PNG_DATA_URL_PREFIX) :], validate=True)
        with Image.open(io.BytesIO(data)) as image:
            return np.array(image if image.mode == "RGB" else image.convert("RGB"), dtype=np.uint8)
    except (binascii.Error, OSError) as error:
        raise ValueError(f"the image is not a valid base64 PNG: {error}") from None
