"""episodes.jsonl: what a tiny run logs per episode, how resume keeps it exact, and ``seed export``."""

from __future__ import annotations

import json
import math

import pytest

pytest.importorskip("torch")
pytest.importorskip("peft")

from test_train import TINY

from seed_rl.cli import main
from seed_rl.config import load_config
from seed_rl.records.episode_log import EPISODES_FILE, episode_records, read_episodes
from seed_rl.records.run_log import read_metrics
from seed_rl.train.trainer import Trainer, train

SEED = ("algo=seed", "analyzer=scripted")


def config(path, *extra):
    return load_config("sokoban_grpo", [*TINY, f"run_dir={path}", *extra])


@pytest.fixture(scope="module")
def seed_run(tmp_path_factory):
    """Two SEED updates with oracle skills: every episode has a skill, every step OPD."""
    run = tmp_path_factory.mktemp("episode-log") / "seed"
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("SEED_CACHE_DIR", str(tmp_path_factory.mktemp("seed-cache")))
        train(config(run, "updates=2", *SEED))
    return run


def lines(run):
    return [json.loads(line) for line in (run / EPISODES_FILE).read_text(encoding="utf-8").splitlines()]


def test_every_update_logs_each_episode_with_its_steps_skill_and_gates(seed_run):
    records = lines(seed_run)
    metrics = read_metrics(seed_run)
    cfg = load_config(str(seed_run / "config.yaml"))
    per_update = cfg.tasks_per_update * cfg.group_size
    assert [r["update"] for r in records] == [u for u in range(len(metrics)) for _ in range(per_update)]
    skills = {(s["update"], s["episode"]): s for s in map(json.loads, (seed_run / "skills.jsonl").open())}
    for u, m in enumerate(metrics):
        batch = [r for r in records if r["update"] == u]
        assert sorted(r["episode"] for r in batch) == list(range(per_update))
        assert sum(r["outcome"]["won"] for r in batch) / len(batch) == m["success"]
        assert sum(len(r["steps"]) for r in batch) / len(batch) == m["episode_length"]
        opd_steps = [s for r in batch for s in r["steps"] if s["opd"]]
        assert len(opd_steps) == m["opd_rows"] > 0
        tokens = [g for s in opd_steps for g in s["opd"]["gate"]]
        # one optimizer step: the loss's gates are these, up to the sampler/learner float gap
        assert abs(sum(tokens) / len(tokens) - m["gate_mean"]) < 1e-2
    for r in records:
        assert {"task_id", "task", "split", "env", "group"} <= r.keys() and r["split"] == "train"
        assert r["outcome"]["steps"] == len(r["steps"]) > 0
        assert r["skill"] == skills[(r["update"], r["episode"])]["skill"] and r["skill_error"] is None
        assert math.isclose(r["outcome"]["return"], sum(s["reward"] for s in r["steps"]), abs_tol=1e-9)
        for step in r["steps"]:
            assert step["valid"] == (step["reply_valid"] and step["action_valid"])
            assert step["image"] is None  # a text env
            opd = step["opd"]
            assert len(opd["tokens"]) == len(opd["delta"]) == len(opd["gate"]) > 0
            assert all(isinstance(t, str) for t in opd["tokens"])
            for delta, gate in zip(opd["delta"], opd["gate"], strict=True):
                assert math.isclose(gate, 1 / (1 + math.exp(-cfg.beta_opd * delta)), abs_tol=1e-5)


