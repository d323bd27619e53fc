"""The tiny corridor run the run-level tests share: a random 2-layer model on ``seed/Corridor-v0``,
one-word replies, four steps, in seconds."""

TINY_CORRIDOR = [
    "env=seed/Corridor-v0",
    "model=tiny-random",
    "history_length=0",
    "one_shot=false",
    "max_steps=4",
    "style=act",
    "max_new_tokens=4",
    "progress=false",
]
