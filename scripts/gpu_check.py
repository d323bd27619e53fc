"""A prepared GPU check (issue 48, point 5): four steps on one CUDA GPU, one summary JSON.

Steps, each a process of its own with a time budget, so that one that fails, hangs or runs out of
memory is recorded (status, error, the tail of its output) and the others still run:

1. ``train_grpo`` and ``train_seed``: one update of ``seed train`` (the project's CLI and Trainer)
   on ``seed/Corridor-v0``, 2 tasks x 2 episodes of at most 2 steps, 8 new tokens per reply; SEED
   with the scripted analyzer (its skills parse whatever the model is) and ``lambda_opd=0.01``.
   Recorded from the run's ``metrics.jsonl``: seconds per phase, the losses (checked finite), the
   rows trained (and for SEED the rows with an OPD term, checked > 0), the sampler's gap. (A random
   model wins nothing, so every group ties, and before the first step the KL is 0: GRPO's loss and
   gradient are 0, while its passes with gradient still run. SEED's OPD term is not 0.)
2. ``logprobs``: the generation engine's log-probs on the device against the CPU's in float32 for
   the same weights, in float32 and bfloat16 (``scripts/gpu_logprobs.py``: its tolerances);
3. ``bench_train``: ``scripts/bench_train.py`` at a small shape (its ``seed`` and ``sampling``
   sections: SEED's update against GRPO's, throughput, peak memory, batched sampling).

The CUDA run uses ``random:qwen2.5-0.5b`` (built from its config with random weights; nothing is
downloaded). ``--dry-run`` runs the same commands on the CPU at tiny shapes (``tiny-random``, and
for the log-prob step the same preset shrunk to 2 layers), in under a minute.

The summary (``--out``; default ``$OUT/gpu_check.json`` where ``$OUT`` is set, else
``runs/gpu_check.json``) is rewritten after every step; each step's output is kept in
``<out>_logs/<step>.log`` beside it. Exit status: 0 where every step is ``ok``, 1 otherwise, 2
where ``--dry-run`` is missing and torch sees no CUDA GPU.

    scripts/gpu_check.sh              # the CUDA run (8 minutes at most)
    scripts/gpu_check.sh --dry-run    # the same steps on the CPU, tiny shapes
"""

from __future__ import annotations

import argparse
import contextlib
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
SCRIPTS = ROOT / "scripts"

#: The metrics the train steps check are finite (``opd_loss`` only where SEED's OPD term ran).
LOSSES = ("loss", "grpo_loss", "kl", "opd_loss", "grad_norm")

#: What a step's fields are read from, once its command has finished: its own work folder.
Reader = Callable[[Path], dict[str, Any]]


class CheckFailed(RuntimeError):
    """A step ran to its end but what it reports is not right (a loss not finite, a gap over tolerance)."""


@dataclass(frozen=True)
class Shape:
    """Where and at what size the steps run: the CUDA run's, or the dry run's."""

    device: str
    model: str  # the trainer's and the benchmark's
    logprob_shape: tuple[str, ...] = ()  # random-preset overrides of the log-prob step's model
    logprob_model: str = "random:qwen2.5-0.5b"
    env: str = "seed/Corridor-v0"
    tasks: int = 2
    group: int = 2
    max_steps: int = 2
    max_new_tokens: int = 8
    #: torch's CPU threads (the config key ``threads``; 0: torch's default). The dry run takes one: on a
    #: machine whose cores other work also uses, two threads per process ran its benchmark 10x slower.
    threads: int = 0
    #: Seconds each step may take (the CUDA run's add up to under 8 minutes, with the start).
    budgets: dict[str, float] = field(
        default_factory=lambda: {"train_grpo": 95.0, "train_seed": 95.0, "logprobs": 100.0, "bench_train": 165.0}
    )


CUDA = Shape(device="cuda", model="random:qwen2.5-0.5b")
DRY = Shape(
    device="cpu",
    model="tiny-random",
    threads=1,
    logprob_shape=(
        "num_hidden_layers=2",
        "hidden_size=128",
        "intermediate_size=256",
        "num_attention_heads=4",
        "vocab_size=49152",
    ),
)


@dataclass(frozen=True)
class Step:
    name: str
    command: list[str]
    read: Reader


