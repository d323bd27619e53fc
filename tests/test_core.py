"""The shared env contract: spaces, text cleaning, registration, base-class rules."""

from __future__ import annotations

import subprocess
import sys

import gymnasium as gym
import numpy as np
import pytest

import seed_envs
from seed_envs.core import Transition, indexed_task_id, parse_indexed_task_id, stable_bucket, stable_seed
from seed_envs.spaces import PrintableText, clean_text, quote_action

EXPECTED_STEPS = {"seed/Sokoban-v0": 15, "seed/EZPoints-v0": 8}


def test_clean_text_cuts_with_a_marker_and_fits_the_space():
    space = PrintableText(100)
    text = "x" * 1000
    cleaned = clean_text(text, 100)
    assert len(cleaned) <= 100
    assert "truncated" in cleaned and cleaned.startswith("xxx")
    assert space.contains(cleaned)
    assert not space.contains(text)


def test_clean_text_replaces_control_characters_but_keeps_unicode():
    cleaned = clean_text("naïve café\x00\x07 ☕\nnext\tline\ud800", 100)
    assert "naïve café" in cleaned and "☕" in cleaned and "\n" in cleaned and "\t" in cleaned
    assert "\x00" not in cleaned and "\ud800" not in cleaned
    assert PrintableText(100).contains(cleaned)


def test_quote_action_is_short_and_printable():
    quoted = quote_action("\x00" + "a" * 10_000)
    assert len(quoted) < 100 and PrintableText(200).contains(quoted)


def test_stable_seed_does_not_depend_on_the_process():
    code = "from seed_envs.core import stable_seed; print(stable_seed('a', 1))"
    outputs = {
        subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env={"PYTHONHASHSEED": s}).stdout
        for s in ("1", "2")
    }
    assert outputs == {f"{stable_seed('a', 1)}\n"}
    assert 0 <= stable_bucket(["x"], 7) < 7


def test_indexed_task_ids_round_trip_and_reject_garbage():
    assert parse_indexed_task_id(indexed_task_id("p", "valid_seen", 3), "p") == ("valid_seen", 3)
    for bad in ("p/valid_seen", "q/train/1", "p/test/1", "p/train/x"):
        with pytest.raises(ValueError, match="expected"):
            parse_indexed_task_id(bad, "p")


def test_every_seed_id_is_registered_with_the_seed_step_limits():
    assert set(EXPECTED_STEPS) <= set(seed_envs.env_ids())
    for env_id, steps in EXPECTED_STEPS.items():
        assert gym.spec(env_id).max_episode_steps == steps