def test_records_put_gates_on_the_steps_that_sampled_tokens_and_thumbnails_on_visual_steps():
    import base64
    import io

    import numpy as np
    import torch
    from PIL import Image

    from seed_agent.skills import NoSkill, Skill
    from seed_rl.records.rows import ScoreRow, TrainRow
    from seed_rl.rollout import Episode, StepRow

    def step(n, tokens, image=None):
        return StepRow(
            episode=0, group=0, step=n, observation=f"obs {n}", action="up", response="<action>up",
            reply_valid=True, action_valid=n != 2, env_reward=0.0, reward=0.0 if n != 2 else -0.1, info={},
            token_ids=tokens, logprobs=[-1.0] * len(tokens), images=() if image is None else (image,),
        )  # fmt: skip

    frame = np.full((300, 400, 3), 200, dtype=np.uint8)
    episodes = [
        Episode(0, 0, "env", "t0", "task", {}, rows=[step(1, [5, 6], frame), step(2, []), step(3, [7])]),
        Episode(1, 0, "env", "t1", "task", {}, rows=[step(1, [8])]),
    ]
    rows = [
        TrainRow(0, ScoreRow([1], [5, 6]), torch.tensor([-1.0, -2.0]), 1.0, skill_logp=torch.tensor([-1.0, -1.0])),
        TrainRow(0, ScoreRow([1], [7]), torch.tensor([-3.0]), 1.0, skill_logp=torch.tensor([-3.5])),
        TrainRow(1, ScoreRow([1], [8]), torch.tensor([-1.0]), -1.0),
    ]
    skills = [Skill("push it"), NoSkill("no JSON object found")]
    records = episode_records(
        4, episodes, [1.0, 0.0], skills, rows, split="train", beta_opd=2.0,
        decode_tokens=lambda ids: [f"<{i}>" for i in ids], visual=True,
    )  # fmt: skip
    first, second = records
    assert (first["update"], first["skill"], second["skill"], second["skill_error"]) == (
        4, "push it", None, "no JSON object found",
    )  # fmt: skip
    opd = [s["opd"] for s in first["steps"]]
    assert opd[1] is None and opd[0]["tokens"] == ["<5>", "<6>"] and opd[2]["tokens"] == ["<7>"]
    assert opd[0]["delta"] == [0.0, 1.0] and opd[2]["delta"] == [-0.5]
    assert opd[0]["gate"][0] == 0.5 and math.isclose(opd[0]["gate"][1], 1 / (1 + math.exp(-2.0)), abs_tol=1e-6)
    assert second["steps"][0]["opd"] is None  # a row with no teacher log-probs: no OPD
    assert [s["valid"] for s in first["steps"]] == [True, False, True]
    image = first["steps"][0]["image"]
    assert image.startswith("data:image/png;base64,") and first["steps"][2]["image"] is None
    thumbnail = Image.open(io.BytesIO(base64.b64decode(image.split(",", 1)[1])))
    assert max(thumbnail.size) <= 96 and len(image) < 2000
    no_images = episode_records(4, episodes, [1.0, 0.0], skills, rows, split="train", beta_opd=2.0,
                                decode_tokens=lambda ids: [""] * len(ids))  # fmt: skip
    assert no_images[0]["steps"][0]["image"] is None  # only visual runs keep images


def test_a_grpo_run_logs_episodes_with_no_skill_and_no_gates(tmp_path):
    (m,) = train(config(tmp_path / "grpo", "updates=1"))
    records = lines(tmp_path / "grpo")
    assert len(records) == 4 and sum(len(r["steps"]) for r in records) == m["episode_length"] * 4
    assert all(r["skill"] is None and r["skill_error"] is None for r in records)
    assert all(s["opd"] is None and s["response"] is not None for r in records for s in r["steps"])


def test_resume_cuts_the_log_back_to_the_checkpoint_so_no_update_is_lost_or_repeated(seed_run, tmp_path):
    parts = tmp_path / "parts"
    train(config(parts, "updates=1", *SEED))
    first = lines(parts)
    # as if killed while logging update 2, after its lines but before its checkpoint: a whole
    # line of update 2 and one cut off mid-way
    extra = dict(first[0], update=1)
    with open(parts / EPISODES_FILE, "a", encoding="utf-8") as handle:
        handle.write(json.dumps(extra) + "\n" + json.dumps(extra)[:40])
    with open(parts / "skills.jsonl", "a", encoding="utf-8") as handle:  # its skills file was cut too
        handle.write('{"update": 1, "episode": 0, "sk')
    Trainer(config(parts, "updates=2", *SEED), resume=True).run()
    resumed, whole = lines(parts), lines(seed_run)
    assert [(r["update"], r["task_id"]) for r in resumed] == [(r["update"], r["task_id"]) for r in whole]
    skills = (parts / "skills.jsonl").read_text(encoding="utf-8")
    assert skills == (seed_run / "skills.jsonl").read_text(encoding="utf-8")
    assert resumed == whole  # on CPU a resumed run is bit for bit the straight one, tokens and gates too


