"""Render one frame of each visual env into assets/envs/ (the pictures the README shows).

python scripts/render_samples.py
"""

from __future__ import annotations

from pathlib import Path

import gymnasium as gym
from PIL import Image

import seed_envs  # noqa: F401  (registers the ids)

OUT = Path(__file__).resolve().parents[1] / "assets" / "envs"
SAMPLES = {
    "sokoban.png": ("seed/Sokoban-v0", {}),
    "ezpoints.png": ("seed/EZPoints-v0", {}),
}


def main() -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for name, (env_id, kwargs) in SAMPLES.items():
        env = gym.make(env_id, **kwargs)
        obs, _ = env.reset(options={"split": "valid_seen", "index": 0})
        plan = env.unwrapped.expert_plan() or []
        if len(plan) > 1:  # show a state in mid-episode
            obs, *_ = env.step(plan[0])
        Image.fromarray(obs["image"]).save(OUT / name, optimize=True)
        print(f"wrote {OUT / name}")


if __name__ == "__main__":
    main()