# ------------------------------------------------------------------------------ the steps
def train_step(shape: Shape, algo: str) -> Step:
    """One update of ``seed train`` with ``algo``, in the step's work folder."""
    command = [sys.executable, "-m", "seed_rl.cli", "train", f"env={shape.env}", f"model={shape.model}"]
    command += [f"device={shape.device}", "dtype=auto", f"algo={algo}", "updates=1", "seed=0", "progress=false"]
    command += [f"tasks_per_update={shape.tasks}", f"group_size={shape.group}", f"max_steps={shape.max_steps}"]
    command += [f"max_new_tokens={shape.max_new_tokens}", f"threads={shape.threads}", "run_dir={work}/run"]
    if algo == "seed":
        command += ["analyzer=scripted", "lambda_opd=0.01"]
    return Step(f"train_{algo}", command, lambda work: read_train_run(work / "run", algo))


def read_train_run(run_dir: Path, algo: str) -> dict[str, Any]:
    """A train step's fields, from its run folder's ``metrics.jsonl`` and resolved ``config.yaml``."""
    import yaml

    lines = (run_dir / "metrics.jsonl").read_text(encoding="utf-8").splitlines()
    if len(lines) != 1:
        raise CheckFailed(f"metrics.jsonl has {len(lines)} lines; one update should write one")
    metrics = json.loads(lines[0])
    config = yaml.safe_load((run_dir / "config.yaml").read_text(encoding="utf-8"))
    losses = {key: metrics[key] for key in LOSSES if key in metrics}
    fields = {
        "algo": algo,
        "device": config.get("device"),
        "dtype": config.get("dtype"),
        "model": config.get("model"),
        "phase_seconds": {k.removeprefix("seconds_"): v for k, v in metrics.items() if k.startswith("seconds_")},
        "losses": losses,
        "losses_finite": all(isinstance(v, (int, float)) and math.isfinite(v) for v in losses.values()),
        "rows": metrics.get("rows"),
        "rows_trained": metrics.get("rows_trained"),
        "opd_rows": metrics.get("opd_rows"),
        "tokens_scored": metrics.get("tokens_scored"),
        "sampler_gap_max": metrics.get("sampler_gap_max"),
    }
    problems = []
    if "loss" not in losses or not fields["losses_finite"]:
        problems.append(f"losses not all finite: {losses}")
    if not fields["rows_trained"]:
        problems.append("no row trained")
    if algo == "seed" and not (fields["opd_rows"] and "opd_loss" in losses):
        problems.append(f"no OPD term ran (opd_rows={fields['opd_rows']})")
    if problems:
        raise CheckFailed("; ".join(problems), fields)
    return fields


def logprob_step(shape: Shape) -> Step:
    """``scripts/gpu_logprobs.py`` on the device, float32 and bfloat16 against the CPU's float32."""
    command = [sys.executable, str(SCRIPTS / "gpu_logprobs.py"), "--device", shape.device]
    command += ["--model", shape.logprob_model, "--threads", str(shape.threads), "--out", "{work}/logprobs.json"]
    for item in shape.logprob_shape:
        command += ["--shape", item]
    return Step("logprobs", command, read_logprobs)


def read_logprobs(work: Path) -> dict[str, Any]:
    report = json.loads((work / "logprobs.json").read_text(encoding="utf-8"))
    fields = {k: report[k] for k in ("model", "shape", "device_name", "reference", "comparisons", "passed")}
    if not report["passed"]:
        over = {c["dtype"]: c["over_tolerance"] for c in report["comparisons"] if not c["passed"]}
        raise CheckFailed(f"log-probs over tolerance: {over}", fields)
    return fields


def bench_step(shape: Shape) -> Step:
    """``scripts/bench_train.py`` at the step's shape: SEED against GRPO, and batched sampling."""
    command = [sys.executable, str(SCRIPTS / "bench_train.py"), "--device", shape.device, "--model", shape.model]
    command += ["--sections", "seed,sampling", "--no-stage1", "--spread-rewards", "--rounds", "1"]
    command += ["--tasks", str(shape.tasks), "--group", str(shape.group), "--max-steps", str(shape.max_steps)]
    command += ["--threads", str(shape.threads), "--out", "{work}/bench_train.json"]
    return Step("bench_train", command, read_bench)