def test_export_writes_one_row_per_episode_with_one_schema(seed_run, tmp_path, capsys):
    out = tmp_path / "out" / "trajectories.jsonl"
    assert main(["export", str(seed_run), "--out", str(out)]) == 0
    assert str(out) in capsys.readouterr().out
    rows = [json.loads(line) for line in out.read_text(encoding="utf-8").splitlines()]
    records = read_episodes(seed_run)
    assert len(rows) == len(records)
    types = column_types(rows)
    assert all(len(kinds) == 1 for kinds in types.values()), types  # datasets needs one type per key
    assert types[".skill"] == {"str"} and types[".steps[].gates[]"] == {"float"}
    for row, record in zip(rows, records, strict=True):
        assert row["task"] == record["task"] and row["skill"] == record["skill"] and row["split"] == "train"
        assert [s["action"] for s in row["steps"]] == [s["action"] for s in record["steps"]]
        for step, logged in zip(row["steps"], record["steps"], strict=True):
            assert step["gates"] == logged["opd"]["gate"] and len(step["tokens"]) == len(step["gates"]) > 0
    assert main(["export", str(seed_run)]) == 0  # the default: RUN/dataset.jsonl
    assert (seed_run / "dataset.jsonl").read_text(encoding="utf-8") == out.read_text(encoding="utf-8")


def test_an_export_without_skills_keeps_the_same_schema(seed_run, tmp_path):
    grpo_like = tmp_path / "grpo"
    grpo_like.mkdir()
    records = read_episodes(seed_run)
    for record in records[:2]:
        record["skill"], record["skill_error"] = None, "no JSON object found"
        for step in record["steps"]:
            step["opd"] = None
    (grpo_like / EPISODES_FILE).write_text("".join(json.dumps(r) + "\n" for r in records), encoding="utf-8")
    assert main(["export", str(grpo_like), "--out", str(tmp_path / "d.jsonl")]) == 0
    rows = [json.loads(line) for line in (tmp_path / "d.jsonl").read_text(encoding="utf-8").splitlines()]
    assert rows[0]["skill"] is None and rows[0]["steps"][0]["gates"] == [] and rows[-1]["steps"][0]["gates"]
    types = column_types(rows)
    assert all(len(kinds) == 1 for kinds in types.values()), types  # nulls and empty lists aside
    assert types[".skill_error"] == {"str"}


def test_export_loads_with_hugging_face_datasets(seed_run, tmp_path):
    datasets = pytest.importorskip("datasets")
    out = tmp_path / "d.jsonl"
    assert main(["export", str(seed_run), "--out", str(out)]) == 0
    loaded = datasets.load_dataset("json", data_files=str(out), split="train")
    assert loaded.num_rows == len(read_episodes(seed_run))
    assert loaded[0]["steps"][0]["gates"] == read_episodes(seed_run)[0]["steps"][0]["opd"]["gate"]


def column_types(rows):
    """Per key path (``.steps[].gates[]``) the types found across rows, nulls left out, and per
    object path its key sets: ``datasets`` needs one of each."""
    found = {}

    def visit(value, path):
        if isinstance(value, dict):
            found.setdefault(path + "{}", set()).add(tuple(sorted(value)))
            for key, item in value.items():
                visit(item, f"{path}.{key}")
        elif isinstance(value, list):
            found.setdefault(path, set()).add("list")
            for item in value:
                visit(item, path + "[]")
        elif value is not None:
            found.setdefault(path, set()).add(type(value).__name__)

    for row in rows:
        visit(row, "")
    return found


@pytest.mark.parametrize("command", ["export", "view"])
def test_a_missing_run_or_log_is_a_clear_error_and_a_cut_off_last_line_a_warning(command, seed_run, tmp_path, capsys):
    missing = tmp_path / "no-such-run"
    assert main([command, str(missing)]) == 2
    err = capsys.readouterr().err
    assert str(missing) in err and "Traceback" not in err
    empty = tmp_path / "old-run"
    empty.mkdir()
    (empty / "metrics.jsonl").write_text("{}\n", encoding="utf-8")
    assert main([command, str(empty)]) == 2
    assert str(empty / EPISODES_FILE) in capsys.readouterr().err
    text = (seed_run / EPISODES_FILE).read_text(encoding="utf-8").splitlines(keepends=True)
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / EPISODES_FILE).write_text(text[0] + "{not json\n" + text[1], encoding="utf-8")
    assert main([command, str(bad), "--out", str(tmp_path / "x")]) == 2
    err = capsys.readouterr().err
    assert str(bad / EPISODES_FILE) in err and "line 2" in err
    killed = tmp_path / "killed"
    killed.mkdir()
    (killed / EPISODES_FILE).write_text(text[0] + text[1] + text[2][:30], encoding="utf-8")
    assert main([command, str(killed), "--out", str(tmp_path / "y")]) == 0
    captured = capsys.readouterr()
    assert "warning" in captured.err and "line 3" in captured.err and "wrote 2 episodes" in captured.out
