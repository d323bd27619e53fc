"""seed_envs.vector from plain user programs: script files, ``python -c``, ``python - <<EOF``.

Each program runs in its own interpreter, as a user would run it, because how the main
module looks (a file, stdin, a ``-c`` string; guarded or not) is what decides whether
workers can start.
"""

from __future__ import annotations

import ast
import re
import subprocess
import sys
import textwrap
import types
from pathlib import Path

import pytest
from crash_env import make_crash_env

from seed_envs.vector import SeedVectorEnv, WorkerStartError, launch

REPO = Path(__file__).resolve().parents[1]
TESTS = Path(__file__).resolve().parent
MARK = "top-level code ran"

# What a new user writes first: no main guard.
PLAIN = f"""\
print({MARK!r})
from seed_envs.vector import make_vec
vec = make_vec("seed/Sokoban-v0", num_envs=4)
vec.reset(); vec.step(["up", "down", "left", "right"]); vec.close()
print("finished")
"""


def run_program(how: str, code: str, tmp_path: Path) -> subprocess.CompletedProcess[str]:
    """Run ``code`` the way ``how`` says: ``file`` (a script), ``stdin`` or ``-c``."""
    if how == "file":
        script = tmp_path / "user_script.py"
        script.write_text(code)
        args, stdin = [str(script)], None
    elif how == "stdin":
        args, stdin = ["-"], code
    else:
        args, stdin = ["-c", code], None
    return subprocess.run(
        [sys.executable, *args], input=stdin, cwd=tmp_path, capture_output=True, text=True, timeout=180
    )


