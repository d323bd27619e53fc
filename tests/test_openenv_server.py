"""``seed serve env``: a seed env served by OpenEnv's own server (openenv-core), driven over real
loopback HTTP and WebSocket: bad input, the session cap, idle expiry, 64 concurrent sessions,
the endpoints' descriptions of the env, and the command itself."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import random
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

pytest.importorskip("openenv", reason="the openenv extra (openenv-core) is not installed")

import httpx
from openenv_support import record
from PIL import Image
from websockets.exceptions import InvalidStatus
from websockets.sync.client import connect as ws_connect

import seed_envs  # noqa: F401  (registers the ids)
from seed_envs.integrations.openenv import SeedAction, SeedEnvClient, SeedObservation
from seed_envs.integrations.openenv.models import json_safe
from seed_envs.integrations.openenv.server import ServerThread, create_app
from seed_rl.cli import build_parser, main

#: Corridor's valid_seen task 5: the exit is 3 cells to the right.
RIGHT_3 = {"options": {"split": "valid_seen", "index": 5}}


def ws_url(url: str) -> str:
    return url.replace("http://", "ws://", 1) + "/ws"


@contextlib.contextmanager
def raw_session(url: str) -> Iterator[Callable[[str | dict[str, Any]], dict[str, Any]]]:
    """One OpenEnv session over the WebSocket, message by message (no client library): yields
    ``send(message) -> reply``."""
    with ws_connect(ws_url(url)) as ws:

        def send(message: str | dict[str, Any]) -> dict[str, Any]:
            ws.send(message if isinstance(message, str) else json.dumps(message))
            return json.loads(ws.recv(timeout=30))

        yield send


def error_of(reply: dict[str, Any]) -> tuple[str, str]:
    assert reply["type"] == "error", reply
    return reply["data"]["code"], reply["data"]["message"]


def wait_for(condition, timeout_s: float = 15.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while not condition():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.05)
    return True


def test_bad_input_gets_clear_errors_and_other_sessions_lose_nothing():
    app = create_app("seed/Corridor-v0", max_sessions=3)
    sessions = app.state.openenv
    with (
        ServerThread(app) as server,
        httpx.Client(base_url=server.url, timeout=30) as http,
        contextlib.ExitStack() as stack,
    ):
        local = gym.make("seed/Corridor-v0")
        other = gym.make("seed/Remote-v0", url=server.url)  # plays one episode through all of it
        expected, remote = local.reset(**RIGHT_3), other.reset(**RIGHT_3)
        assert record(remote[0], None, False, False, remote[1]) == record(expected[0], None, False, False, expected[1])

        # Stateless HTTP: malformed JSON and actions of the wrong type are 422, the rest say what to do.
        reply = http.post("/step", content=b'{"action": {"text": ', headers={"content-type": "application/json"})
        assert reply.status_code == 422 and "JSON decode error" in reply.text
        reply = http.post("/step", json={"action": {"text": 5}})
        assert reply.status_code == 422 and "valid string" in reply.text
        reply = http.post("/step", json={"action": {"txt": "right"}})
        assert reply.status_code == 422 and "txt" in reply.text
        reply = http.post("/step", json={"action": {"text": "right"}})
        assert reply.status_code == 409 and "reset first" in reply.json()["detail"]
        reply = http.post("/reset", json={"options": {"task_id": "corridor/valid_seen/x"}})
        assert reply.status_code == 400 and "not a task of this env" in reply.json()["detail"]
        reply = http.post("/reset", json={"options": {"split": "valid_seen", "index": 200}})
        assert reply.status_code == 400 and "index 200 out of range for split 'valid_seen' with 200" in reply.text
        reply = http.post("/reset", json={"level": 3})
        assert reply.status_code == 400 and "unknown reset argument(s) level" in reply.json()["detail"]
        reply = http.post("/reset", json={"seed": "x"})
        assert reply.status_code == 422
        reply = http.post("/reset", json=RIGHT_3)
        assert reply.status_code == 200 and reply.json()["observation"]["text"] == expected[0]["text"]
        assert record(*other.step("right")) == record(*local.step("right"))

        # A session: each bad message gets an error, and the session goes on where it was.
        session = stack.enter_context(raw_session(server.url))
        assert error_of(session("{not json"))[0] == "INVALID_JSON"
        assert error_of(session({"type": "step", "data": {"text": 5}}))[0] == "VALIDATION_ERROR"
        code, message = error_of(session({"type": "step", "data": {"text": "left"}}))
        assert code == "EXECUTION_ERROR" and "reset first" in message
        code, message = error_of(session({"type": "reset", "data": {"options": {"split": "test"}}}))
        assert code == "EXECUTION_ERROR" and "unknown split 'test'" in message
        assert error_of(session({"type": "launch"}))[0] == "UNKNOWN_TYPE"
        reply = session({"type": "reset", "data": RIGHT_3})
        assert reply["type"] == "observation" and reply["data"]["observation"]["text"] == expected[0]["text"]
        assert error_of(session({"type": "step", "data": {"text": ["right"]}}))[0] == "VALIDATION_ERROR"
        reply = session({"type": "step", "data": {"text": "right"}})
        assert reply["data"]["observation"]["text"].startswith("One cell closer. The exit is 2 cells")
        assert record(*other.step("right")) == record(*local.step("right"))

        # Over the cap: refused with HTTP 503 before a session opens; a freed slot opens again.
        third = gym.make("seed/Remote-v0", url=server.url)
        with pytest.raises(InvalidStatus) as refused:
            ws_connect(ws_url(server.url))
        assert refused.value.response.status_code == 503 and b"at capacity: 3/3 sessions" in refused.value.response.body
        with pytest.raises(ConnectionError, match=r"HTTP 503.*at capacity: 3/3"):
            gym.make("seed/Remote-v0", url=server.url)
        third.close()
        assert wait_for(lambda: sessions.active_sessions == 2)
        fourth = gym.make("seed/Remote-v0", url=server.url)
        assert fourth.reset(seed=1)[1]["task_id"] == local.reset(seed=1)[1]["task_id"]
        fourth.close()

        # The first session lost nothing: it ends its episode exactly as the local env does.
        local.reset(**RIGHT_3)
        local.step("right")
        local.step("right")
        last = local.step("right")
        assert record(*other.step("right")) == record(*last) and last[4]["won"]
        stack.close()  # the raw session
        other.close()
        assert http.get("/health").json()["status"] == "healthy"
        assert wait_for(lambda: sessions.active_sessions == 0)


def test_idle_sessions_expire_and_say_so_while_busy_ones_go_on():
    app = create_app("seed/Corridor-v0", max_sessions=2, idle_timeout_s=2.0)
    sessions = app.state.openenv
    with ServerThread(app) as server:
        idle = gym.make("seed/Remote-v0", url=server.url)
        idle.reset(**RIGHT_3)
        busy = gym.make("seed/Remote-v0", url=server.url)
        local = gym.make("seed/Corridor-v0")
        index = 0
        while sessions.active_sessions == 2 and index < 200:  # OpenEnv's reaper looks every 5 s
            options = {"options": {"split": "valid_unseen", "index": index}}
            assert busy.reset(**options)[0] == local.reset(**options)[0]
            index += 1
            time.sleep(0.1)
        assert sessions.active_sessions == 1, "the idle session did not expire"
        with pytest.raises(RuntimeError, match="closed after 2 s without a request; open a new session"):
            idle.step("right")
        assert record(*busy.step("left")) == record(*local.step("left"))
        again = gym.make("seed/Remote-v0", url=server.url)  # the expired session's slot is free
        again.reset(seed=0)
        for env in (again, busy, idle):
            env.close()


async def play_session(url: str, index: int, episodes: int, connected: list[int], everyone: asyncio.Event) -> list:
    """One session: connect, wait for every other to be connected too, then play ``episodes``
    Corridor tasks with seeded random moves; returns each episode's (task, actions, records)."""
    rng = random.Random(index)
    played = []
    async with SeedEnvClient(url) as client:
        await client.state()  # an answer: the server holds the session
        connected.append(index)
        if len(connected) == SESSIONS:
            everyone.set()
        await asyncio.wait_for(everyone.wait(), timeout=60)
        for episode in range(episodes):
            options = {"split": "valid_seen", "index": index * episodes + episode}
            result = await client.reset(options=options)
            actions, records = [], []
            while not result.done:
                actions.append(rng.choice(("left", "right")))
                result = await client.step(SeedAction(text=actions[-1]))
                o = result.observation
                records.append(record({"text": o.text}, o.reward, o.terminated, o.truncated, o.info))
            played.append((options, actions, records))
    return played


