"""The same whole game against separate processes: `rummy gateway`, `rummy referee` and `rummy
scoring` on a real Redis (a redis-server of the test's own, else REDIS_URL), and `rummy serve`
on its embedded stand-in. Each is stopped by a signal and must exit 0."""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from tests.gateway.api import Api, play_to_end
from tests.ports import spare_port

pytestmark = pytest.mark.slow  # four processes and two whole games: about 15 s

ROOT = Path(__file__).resolve().parents[2]
START_TIMEOUT = 30.0
STOP_TIMEOUT = 20.0


class Proc:
    """A child process with its output in a file."""

    def __init__(self, name: str, args: list[str], env: dict[str, str], logs: Path) -> None:
        self.name = name
        self.log = logs / f"{name}.log"
        self.out = self.log.open("wb")
        self.popen = subprocess.Popen(
            args, cwd=ROOT, env=env, stdout=self.out, stderr=subprocess.STDOUT
        )

    def output(self) -> str:
        self.out.flush()
        return self.log.read_text(errors="replace")

    def stop(self, sig: int = signal.SIGTERM) -> int:
        """Signal it and wait; its exit code."""
        if self.popen.poll() is None:
            self.popen.send_signal(sig)
        try:
            return self.popen.wait(STOP_TIMEOUT)
        except subprocess.TimeoutExpired as err:
            self.popen.kill()
            self.popen.wait()
            raise AssertionError(
                f"{self.name} did not stop on {sig!r}:\n{self.output()[-3000:]}"
            ) from err

    def kill(self) -> None:
        if self.popen.poll() is None:
            self.popen.kill()
            self.popen.wait()
        self.out.close()


def rummy(*args: str) -> list[str]:
    return [sys.executable, "-m", "services.main", *args]


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("RUMMY_")}
    env |= {"RUMMY_LOG_LEVEL": "warning", "PYTHONUNBUFFERED": "1"}
    # Whole games played from one address as fast as the machine goes: no limit per address
    # over every route (the limits' defaults otherwise, in Redis).
    env |= {"RUMMY_LIMIT_ADDRESS_PER_SECOND": "0"} | extra
    return env


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A Redis of this test's own (redis-server on a spare port), else REDIS_URL."""
    server = shutil.which("redis-server")
    if server is None:
        url = os.environ.get("REDIS_URL")
        if not url:
            pytest.skip("needs redis-server on PATH (or REDIS_URL)")
        yield url
        return
    port = spare_port()
    args = [
        server,
        "--port",
        str(port),
        "--bind",
        "127.0.0.1",
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        str(tmp_path),
    ]
    proc = Proc("redis", args, base_env(), tmp_path)
    try:
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            with contextlib.suppress(OSError), socket.create_connection(("127.0.0.1", port), 0.2):
                break
            assert proc.popen.poll() is None, proc.output()
            assert time.monotonic() < deadline, "redis-server did not start"
            time.sleep(0.05)
        yield f"redis://127.0.0.1:{port}/0"
    finally:
        proc.kill()


async def wait_ready(session: aiohttp.ClientSession, port: int, proc: Proc) -> None:
    deadline = time.monotonic() + START_TIMEOUT
    while True:
        assert proc.popen.poll() is None, f"{proc.name} exited:\n{proc.output()[-3000:]}"
        with contextlib.suppress(aiohttp.ClientError, asyncio.TimeoutError):
            async with session.get(f"http://127.0.0.1:{port}/readyz") as response:
                if response.status == 200:
                    return
        assert time.monotonic() < deadline, f"{proc.name} not ready:\n{proc.output()[-3000:]}"
        await asyncio.sleep(0.1)


async def play_one_game(session: aiohttp.ClientSession, port: int, rounds: int) -> None:
    """A whole game over HTTP with bots; the end checked as a client would."""
    api = Api(session, f"http://127.0.0.1:{port}")
    game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": rounds})
    played = await play_to_end(api, game_id, tokens, ["greedy", "random"], seed=5)
    final = played.final
    assert final["status"] == "finished" and final["winner"]
    assert final["last_round"]["round"] >= rounds
    assert played.rounds_played >= set(range(1, rounds + 1))
    events = await api.events(game_id)
    commitment = next(e for e in events if e["type"] == "GameCreated")["commitment"]
    assert hashlib.sha256(bytes.fromhex(final["seed"])).hexdigest() == commitment


async def test_a_game_against_separate_processes_on_a_real_redis(
    redis_url: str, tmp_path: Path
) -> None:
    env = base_env(
        REDIS_URL=redis_url,
        RUMMY_PREFIX=f"pt{uuid.uuid4().hex[:8]}:",
        RUMMY_PARTITIONS="2",
        RUMMY_HTTP_HOST="127.0.0.1",
    )
    ports = {name: spare_port() for name in ("gateway", "referee", "scoring")}
    procs = {
        "gateway": Proc(
            "gateway", rummy("gateway", "--port", str(ports["gateway"])), env, tmp_path
        ),
        "referee": Proc(
            "referee", rummy("referee"), env | {"RUMMY_HTTP_PORT": str(ports["referee"])}, tmp_path
        ),
        "scoring": Proc(
            "scoring", rummy("scoring"), env | {"RUMMY_HTTP_PORT": str(ports["scoring"])}, tmp_path
        ),
    }
    try:
        async with aiohttp.ClientSession() as session:
            for name, proc in procs.items():
                await wait_ready(session, ports[name], proc)
            # Two rounds: the scoring process records the sheet, the referee deals the next.
            await play_one_game(session, ports["gateway"], rounds=2)
        for name, proc in procs.items():
            code = proc.stop(signal.SIGTERM)
            assert code == 0, f"{name} exited {code}:\n{proc.output()[-3000:]}"
    finally:
        for proc in procs.values():
            proc.kill()


async def test_rummy_serve_runs_everything_in_one_process(tmp_path: Path) -> None:
    port = spare_port()
    proc = Proc("serve", rummy("serve", "--port", str(port)), base_env(), tmp_path)
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, port, proc)
            await play_one_game(session, port, rounds=1)
        code = proc.stop(signal.SIGINT)
        output = proc.output()
        assert code == 0, output[-3000:]
        assert f"http://127.0.0.1:{port}/" in output, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
    finally:
        proc.kill()
