"""``seed eval``: a policy on a manifest's fixed tasks, with 95% intervals, as a table and JSON.

    seed eval --policy runs/compare/seed/seed0 --env sokoban --split valid_unseen --seeds 0 1 2
    seed eval --policy smollm2 --env alfworld --split valid_unseen --episodes 32 --out eval.json
    seed eval --policy http://127.0.0.1:8000#Qwen2.5-7B-Instruct --env webshop --split valid_unseen
    seed eval --policy tiny-random --env sokoban --split valid_unseen --skill "Push the box toward the target."

POLICY: a training run folder or one of its checkpoints (<run>/checkpoints/update-NNNNNN),
smollm2, tiny-random, hf:PATH, or an OpenAI-compatible server http(s)://HOST:PORT#MODEL.
The tasks are those of seed_rl/manifests/<env>/<split>.json (the first N with --episodes),
checked against this machine's data first; each is played once per seed. No skill is in the
prompt (the paper's deployment) unless --skill/--skill-file gives one (the Skill-Prompt baseline).
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any


def register(subparsers: argparse._SubParsersAction) -> None:
    doc = (__doc__ or "").strip()
    parser = subparsers.add_parser(
        "eval",
        help=doc.splitlines()[0].replace("%", "%%"),
        description=doc,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("--policy", required=True, help="run folder, checkpoint, model name or server URL")
    parser.add_argument("--env", required=True, help="env name (sokoban, alfworld, ...) or id (seed/Sokoban-v0)")
    parser.add_argument("--split", default="valid_unseen", help="train, valid_seen or valid_unseen")
    parser.add_argument("--seeds", type=int, nargs="+", default=[0], help="sampling seeds; each task once per seed")
    parser.add_argument("--episodes", type=int, default=None, help="the manifest's first N tasks (default: all)")
    parser.add_argument(
        "--temperature", type=float, default=None, help="default: the run's eval_temperature, else 0 (greedy)"
    )
    parser.add_argument("--max-steps", type=int, default=None, help="steps per episode (default: the run's/env's)")
    skill = parser.add_mutually_exclusive_group()
    skill.add_argument("--skill", default=None, metavar="TEXT", help="a fixed skill put in every prompt")
    skill.add_argument("--skill-file", default=None, metavar="FILE", help="the fixed skill, read from a file")
    parser.add_argument("--out", default=None, metavar="FILE.json", help="write the report as JSON")
    parser.add_argument("--manifest", default=None, metavar="FILE", help="another manifest file for this env/split")
    parser.add_argument("--visual", action="store_true", help="show the env's image to a VLM (model policies)")
    parser.add_argument("--style", choices=("act", "think"), default=None, help="reply style (model policies)")
    parser.add_argument("--max-new-tokens", type=int, default=None, help="reply length cap (model policies)")
    parser.set_defaults(func=run)


class UsageError(ValueError):
    """A bad argument; the message names it."""


def read_skill(args: argparse.Namespace) -> str | None:
    if args.skill_file is not None:
        path = Path(args.skill_file)
        if not path.is_file():
            raise UsageError(f"skill file not found: {path}")
        text = path.read_text(encoding="utf-8")
    else:
        text = args.skill
    if text is not None and not text.strip():
        raise UsageError("the skill is empty")
    return text.strip() if text is not None else None


def check_browser(env_id: str) -> None:
    from seed_envs.registration import ENVS

    if any(e.id == env_id and e.needs_browser for e in ENVS):
        from seed_envs.webshop.browser_env import browser_available

        reason = browser_available()
        if reason is not None:
            raise UsageError(f"{env_id} needs a browser here: {reason}")


def eval_config(args: argparse.Namespace, loaded: Any, env_id: str) -> Any:
    """The settings of the evaluation: the run's (or the defaults), then the command's options."""
    import dataclasses

    cfg = loaded.config
    if cfg.env != env_id:  # a run evaluated on another env: its env keywords are not this env's
        cfg = dataclasses.replace(cfg, env=env_id, env_kwargs={})
    changes: dict[str, Any] = {}
    if args.temperature is not None:
        changes["eval_temperature"] = args.temperature
    if args.max_steps is not None:
        changes["max_steps"] = args.max_steps
    if loaded.kind != "run":
        style = args.style or cfg.style
        default_tokens = 32 if style == "act" else 256
        changes.update(style=style, max_new_tokens=args.max_new_tokens or default_tokens)
    return dataclasses.replace(cfg, **changes)


def check_args(args: argparse.Namespace) -> None:
    if args.temperature is not None and args.temperature < 0:
        raise UsageError(f"--temperature {args.temperature} is not allowed; it must be >= 0")
    for flag, value in (("--max-steps", args.max_steps), ("--max-new-tokens", args.max_new_tokens)):
        if value is not None and value < 1:
            raise UsageError(f"{flag} {value} is not allowed; it must be >= 1")


def run(args: argparse.Namespace) -> int:
    from seed_envs.core import MissingDataError
    from seed_rl.evaluate.manifests import ManifestError
    from seed_rl.train.saved_policy import PolicyError

    try:
        report = evaluate_command(args)
    except (UsageError, ManifestError, PolicyError, MissingDataError) as error:
        print(f"error: {error}", file=sys.stderr)
        return 2
    from seed_rl.evaluate.report import markdown_report

    print(markdown_report(report))
    if args.out:
        import json

        out = Path(args.out)
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
        print(f"\nwrote {out}")
    return 0


def evaluate_command(args: argparse.Namespace) -> dict[str, Any]:
    """Check the arguments (cheap ones first), load the policy, check the tasks, play them, report."""
    from seed_rl.evaluate.manifests import check_split_name, check_tasks, load_manifest, resolve_env

    check_args(args)
    env_id = resolve_env(args.env)
    split = check_split_name(args.split)
    manifest = load_manifest(env_id, split, args.manifest)
    tasks = manifest.first(args.episodes)
    skill = read_skill(args)
    check_browser(env_id)

    from seed_rl.train.saved_policy import load_eval_policy
    from seed_rl.train.setup.run_setup import env_kwargs

    loaded = load_eval_policy(args.policy, env_id, visual=args.visual)
    cfg = eval_config(args, loaded, env_id)
    replaced = {k: v for k, v in cfg.env_kwargs.items() if k in manifest.env_kwargs and manifest.env_kwargs[k] != v}
    if replaced:
        kept = {k: manifest.env_kwargs[k] for k in replaced}
        print(f"note: the manifest's env keywords {kept} replace the run's {replaced}", flush=True)
    kwargs = env_kwargs(env_id, split, cfg.visual, {**cfg.env_kwargs, **manifest.env_kwargs})
    if cfg.max_steps:
        kwargs["max_episode_steps"] = cfg.max_steps
    print(f"checking {len(tasks)} tasks of {manifest.label} against this machine's data", flush=True)
    check_tasks(manifest, tasks, kwargs)
    result = play(loaded.policy, cfg, env_id, split, tasks, args.seeds, kwargs, skill)

    from seed_rl.evaluate.report import eval_report

    settings = {
        "policy": args.policy,
        "policy_kind": loaded.kind,
        "checkpoint": str(loaded.checkpoint) if loaded.checkpoint else None,
        "temperature": cfg.eval_temperature,
        "max_steps": cfg.max_steps or None,
        "style": cfg.style,
        "max_new_tokens": cfg.max_new_tokens,
        "skill": skill,
    }
    return eval_report(result, manifest, tasks, args.seeds, settings)


def play(
    policy: Any, cfg: Any, env_id: str, split: str, tasks: Any, seeds: list[int], kwargs: dict[str, Any], skill: Any
) -> Any:
    """Every task once per seed through :func:`seed_rl.evaluate.play.evaluate`; checks the ids played."""
    import dataclasses

    from seed_rl.evaluate.manifests import TASKS_OF, ManifestMismatch
    from seed_rl.evaluate.play import evaluate
    from seed_rl.train.phases.skill_prompt import FixedSkillBuilder
    from seed_rl.train.setup.run_setup import eval_sampling, run_prompt_builder

    prompt_cfg = dataclasses.replace(cfg, env=TASKS_OF.get(env_id, env_id))  # the browser env reads WebShop's prompt
    local = hasattr(policy, "count_tokens") and hasattr(policy, "context_length")
    if local:
        budget = policy.context_length - cfg.max_new_tokens
        reserve = cfg.skill_reserve_tokens if skill else 0
        builder = run_prompt_builder(prompt_cfg, policy.count_tokens, budget - reserve)
    else:
        budget, builder = None, run_prompt_builder(prompt_cfg)
    if skill:
        builder = FixedSkillBuilder(builder, skill, budget)
    ids = [t.task_id for t in tasks]
    result = evaluate(
        policy,
        builder,
        env=env_id,
        split=split,
        task_ids=ids,
        sampling=eval_sampling(cfg),
        seeds=seeds,
        env_kwargs=kwargs,
        progress=cfg.progress,
    )
    played = [e.task_id for e in result.episodes]
    if played != ids * len(seeds):
        raise ManifestMismatch(f"the env played other tasks than the manifest's: {played[:3]}... for {ids[:3]}...")
    return result
