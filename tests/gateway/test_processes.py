"""The same whole game against separate processes: `rummy gateway`, `rummy referee` and `rummy
scoring` on a real Redis (a redis-server of the test's own, else REDIS_URL), and `rummy serve`
on its embedded stand-in. Each is stopped by a signal and must exit 0."""

from __future__ import annotations

import hashlib
import os
import signal
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path

import aiohttp
import pytest

from shared.archive.base import ArchiveError
from shared.archive.sqlite import SqliteArchive
from shared.audit.record import loads
from shared.audit.verify import audit_record
from tests.gateway.api import Api, play_to_end
from tests.ports import spare_port
from tests.servers import Process, own_redis_url, until, wait_ready

pytestmark = pytest.mark.slow  # four processes and two whole games: about 15 s


def rummy(*args: str) -> list[str]:
    return [sys.executable, "-m", "services.main", *args]


def base_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("RUMMY_")}
    env |= {"RUMMY_LOG_LEVEL": "warning", "PYTHONUNBUFFERED": "1"}
    # Whole games played from one address as fast as the machine goes: no limit per address
    # over every route (the limits' defaults otherwise, in Redis).
    env |= {"RUMMY_LIMIT_ADDRESS_PER_SECOND": "0", "RUMMY_LIMIT_READ_PER_SECOND": "0"} | extra
    return env


@pytest.fixture
def redis_url(tmp_path: Path) -> Iterator[str]:
    """A Redis of this test's own (redis-server on a spare port), else REDIS_URL."""
    with own_redis_url(tmp_path / "redis") as url:
        yield url


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
        "gateway": Process(
            "gateway",
            rummy("gateway", "--port", str(ports["gateway"])),
            env,
            tmp_path,
            ports["gateway"],
        ),
        "referee": Process(
            "referee",
            rummy("referee"),
            env | {"RUMMY_HTTP_PORT": str(ports["referee"])},
            tmp_path,
            ports["referee"],
        ),
        "scoring": Process(
            "scoring",
            rummy("scoring"),
            env | {"RUMMY_HTTP_PORT": str(ports["scoring"])},
            tmp_path,
            ports["scoring"],
        ),
    }
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, *procs.values())
            # Two rounds: the scoring process records the sheet, the referee deals the next.
            await play_one_game(session, ports["gateway"], rounds=2)
        for name, proc in procs.items():
            code = proc.stop(signal.SIGTERM)
            assert code == 0, f"{name} exited {code}:\n{proc.output()[-3000:]}"
    finally:
        for proc in procs.values():
            proc.close()


async def test_rummy_serve_runs_everything_in_one_process(tmp_path: Path) -> None:
    port = spare_port()
    proc = Process("serve", rummy("serve", "--port", str(port)), base_env(), tmp_path, port)
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, proc)
            await play_one_game(session, port, rounds=1)
        code = proc.stop(signal.SIGINT)
        output = proc.output()
        assert code == 0, output[-3000:]
        assert f"http://127.0.0.1:{port}/" in output, output[-3000:]
        assert "Traceback" not in output, output[-3000:]
    finally:
        proc.close()


async def test_rummy_serve_keeps_finished_games_across_a_restart(tmp_path: Path) -> None:
    """``make run`` on its defaults: the embedded Redis forgets everything when it stops, the
    SQLite archive it writes in its working directory keeps the finished games."""
    home = tmp_path / "home"
    home.mkdir()
    port = spare_port()
    serve = rummy("serve", "--port", str(port))
    first = Process("serve-1", serve, base_env(), tmp_path, port, cwd=home)
    base = f"http://127.0.0.1:{port}/api/games"
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, first)
            api = Api(session, f"http://127.0.0.1:{port}")
            game_id, _, tokens = await api.new_game("robbers", 2, {"match_rounds": 1})
            await play_to_end(api, game_id, tokens, ["greedy", "random"], seed=7)

            async def archived() -> bool:
                archive = SqliteArchive(home / "rummy-archive.db")
                try:
                    await archive.open()
                    return await archive.entry(game_id) is not None
                except ArchiveError:
                    return False
                finally:
                    await archive.close()

            await until(archived, 60, every=0.2)
        assert first.stop(signal.SIGTERM) == 0, first.output()[-3000:]
    finally:
        first.close()
    second = Process("serve-2", serve, base_env(), tmp_path, port, cwd=home)
    try:
        async with aiohttp.ClientSession() as session:
            await wait_ready(session, second)
            async with session.get(f"{base}?status=finished") as listed:
                assert listed.status == 200
                assert [g["game_id"] for g in (await listed.json())["games"]] == [game_id]
            async with session.get(f"{base}/{game_id}") as view:
                assert view.status == 200 and (await view.json())["status"] == "finished"
            async with session.get(f"{base}/{game_id}/replay?turn=1") as replay:
                assert replay.status == 200, await replay.text()
            async with session.get(f"{base}/{game_id}/export") as exported:
                assert exported.status == 200
                assert audit_record(loads(await exported.text())).ok
        assert second.stop(signal.SIGTERM) == 0, second.output()[-3000:]
        assert sorted(p.name for p in home.iterdir()) == ["rummy-archive.db"]
    finally:
        second.close()
