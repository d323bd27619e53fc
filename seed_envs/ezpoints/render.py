"""Draw EZPoints frames: two playing cards on green felt and the formula so far.

Everything is drawn here with Pillow primitives and its built-in scalable font;
suit symbols are polygons and ellipses, so no font glyphs or image files are needed.
The frame is 300x300 like gym-cards'.
"""

from __future__ import annotations

from functools import lru_cache

import numpy as np
from PIL import Image, ImageDraw, ImageFont

from seed_envs.ezpoints.cards import Card

CANVAS = (300, 300)
FELT_RGB = (53, 101, 77)
RED = (200, 20, 30)
BLACK = (20, 20, 20)


@lru_cache(maxsize=16)
def _font(size: int) -> ImageFont.FreeTypeFont | ImageFont.ImageFont:
    return ImageFont.load_default(size=size)


def _draw_suit(draw: ImageDraw.ImageDraw, suit: str, cx: float, cy: float, r: float) -> None:
    """A suit symbol of radius ``r`` centred on (cx, cy)."""
    color = RED if suit in "HD" else BLACK
    if suit == "D":
        draw.polygon([(cx, cy - r), (cx + 0.75 * r, cy), (cx, cy + r), (cx - 0.75 * r, cy)], fill=color)
        return
    if suit == "C":
        b = 0.42 * r
        for dx, dy in ((0, -0.45 * r), (-0.48 * r, 0.12 * r), (0.48 * r, 0.12 * r)):
            draw.ellipse([cx + dx - b, cy + dy - b, cx + dx + b, cy + dy + b], fill=color)
        draw.polygon([(cx, cy), (cx - 0.3 * r, cy + r), (cx + 0.3 * r, cy + r)], fill=color)
        return
    # Hearts and spades share a shape: two lobes and a point; a spade is upside down with a stem.
    sign = 1 if suit == "H" else -1
    b = 0.5 * r
    lobe_y = cy - sign * 0.3 * r
    for dx in (-0.45 * r, 0.45 * r):
        draw.ellipse([cx + dx - b, lobe_y - b, cx + dx + b, lobe_y + b], fill=color)
    draw.polygon(
        [(cx - 0.93 * r, lobe_y + sign * 0.15 * r), (cx + 0.93 * r, lobe_y + sign * 0.15 * r), (cx, cy + sign * r)],
        fill=color,
    )
    if suit == "S":
        draw.polygon([(cx, cy), (cx - 0.3 * r, cy + 1.1 * r), (cx + 0.3 * r, cy + 1.1 * r)], fill=color)


@lru_cache(maxsize=128)
def card_image(card: Card, width: int, height: int) -> Image.Image:
    """A face-up card: rank and suit in two corners, a large rank and suit in the middle."""
    img = Image.new("RGB", (width, height), FELT_RGB)
    d = ImageDraw.Draw(img)
    d.rounded_rectangle(
        [0, 0, width - 1, height - 1], radius=width // 10, fill=(250, 250, 245), outline=(60, 60, 60), width=2
    )
    color = RED if card.suit in "HD" else BLACK
    label = "10" if card.rank == "T" else card.rank
    corner = _font(max(12, width // 6))
    d.text((width * 0.08, height * 0.04), label, fill=color, font=corner)
    _draw_suit(d, card.suit, width * 0.15, height * 0.22, width * 0.07)
    d.text((width * 0.92, height * 0.96), label, fill=color, font=corner, anchor="rs")
    _draw_suit(d, card.suit, width * 0.85, height * 0.78, width * 0.07)
    d.text((width / 2, height * 0.42), label, fill=color, font=_font(max(16, width // 3)), anchor="mm")
    _draw_suit(d, card.suit, width / 2, height * 0.7, width * 0.14)
    return img


def render_frame(cards: tuple[Card, Card], formula: list[str]) -> np.ndarray:
    """(300, 300, 3) uint8: the cards side by side and ``Formula: ...`` underneath."""
    canvas = Image.new("RGB", CANVAS, FELT_RGB)
    card_w = int(CANVAS[0] / len(cards) * 0.9)
    card_h = int(card_w * 7 / 5)
    for i, card in enumerate(cards):
        x = 5 + int(i * card_w * 1.1)
        y = (CANVAS[1] - card_h) // 2
        canvas.paste(card_image(card, card_w, card_h), (x, y))
    draw = ImageDraw.Draw(canvas)
    draw.text((10, CANVAS[1] * 0.86), "Formula: " + " ".join(formula), fill="white", font=_font(20))
    return np.asarray(canvas)