SESSIONS = 64


def test_64_concurrent_sessions_finish_every_episode_without_an_error():
    episodes = 2
    app = create_app("seed/Corridor-v0", max_sessions=SESSIONS)
    sessions = app.state.openenv
    peak = []

    async def play_all(url: str) -> list:
        connected: list[int] = []
        everyone = asyncio.Event()

        async def watch() -> None:
            await everyone.wait()
            peak.append(sessions.active_sessions)

        tasks = [play_session(url, i, episodes, connected, everyone) for i in range(SESSIONS)]
        *results, _ = await asyncio.gather(*tasks, watch(), return_exceptions=True)
        return results

    with ServerThread(app) as server:
        started = time.perf_counter()
        results = asyncio.run(asyncio.wait_for(play_all(server.url), timeout=120))
        elapsed = time.perf_counter() - started
        assert wait_for(lambda: sessions.active_sessions == 0)
    errors = [r for r in results if isinstance(r, BaseException)]
    assert not errors, f"{len(errors)} sessions failed, the first with {errors[0]!r}"
    assert peak == [SESSIONS], "the sessions were not all open at once"
    local = gym.make("seed/Corridor-v0")
    for played in results:
        assert len(played) == episodes
        for options, actions, records in played:
            local.reset(options=options)
            expected = [record(*local.step(action)) for action in actions]
            expected = [(text, None, *rest) for text, _, *rest in expected]
            assert records == expected and (records[-1][3] or records[-1][4]), "an episode did not end as it does here"
    print(f"{SESSIONS} sessions x {episodes} episodes in {elapsed:.2f} s")


