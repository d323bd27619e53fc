"""An episode as readable text: what the agent saw, said and did, step by step."""

from __future__ import annotations

from seed_rl.rollout import Episode


def format_transcript(episode: Episode, *, show_prompts: bool = False) -> str:
    """Each step's observation, reply, action and outcome; ``show_prompts`` adds each full prompt."""
    lines = [f"=== {episode.env_id} task {episode.task_id}", f"Task: {episode.task}"]
    for row in episode.rows:
        lines.append(f"--- step {row.step}")
        if show_prompts and row.prompt is not None:
            lines += ["[prompt]", row.prompt.render()]
        lines += [f"[observation]\n{row.observation}", f"[reply]\n{row.response.strip()}"]
        status = "valid" if row.valid else f"INVALID ({row.error})"
        lines.append(f"[action] {row.action!r}  reward={row.reward:g}  {status}")
    lines.append(f"[final observation]\n{episode.final_observation}")
    lost = f" lost={episode.lost['reason']!r}" if episode.lost else ""
    lines.append(
        f"=== result: won={episode.won} score={episode.score:g} steps={len(episode.rows)} "
        f"return={episode.ret:g} invalid={episode.invalid_steps}{lost}"
    )
    return "\n".join(lines)