def assert_ran_once(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr
    assert result.stdout.count(MARK) == 1, result.stdout
    assert "finished" in result.stdout


@pytest.mark.parametrize("how", ["file", "stdin", "-c"])
def test_an_unguarded_program_runs_and_its_top_level_runs_once(how, tmp_path):
    assert_ran_once(run_program(how, PLAIN, tmp_path))


def test_workers_are_separate_processes_and_the_script_body_runs_once(tmp_path):
    code = f"""\
import os, sys
print({MARK!r})
sys.path.insert(0, {str(TESTS)!r})
from crash_env import make_crash_env
from seed_envs.vector import SeedVectorEnv
vec = SeedVectorEnv([make_crash_env] * 4, workers=2)
vec.reset(task_ids=[f"crash/train/{{i}}" for i in range(4)])
pids = {{pid for pid, _, _ in vec.call("data_loads")}}
vec.close()
assert len(pids) == 2 and os.getpid() not in pids, pids
print("finished")
"""
    assert_ran_once(run_program("file", code, tmp_path))


def readme_vector_example() -> str:
    text = (REPO / "README.md").read_text()
    section = text.split("## Vectorized envs", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"```python\n(.*?)```", section, flags=re.S)
    assert blocks, "README.md's 'Vectorized envs' section has no python example"
    return blocks[0]


@pytest.mark.parametrize("how", ["file", "stdin"])
def test_the_readme_example_runs_as_pasted(how, tmp_path):
    code = readme_vector_example()
    result = run_program(how, code + f"print({MARK!r})\nprint('finished')\n", tmp_path)
    assert_ran_once(result)


def test_a_factory_defined_in_a_guarded_script_works(tmp_path):
    code = f"""\
print({MARK!r})
import gymnasium as gym
import seed_envs
from seed_envs.vector import SeedVectorEnv

def make_env():
    return gym.make("seed/EZPoints-v0")

if __name__ == "__main__":
    for context in (None, "spawn"):
        with SeedVectorEnv([make_env] * 2, workers=2, context=context) as vec:
            vec.reset(seeds=[0, 1])
            _, rewards, *_ = vec.step(["+", "+"])
            assert len(rewards) == 2
    print("finished")
"""
    result = run_program("file", code, tmp_path)
    assert result.returncode == 0, result.stderr
    # The workers had to import the script for make_env, so each of the four prints the mark
    # too (as under spawn), but none runs the guarded part.
    assert result.stdout.count(MARK) == 5 and result.stdout.count("finished") == 1


# ------------------------------------------------------------------ fast failures
def assert_fails_with(result: subprocess.CompletedProcess[str], *phrases: str) -> None:
    assert result.returncode != 0
    last = result.stderr.strip().splitlines()[-1]
    assert last.startswith("seed_envs.vector.launch.WorkerStartError"), result.stderr
    for phrase in phrases:
        assert phrase in last, last
    assert "worker died" not in result.stderr and "Connection reset" not in result.stderr
    assert result.stdout.count(MARK) <= 1


def test_explicit_spawn_with_an_unguarded_script_fails_at_once(tmp_path):
    code = PLAIN.replace("num_envs=4)", 'num_envs=4, context="spawn")')
    result = run_program("file", code, tmp_path)
    assert_fails_with(result, "context='spawn'", "line 3", 'if __name__ == "__main__":', "Leave context unset")
    assert "finished" not in result.stdout


def test_explicit_forkserver_from_stdin_fails_at_once(tmp_path):
    code = PLAIN.replace("num_envs=4)", 'num_envs=4, context="forkserver")')
    assert_fails_with(run_program("stdin", code, tmp_path), "no script file", "Leave context unset")


FACTORY_IN_MAIN = f"""\
print({MARK!r})
import gymnasium as gym
import seed_envs
from seed_envs.vector import SeedVectorEnv

def make_env():
    return gym.make("seed/EZPoints-v0")

vec = SeedVectorEnv([make_env] * 2, workers=2)
vec.reset()
"""


def test_a_factory_in_an_unguarded_script_fails_at_once(tmp_path):
    result = run_program("file", FACTORY_IN_MAIN, tmp_path)
    assert_fails_with(result, "'make_env'", "line 9", "Move the factory into a module", "__name__")


def test_a_factory_in_a_dash_c_program_fails_at_once(tmp_path):
    assert_fails_with(run_program("-c", FACTORY_IN_MAIN, tmp_path), "'make_env'", "python -c", "in a module")


def test_a_factory_that_cannot_be_pickled_fails_at_once():
    with pytest.raises(WorkerStartError, match=r"<lambda>' cannot be pickled.*backend='sync'"):
        SeedVectorEnv([lambda: make_crash_env()] * 2, workers=1)
    with pytest.raises(ValueError, match="context must be"):
        SeedVectorEnv([make_crash_env], context="threads")


def test_a_worker_that_cannot_load_its_factories_reports_why(monkeypatch):
    # A module that exists only in this process: the worker cannot unpickle the factory.
    module = types.ModuleType("only_in_the_parent")
    exec("from crash_env import CrashEnv\ndef make():\n    return CrashEnv()\n", module.__dict__)
    module.make.__module__ = module.__name__
    monkeypatch.setitem(sys.modules, module.__name__, module)
    vec = SeedVectorEnv([module.make] * 2, workers=2)
    with pytest.raises(WorkerStartError, match=r"(?s)failed to start.*No module named 'only_in_the_parent'"):
        vec.reset()
    assert all(not worker.process.is_alive() for worker in vec.workers)
    with pytest.raises(RuntimeError, match="closed"):
        vec.reset()


def test_a_worker_importing_the_main_script_refuses_to_start_workers(monkeypatch):
    monkeypatch.setattr(launch, "_importing_main", True)
    with pytest.raises(WorkerStartError, match="while a worker imported the main script"):
        SeedVectorEnv([make_crash_env], workers=1)


# ------------------------------------------------------------------ the pieces
def test_workers_are_fresh_interpreters_unless_fork_is_asked_for(monkeypatch):
    monkeypatch.setitem(sys.modules, "seed_parent_only_marker", types.ModuleType("seed_parent_only_marker"))
    for context, inherited in ((None, False), ("spawn", False), ("fork", True)):
        with SeedVectorEnv([make_crash_env] * 2, workers=1, context=context) as vec:
            vec.reset(task_ids=["crash/train/0", "crash/train/1"])
            assert vec.call("has_module", "seed_parent_only_marker") == [inherited] * 2, context


GUARDS = textwrap.dedent(
    """\
    import os
    make()
    if __name__ == "__main__":
        make()
        if True:
            make()
    else:
        make()
    if "__main__" != __name__:
        make()
    else:
        make()
    try:
        make()
    finally:
        pass
    def main():
        make()
    """
)


@pytest.mark.parametrize(
    ("line", "guarded"),
    [(2, False), (4, True), (6, True), (8, False), (10, False), (12, True), (14, False), (18, False)],
)
def test_main_guard_detection(line, guarded):
    assert launch._guarded(ast.parse(GUARDS).body, line) is guarded