def test_module_prefix_works_in_a_fresh_interpreter_without_heavy_imports():
    code = (
        "import sys, gymnasium as gym\n"
        "env = gym.make('seed_envs:seed/Sokoban-v0')\n"
        "obs, info = env.reset(seed=0)\n"
        "assert 'image' in obs and info['split'] == 'train'\n"
        "heavy = [m for m in ('torch', 'transformers', 'seed_agent', 'seed_rl') if m in sys.modules]\n"
        "assert not heavy, heavy\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr


@pytest.mark.parametrize("env_id", sorted(EXPECTED_STEPS))
def test_base_rules_for_bad_calls(env_id):
    env = gym.make(env_id).unwrapped
    with pytest.raises(gym.error.ResetNeeded):
        env.step("up")
    env.reset(seed=0)
    with pytest.raises(ValueError, match="unknown split"):
        env.reset(options={"split": "test"})
    with pytest.raises(IndexError):
        env.reset(options={"split": "valid_seen", "index": 10**6})
    for bad in (None, 42, b"up", ["up"]):
        obs, reward, terminated, truncated, info = env.step(bad)
        assert info["action_valid"] is False and not terminated and "expected a string" in obs["text"]
    obs, *_, info = env.step("a" * (env.max_action_length + 1))
    assert info["action_valid"] is False and "limit" in obs["text"]


def test_stepping_after_the_end_is_reported_not_raised():
    env = gym.make("seed/EZPoints-v0").unwrapped
    env.reset(seed=0)
    *_, terminated, _, _ = env.step("=")
    assert terminated
    obs, reward, terminated, truncated, info = env.step("1")
    assert info["action_valid"] is False and "episode is over" in obs["text"] and reward == 0.0


def test_an_empty_split_gives_a_clear_error():
    from crash_env import CrashEnv

    class Empty(CrashEnv):
        def task_count(self, split: str) -> int | None:
            return 0

    with pytest.raises(ValueError, match="has no tasks"):
        Empty().reset(seed=0)


def test_no_seed_envs_module_imports_seed_agent_or_seed_rl():
    code = (
        "import importlib, pkgutil, sys, seed_envs\n"
        "for m in pkgutil.walk_packages(seed_envs.__path__, 'seed_envs.'):\n"
        "    try:\n"
        "        importlib.import_module(m.name)\n"
        "    except ImportError:\n"
        "        pass  # an optional extra that is not installed\n"
        "print(sorted({n.split('.')[0] for n in sys.modules} & {'seed_agent', 'seed_rl'}))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "[]", result.stderr[-2000:]


def test_a_missing_extra_is_named_with_its_install_command():
    from seed_envs.extras import require_extra

    require_extra("search", "json")  # present: nothing happens
    expected = r"'webshop' extra.*no_such_module_xyz.*pip install 'seed-agentic-rl\[webshop\]'"
    with pytest.raises(ImportError, match=expected):
        require_extra("webshop", "json", "no_such_module_xyz")


ENV_PACKAGES = ("alfworld", "webshop", "searchqa", "sokoban", "ezpoints")


def test_env_packages_import_nothing_until_a_name_is_used():
    code = (
        "import importlib, sys\n"
        f"for name in {ENV_PACKAGES!r}:\n"
        "    before = set(sys.modules)\n"
        "    package = importlib.import_module('seed_envs.' + name)\n"
        "    loaded = sorted(m for m in set(sys.modules) - before if m.startswith(package.__name__ + '.'))\n"
        "    assert not loaded, (name, loaded)\n"
        "    assert package.__all__ and set(package.__all__) <= set(dir(package))\n"
        "print('ok')\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert result.stdout.strip() == "ok", result.stderr[-2000:]


@pytest.mark.parametrize("name", ENV_PACKAGES)
def test_env_package_exports_resolve(name):
    import importlib

    if name == "webshop":
        pytest.importorskip("rapidfuzz", reason="the webshop extra is not installed")
    package = importlib.import_module(f"seed_envs.{name}")
    for export in package.__all__:
        if name == "alfworld" and export == "ALFWorldEnv":
            pytest.importorskip("textworld")
        assert getattr(package, export) is not None
    with pytest.raises(AttributeError, match="no attribute"):
        package.not_an_export  # noqa: B018


def test_lazy_exports_only_from_the_package_itself():
    from seed_envs.lazy import lazy_exports

    with pytest.raises(ValueError, match="must come from a module of"):
        lazy_exports("seed_envs.sokoban", {"SearchQAEnv": "seed_envs.searchqa.env"})


def test_the_default_text_anchor_is_the_text_of_the_last_accepted_transition():
    from crash_env import CrashEnv

    class Picky(CrashEnv):
        def _play(self, action: str) -> Transition:
            if action == "bad":
                return Transition(text=f"Invalid action: bad.\n{self._text}", action_valid=False)
            return super()._play(action)

    env = Picky()
    obs, info = env.reset(options={"task_id": "crash/train/3"})
    start = info["anchor"]
    assert start == obs["text"] and start.endswith("task 3")
    for rejected in ("bad", 42, "a" * (env.max_action_length + 1)):  # by the env, then by the base class
        obs, *_, info = env.step(rejected)
        assert not info["action_valid"] and "Invalid action" in obs["text"] and info["anchor"] == start
    obs, *_, info = env.step("go")
    assert info["anchor"] == obs["text"] and info["anchor"].endswith("count 1")
    env.step("bad")
    *_, info = env.step("go")
    assert info["anchor"].endswith("count 2")


def test_the_default_image_anchor_hashes_the_pixels_and_their_shape():
    from crash_env import CrashEnv

    class Blinking(CrashEnv):
        image_shape = (2, 3)

        def _image(self) -> np.ndarray:
            return np.full((2, 3, 3), self.count % 2, dtype=np.uint8)

    env = Blinking()
    _, info = env.reset(seed=0)
    dark = info["anchor"]
    assert dark.startswith("image:") and len(dark) == len("image:") + 32
    *_, lit = env.step("go")
    *_, dark_again = env.step("go")
    assert lit["anchor"] != dark == dark_again["anchor"]
    image = np.zeros((2, 3, 3), dtype=np.uint8)
    assert env._anchor({"text": "", "image": image}) == dark
    assert env._anchor({"text": "", "image": image.reshape(3, 2, 3)}) != dark  # same bytes, another shape
    varied = np.arange(18, dtype=np.uint8).reshape(2, 3, 3)
    assert env._anchor({"text": "", "image": np.asfortranarray(varied)}) == env._anchor({"text": "", "image": varied})


def test_the_contract_check_catches_a_leaking_or_empty_anchor():
    from crash_env import CrashEnv

    from seed_envs.testing import check_rejections_keep_the_anchor, check_seed_env

    class Leaking(CrashEnv):
        def _anchor(self, obs):
            return obs["text"]  # shows the rejection message

    class Empty(CrashEnv):
        def _anchor(self, obs):
            return ""

    check_rejections_keep_the_anchor(CrashEnv())
    with pytest.raises(AssertionError, match="changed info\\['anchor'\\]"):
        check_rejections_keep_the_anchor(Leaking())
    with pytest.raises(AssertionError, match="non-empty str"):
        check_seed_env(Empty())


def test_the_remote_client_is_registered_apart_from_the_envs(monkeypatch):
    spec = gym.spec("seed/Remote-v0")
    assert spec.max_episode_steps is None  # the server's env keeps its own time limit
    assert "seed/Remote-v0" not in seed_envs.env_ids()
    monkeypatch.delitem(sys.modules, "seed_envs.integrations.openenv.client", raising=False)
    monkeypatch.setitem(sys.modules, "openenv", None)  # as if the extra were not installed
    with pytest.raises(ImportError, match=r"'openenv' extra.*pip install 'seed-agentic-rl\[openenv\]'"):
        gym.make("seed/Remote-v0", url="http://127.0.0.1:9")
