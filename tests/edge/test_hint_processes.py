"""Real processes (`rummy gateway`, `rummy referee`, `rummy scoring` on a redis-server of the
test's own): while a hint is worked out, the gateway's /healthz and an unrelated spectator view
answer; the hint ends 503 hint_timeout; and the gateway, stopped, leaves no worker process
behind. The solver of these processes never finishes (``tests/faults/stalled_solver``), so the
hint outlasts its budget on any machine."""

from __future__ import annotations

import asyncio
import os
import signal
from pathlib import Path

import aiohttp
import pytest

from tests.edge.test_workpool import alive
from tests.faults.conftest import MakeDeployment, make_deployment  # noqa: F401 - fixture
from tests.faults.harness import Client, Ledger, metric
from tests.servers import http_status, wait_ready

pytestmark = pytest.mark.slow

SAFETY = 120.0  # a hang fails the test; never what is asserted
BUDGET = 10.0  # RUMMY_HINT_SECONDS: time enough for a health check and a view, on any machine
STALLED = Path(__file__).parents[1] / "faults" / "stalled_solver"


def children(pid: int) -> list[int]:
    """The processes ``pid`` started (its worker processes)."""
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").iterdir():
        found.extend(int(p) for p in (task / "children").read_text().split())
    return found


async def busy_workers(session: aiohttp.ClientSession, port: int) -> float:
    status, text = await http_status(session, port, "/metrics", timeout=SAFETY)
    assert status == 200, text
    return metric(text, "gateway_pool_busy_workers")


async def test_health_answers_while_a_hint_is_worked_out(
    make_deployment: MakeDeployment,  # noqa: F811
) -> None:
    paths = [str(STALLED), str(Path(__file__).parents[2]), os.environ.get("PYTHONPATH", "")]
    deployment = make_deployment(RUMMY_HINT_SECONDS=str(BUDGET), RUMMY_SOLVER_WORKERS="1")
    referee = deployment.start("referee", "referee-1")
    scoring = deployment.start("scoring", "scoring-1")
    stalled = os.pathsep.join(p for p in paths if p)
    gateway = deployment.start("gateway", "gateway-1", PYTHONPATH=stalled)
    async with aiohttp.ClientSession() as session:
        await wait_ready(session, referee, scoring, gateway)
        client = Client(session, gateway.port, Ledger())
        other, _ = await client.new_game("robbers", 2, {})
        game_id, tokens = await client.new_game("rummikub", 2, {})
        path = f"/api/games/{game_id}/hint"
        hint = asyncio.create_task(client.call("GET", path, token=tokens[0]))
        async with asyncio.timeout(SAFETY):
            while not hint.done() and await busy_workers(session, gateway.port) < 1:
                await asyncio.sleep(0.02)
        health = await http_status(session, gateway.port, "/healthz", timeout=SAFETY)
        spectator = await client.call("GET", f"/api/games/{other}")
        running = not hint.done() and await busy_workers(session, gateway.port) == 1
        async with asyncio.timeout(SAFETY):
            status, body = await hint
        assert running, f"the hint ended within {BUDGET} s, before the health check was answered"
        assert (health[0], spectator[0]) == (200, 200)  # while the hint ran
        assert status == 503 and body["error"]["code"] == "hint_timeout", body
        status, _ = await client.call("GET", f"/api/games/{other}/replay?turn=1")
        assert status == 200  # the pool serves on (a new worker in place of the killed one)
    started = {pid: Path(f"/proc/{pid}/cmdline").read_bytes() for pid in children(gateway.pid)}
    workers = [pid for pid, line in started.items() if b"resource_tracker" not in line]
    assert workers
    assert gateway.stop(signal.SIGTERM) == 0
    assert not any(alive(pid) for pid in workers)  # ended and reaped before the gateway exits
    # multiprocessing's resource tracker ends by itself once the gateway has gone.
    async with asyncio.timeout(SAFETY):
        while any(alive(pid) for pid in started):
            await asyncio.sleep(0.02)
