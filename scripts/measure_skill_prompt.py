"""Does a good skill in the prompt change what the policy does? OPD's precondition, measured.

SEED distills the policy's behaviour *with* a hindsight skill in context into the policy
without it. If a skill in the prompt does not raise the policy's success at inference, the
gate ``sigmoid(beta * Delta)`` has nothing useful to pass on. This evaluates one config's
policy (the untrained model by default) on the manifest's ``valid_unseen`` tasks, under the
run's evaluation protocol, in three arms:

- ``none``: no skill (the deployment SEED trains for);
- ``oracle``: each task's scripted skill of the expert's own winning episode, its episode skill
  alone (a workflow that names the solving moves: the best skill the scripted analyzer can write
  for that task);
- ``own``: the episode skill of the policy's own no-skill episode on that task (what SEED's
  ``analyzer=scripted`` arm writes: avoidance rules after a failure, the workflow after a win);
- ``oracle_steps`` and ``own_steps``: the same skills whole, each step's skill too in the prompt
  of its step, as SEED's teacher pass injects a skill into ``h_skill``
  (:func:`~seed_agent.skills.inject.inject`).

It prints success [Wilson 95%] per arm, the tasks each arm wins that ``none`` loses and the
reverse, and the share of first actions the skill changes. ``--results FILE --label NAME`` adds
(or replaces) the model's row in a result file that ``scripts/render_results.py`` renders as a
README table.

    python scripts/measure_skill_prompt.py --config demo --tasks 32 --set max_steps=6
    python scripts/measure_skill_prompt.py --config alfworld_warm --tasks 32 --arms oracle oracle_steps
"""

from __future__ import annotations

import argparse
import datetime
import json
import shlex
import sys
from pathlib import Path
from tempfile import mkdtemp

import torch

from seed_agent.skills.annotate import annotate
from seed_envs.vector import make_vec
from seed_rl.compare.comparison import manifest_indices
from seed_rl.config import load_config
from seed_rl.rollout import Episode, EpisodeStart, run_episodes
from seed_rl.stats import proportion_ci
from seed_rl.train.setup.run_setup import run_env_kwargs, run_prompt_builder
from seed_rl.train.stage1.expert import NoisyExpertAgent
from seed_rl.train.trainer import Trainer

SPLIT = "valid_unseen"
#: The arms with a skill, each played beside ``none`` (see the module docstring).
SKILL_ARMS = ("oracle", "oracle_steps", "own", "own_steps")


def expert_episodes(cfg, builder, indices: list[int]) -> list[Episode]:
    """The expert's (noise-free) episode on each task, with its plan recorded for the annotator."""
    starts = [EpisodeStart(options={"split": SPLIT, "index": i}, group=k) for k, i in enumerate(indices)]
    with make_vec(cfg.env, min(len(starts), 32), backend="sync", **run_env_kwargs(cfg, SPLIT)) as vec:
        return run_episodes(
            vec, NoisyExpertAgent(builder, (0.0,), rng_seed=0), starts, env_id=cfg.env, record_expert=True
        )


def first_action(e: Episode) -> str:
    return (e.rows[0].action or "") if e.rows else ""


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--config", default="demo")
    parser.add_argument("--tasks", type=int, default=32)
    parser.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="config overrides")
    parser.add_argument("--json", default=None, help="also write the result here")
    parser.add_argument("--results", default=None, help="add the model's row to this result file")
    parser.add_argument("--label", default=None, help="the model's name in the result file")
    parser.add_argument(
        "--arms",
        nargs="+",
        choices=SKILL_ARMS,
        default=list(SKILL_ARMS),
        help="the skill arms to play beside none (default: all); an ALFWorld arm is minutes of CPU",
    )
    args = parser.parse_args()
    if args.results and not args.label:
        parser.error("--results needs --label")
    torch.set_num_threads(2)

    cfg = load_config(args.config, [f"run_dir={mkdtemp(prefix='skill-prompt-')}", "progress=false", *args.set])
    trainer = Trainer(cfg)
    try:
        indices = manifest_indices(cfg, args.tasks)
        none = trainer.evaluate(SPLIT, indices).episodes
        builder = run_prompt_builder(cfg)
        oracle = [
            annotate(e.trajectory(), e.expert_plan, cfg.sft_skill_words) for e in expert_episodes(cfg, builder, indices)
        ]
        own = [annotate(e.trajectory(), e.expert_plan, cfg.sft_skill_words) for e in none]
        arms = {"none": none}
        for name in args.arms:
            skills = oracle if name.startswith("oracle") else own
            shown = skills if name.endswith("_steps") else [skill.episode_skill for skill in skills]
            arms[name] = trainer.evaluate(SPLIT, indices, task_skills=shown).episodes
    finally:
        trainer.close()

    report = {"config": args.config, "overrides": args.set, "tasks": indices, "arms": {}}
    print(f"{'arm':8} {'success [95% CI]':>24} {'gains':>6} {'losses':>7} {'first action changed':>21}")
    for name, episodes in arms.items():
        won = sum(e.won for e in episodes)
        ci = proportion_ci(won, len(episodes))
        gains = sum(e.won and not n.won for e, n in zip(episodes, none, strict=True))
        losses = sum(n.won and not e.won for e, n in zip(episodes, none, strict=True))
        changed = sum(first_action(e) != first_action(n) for e, n in zip(episodes, none, strict=True))
        print(
            f"{name:8} {100 * ci.mean:7.1f}% [{100 * ci.low:4.1f}, {100 * ci.high:4.1f}] "
            f"{gains:>6} {losses:>7} {changed:>14}/{len(episodes)}"
        )
        report["arms"][name] = {
            "won": won,
            "n": len(episodes),
            "low": ci.low,
            "high": ci.high,
            "gains": gains,
            "losses": losses,
            "first_action_changed": changed,
        }
    print("example oracle skill:", oracle[0])
    print("example own skill:", own[0])
    if args.json:
        Path(args.json).write_text(json.dumps(report, indent=1), encoding="utf-8")
    if args.results:
        command = shlex.join(["python", "scripts/measure_skill_prompt.py", *sys.argv[1:]])
        add_to_results(Path(args.results), args.label, report, command)


def add_to_results(path: Path, label: str, report: dict, command: str) -> None:
    """Put ``report`` in the ``skill_precondition`` result file at ``path`` as the row ``label``
    (replacing a row of that label), with the command that made it; the file's command lists every row's."""
    result = json.loads(path.read_text(encoding="utf-8")) if path.is_file() else {"kind": "skill_precondition"}
    models = [m for m in result.get("models", []) if m["label"] != label]
    models.append({"label": label, "command": command, **report})
    result.update(models=models, date=datetime.date.today().isoformat())
    result["command"] = "\n".join(m["command"] for m in models)
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()