def test_the_endpoints_describe_the_env_and_carry_the_image_as_png():
    with ServerThread(create_app("seed/Sokoban-v0")) as server, httpx.Client(base_url=server.url, timeout=30) as http:
        schema = http.get("/schema").json()
        assert schema["action"]["properties"]["text"]["type"] == "string"
        image_schema = schema["observation"]["properties"]["image"]["anyOf"][0]
        assert image_schema["contentMediaType"] == "image/png"
        assert http.get("/metadata").json()["name"] == "seed/Sokoban-v0"
        with raw_session(server.url) as session:
            state = session({"type": "state"})["data"]
            observation = session({"type": "reset", "data": {"seed": 4}})["data"]["observation"]
        assert state["env_id"] == "seed/Sokoban-v0" and state["image_shape"] == [192, 192]
        assert state["task_counts"] == {"train": None, "valid_seen": 200, "valid_unseen": 200}
    prefix, png = observation["image"].split(",", 1)
    assert prefix == "data:image/png;base64"
    expected, _ = gym.make("seed/Sokoban-v0").reset(seed=4)
    assert np.array_equal(np.asarray(Image.open(io.BytesIO(base64.b64decode(png))).convert("RGB")), expected["image"])


def test_seed_serve_env_binds_loopback_unless_told_otherwise():
    args = build_parser().parse_args(["serve", "env", "--env", "seed/Corridor-v0"])
    assert (args.host, args.max_sessions, args.idle_timeout) == ("127.0.0.1", 64, 600.0)
    with ServerThread(create_app("seed/Corridor-v0")) as server:
        assert server.url.startswith("http://127.0.0.1:")


def test_seed_serve_env_rejects_bad_arguments_with_a_clear_message(capsys):
    assert main(["serve", "env", "--env", "seed/Nope-v0"]) == 2
    assert "unknown env 'seed/Nope-v0'" in capsys.readouterr().err
    assert main(["serve", "env", "--env", "seed/Corridor-v0", "--env-kwargs", '{"max_distance": 0}']) == 2
    assert "max_distance must be >= 1" in capsys.readouterr().err
    for bad, message in ((["--env-kwargs", "[1]"], "expected a JSON object"), (["--max-sessions", "0"], "positive")):
        with pytest.raises(SystemExit):
            main(["serve", "env", "--env", "seed/Corridor-v0", *bad])
        assert message in capsys.readouterr().err
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = str(taken.getsockname()[1])
        assert main(["serve", "env", "--env", "seed/Corridor-v0", "--port", port]) == 2
    assert "cannot listen on 127.0.0.1" in capsys.readouterr().err


@pytest.mark.slow  # a fresh interpreter imports openenv-core (gradio, fastmcp): 5 to 15 s here
@pytest.mark.timeout(120)
def test_seed_serve_env_serves_on_loopback_until_interrupted():
    command = [sys.executable, "-m", "seed_rl.cli", "serve", "env", "--env", "seed/EZPoints-v0", "--port", "0"]
    server = subprocess.Popen(
        [*command, "--max-sessions", "2", "--idle-timeout", "30"], stdout=subprocess.PIPE, text=True
    )
    try:
        line = server.stdout.readline()
        found = re.search(r"at (http://127\.0\.0\.1:\d+) \(at most 2 sessions, closed after 30 s idle\)", line)
        assert found, line
        remote = gym.make("seed/Remote-v0", url=found.group(1))
        obs, info = remote.reset(seed=5)
        expected, _ = gym.make("seed/EZPoints-v0").reset(seed=5)
        assert obs["text"] == expected["text"] and np.array_equal(obs["image"], expected["image"])
        remote.close()
    finally:
        server.send_signal(signal.SIGINT)
        server.wait(timeout=30)
    assert server.returncode == 0


def test_the_wire_types_carry_what_json_can():
    frame = np.random.default_rng(0).integers(0, 256, size=(5, 7, 3), dtype=np.uint8)
    observation = SeedObservation(text="t", image=frame, info={"k": (1, np.int64(2))})
    wire = json.loads(observation.model_dump_json())
    assert wire["image"].startswith("data:image/png;base64,") and wire["info"] == {"k": [1, 2]}
    assert np.array_equal(SeedObservation.model_validate(wire).image, frame)
    for bad in ("x.png", "data:image/png;base64,@@", "data:image/png;base64,aGVsbG8="):
        with pytest.raises(ValueError, match=r"data URL|not a valid base64 PNG"):
            SeedObservation.model_validate({**wire, "image": bad})
    info = {"q": "a\ud800b", 3: np.float32(0.5), "r": float("nan"), "s": {np.str_("x")}, "o": object}
    assert json_safe(info) == {"q": "a\ufffdb", "3": 0.5, "r": "nan", "s": ["x"], "o": str(object)}
    assert json.loads(json.dumps(json_safe(info))) == json_safe(info)
