"""The arms of ``seed compare``: GRPO (with or without DAPO's dynamic sampling, ``grpo-filter``), GiGPO,
SEED (over either advantage) and SEED's ablations, each a set of config overrides on one shared
config, and how each is evaluated."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Arm:
    """How an arm trains (its overrides) and how its final policy is evaluated."""

    overrides: tuple[str, ...]
    #: Another arm with the same overrides whose runs this arm shares (trained once).
    trains_as: str = ""
    #: Evaluated with skills in the prompt: for each task, the best match among the skills its own
    #: run wrote in training (the Skill-Prompt ablation); every other arm plays with none.
    skill_prompt: bool = False
    #: How the table names the arm where its name alone could mislead.
    label: str = ""


_SEED = ("algo=seed", "sft=true", "analyzer=self", "skills=on-policy", "advantage=grpo")
_LAMBDA0 = (*_SEED, "lambda_opd=0")
#: The arms. "seed-scripted" is a diagnostic (oracle skills), never the SEED row.
ARMS: dict[str, Arm] = {
    "grpo": Arm(("algo=grpo", "advantage=grpo", "sft=false")),
    "grpo-filter": Arm(
        ("algo=grpo", "advantage=grpo", "sft=false", "filter_groups=true"),
        label="grpo-filter (GRPO with dynamic sampling: plays more episodes an update)",
    ),
    "gigpo": Arm(("algo=grpo", "advantage=gigpo", "sft=false")),
    "seed": Arm((*_SEED, "lambda_opd=0.01")),
    "seed-gigpo": Arm(
        ("algo=seed", "sft=true", "analyzer=self", "skills=on-policy", "advantage=gigpo", "lambda_opd=0.01")
    ),
    "seed-step-skills": Arm(
        (*_SEED, "lambda_opd=0.01", "step_skills=true"),
        label="seed-step-skills (SEED with skills for its critical steps too)",
    ),
    "seed-apart": Arm(
        (*_SEED, "lambda_opd=0.01", "sft_apart=true"),
        label="seed-apart (SEED with Stage 1 in a skill writer of its own, never in the acting policy)",
    ),
    "seed-no-sft": Arm(("algo=seed", "sft=false", "analyzer=self", "skills=on-policy", "advantage=grpo")),
    "seed-frozen-analyzer": Arm(
        ("algo=seed", "sft=true", "analyzer=frozen-initial", "skills=on-policy", "advantage=grpo")
    ),
    "seed-static-library": Arm(("algo=seed", "sft=true", "analyzer=self", "skills=static-library", "advantage=grpo")),
    "seed-lambda0": Arm(_LAMBDA0),
    "skill-prompt": Arm(
        _LAMBDA0,
        trains_as="seed-lambda0",
        skill_prompt=True,
        label="skill-prompt (seed-lambda0's policy with its own skills in the prompt)",
    ),
    "seed-scripted": Arm(
        ("algo=seed", "sft=false", "analyzer=scripted", "skills=on-policy", "advantage=grpo"),
        label="seed-scripted (diagnostic: oracle skills, not SEED)",
    ),
}