def read_bench(work: Path) -> dict[str, Any]:
    report = json.loads((work / "bench_train.json").read_text(encoding="utf-8"))
    seed = report["seed_vs_grpo"]
    rates = seed["throughput"]
    ratios = {
        "seed_vs_grpo_update": rates["seed_vs_grpo_update"],
        "update_vs_grpo": seed["update_vs_grpo"],
        "floor_vs_grpo": seed["floor"]["floor_vs_grpo"],
        "batched_generation_ratio": report.get("batched_generation_ratio"),
    }
    fields = {
        "device": report["device"],
        "dtype": report["dtype"],
        "ratios": ratios,
        "tokens_per_s": {k: rates[f"{k}_tokens_per_s"] for k in ("sampling", "scoring", "training")},
        "peak_cuda_memory_mb": rates.get("peak_cuda_memory_mb"),
        "report": report,
    }
    if not math.isfinite(ratios["seed_vs_grpo_update"]):
        raise CheckFailed(f"SEED/GRPO update ratio is {ratios['seed_vs_grpo_update']}", fields)
    return fields


def steps_of(shape: Shape) -> list[Step]:
    return [train_step(shape, "grpo"), train_step(shape, "seed"), logprob_step(shape), bench_step(shape)]


# ------------------------------------------------------------------------------ running them
def run_command(command: list[str], log: Path, timeout: float) -> int | None:
    """``command`` in its own process group, output to ``log``; its exit status, or None where it
    ran past ``timeout``. Where it runs too long, or this process is stopped meanwhile, the whole
    group is stopped too."""
    env = {**os.environ, "PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))}
    env.update(PYTHONUNBUFFERED="1", HF_HUB_OFFLINE="1", TRANSFORMERS_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    with log.open("w", encoding="utf-8") as handle:
        handle.write(f"$ {' '.join(command)}\n")
        handle.flush()
        process = subprocess.Popen(
            command, cwd=ROOT, env=env, stdout=handle, stderr=subprocess.STDOUT, start_new_session=True
        )
        try:
            return process.wait(timeout=max(timeout, 1.0))
        except subprocess.TimeoutExpired:
            stop_group(process)
            return None
        except BaseException:
            stop_group(process)
            raise


def stop_group(process: subprocess.Popen) -> None:
    """SIGTERM to ``process``'s group, SIGKILL 10 s later if it is still there."""
    for sig in (signal.SIGTERM, signal.SIGKILL):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(process.pid, sig)
        try:
            process.wait(timeout=10.0)
            return
        except subprocess.TimeoutExpired:
            continue


class Stopped(BaseException):
    """This process got SIGTERM (the wrapper's overall ``timeout``): the summary records it."""


def on_sigterm(signum: int, _frame: Any) -> None:
    raise Stopped(f"stopped by signal {signum}")


def tail(path: Path, chars: int = 3000) -> str:
    text = path.read_text(encoding="utf-8", errors="replace") if path.is_file() else ""
    return text[-chars:]


def outcome(step: Step, work: Path, returncode: int | None, budget: float) -> dict[str, Any]:
    """The step's fields where it exited 0 and they check; else the error, with the fields its
    command still wrote (``gpu_logprobs.py`` exits 1 with its report written)."""
    if returncode is None:
        raise TimeoutError(f"ran past its budget of {budget:.0f} s")
    if returncode == 0:
        return step.read(work)
    try:
        fields = step.read(work)
    except CheckFailed as failed:
        raise CheckFailed(f"exit status {returncode}: {failed.args[0]}", *failed.args[1:]) from None
    except Exception:
        raise RuntimeError(f"exit status {returncode}") from None
    raise CheckFailed(f"exit status {returncode}", fields)


def run_step(step: Step, budget: float, logs: Path, work_root: Path) -> dict[str, Any]:
    """Run ``step`` within ``budget`` seconds; its record: status (``ok``, ``failed``, ``timeout`` or
    ``skipped``), seconds, and its fields or its error."""
    work = work_root / step.name
    work.mkdir(parents=True, exist_ok=True)
    command = [part.replace("{work}", str(work)) for part in step.command]
    log = logs / f"{step.name}.log"
    record: dict[str, Any] = {"command": " ".join(command), "budget_s": round(budget, 1), "log": str(log)}
    if budget < 5:
        return {**record, "status": "skipped", "seconds": 0.0, "error": "no time left in the overall budget"}
    start = time.perf_counter()
    returncode = run_command(command, log, budget)
    record["seconds"] = round(time.perf_counter() - start, 2)
    try:
        record.update(outcome(step, work, returncode, budget))
        record["status"] = "ok"
    except CheckFailed as failed:
        message, *extra = failed.args
        record.update(extra[0] if extra else {})
        record.update(status="failed", error=message, log_tail=tail(log))
    except Exception as error:  # a failing step is recorded; the others still run
        status = "timeout" if isinstance(error, TimeoutError) else "failed"
        record.update(status=status, error=f"{type(error).__name__}: {error}", log_tail=tail(log))
    for name in ("logprobs.json", "bench_train.json"):  # the reports come back beside the logs
        if (work / name).is_file():
            shutil.copy(work / name, logs / name)
    return record


def environment(shape: Shape, dry_run: bool) -> dict[str, Any]:
    """Versions and the device, as the summary's header."""
    import torch
    import transformers

    cuda = torch.cuda.is_available()
    info: dict[str, Any] = {
        "dry_run": dry_run,
        "device": shape.device,
        "model": shape.model,
        "python": platform.python_version(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "transformers": transformers.__version__,
        "cuda_available": cuda,
        "gpu": torch.cuda.get_device_name(0) if cuda else None,
    }
    for name in ("peft", "accelerate"):
        try:
            info[name] = __import__(name).__version__
        except ImportError:
            info[name] = None
    return info


def default_out() -> Path:
    out = os.environ.get("OUT")
    return Path(out) / "gpu_check.json" if out else ROOT / "runs" / "gpu_check.json"


def write(path: Path, summary: dict[str, Any]) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(summary, indent=1), encoding="utf-8")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dry-run", action="store_true", help="the same steps on the CPU at tiny shapes")
    parser.add_argument("--out", type=Path, default=None, help="default: $OUT/gpu_check.json, else runs/gpu_check.json")
    parser.add_argument("--budget", type=float, default=460.0, help="seconds for all steps together")
    parser.add_argument("--steps", default=None, help="comma-separated subset of the steps (default: all)")
    args = parser.parse_args(argv)
    shape = DRY if args.dry_run else CUDA
    steps = steps_of(shape)
    if args.steps:
        wanted = args.steps.split(",")
        unknown = sorted(set(wanted) - {s.name for s in steps})
        if unknown:
            parser.error(f"unknown steps {unknown}; allowed: {', '.join(s.name for s in steps)}")
        steps = [s for s in steps if s.name in wanted]
    summary: dict[str, Any] = environment(shape, args.dry_run)
    if not args.dry_run and not summary["cuda_available"]:
        parser.error("torch sees no CUDA GPU here; --dry-run runs the same steps on the CPU")
    out = args.out or default_out()
    logs = out.with_name(f"{out.stem}_logs")
    logs.mkdir(parents=True, exist_ok=True)
    start = time.perf_counter()
    deadline = start + args.budget
    summary.update(budget_s=args.budget, steps={}, status="running", failed=[], seconds=0.0)
    write(out, summary)
    signal.signal(signal.SIGTERM, on_sigterm)
    with tempfile.TemporaryDirectory(prefix="gpu_check_") as work_root:
        for step in steps:
            budget = min(shape.budgets[step.name], deadline - time.perf_counter())
            print(f"[gpu_check] {step.name} (budget {budget:.0f} s) ...", flush=True)
            step_start = time.perf_counter()
            try:
                record = run_step(step, budget, logs, Path(work_root))
            except Stopped as stopped:
                seconds = round(time.perf_counter() - step_start, 2)
                record = {
                    "status": "stopped",
                    "seconds": seconds,
                    "error": str(stopped),
                    "log": str(logs / f"{step.name}.log"),
                }
            summary["steps"][step.name] = record
            print(f"[gpu_check] {step.name}: {record['status']} in {record['seconds']:.1f} s", flush=True)
            if record["status"] != "ok":
                print(f"[gpu_check]   {record['error']} (log: {record.get('log')})", flush=True)
            failed = [name for name, r in summary["steps"].items() if r["status"] != "ok"]
            summary.update(seconds=round(time.perf_counter() - start, 2), failed=failed)
            done = len(summary["steps"]) == len(steps)
            summary["status"] = "failed" if failed else "ok" if done else "running"
            write(out, summary)
            if record["status"] == "stopped":
                break
    print(f"[gpu_check] {summary['status']} in {summary['seconds']:.1f} s; wrote {out}", flush=True)
    return 0 if summary["status"] == "ok" else 1


if __name__ == "__main__":
    sys.exit(main())
