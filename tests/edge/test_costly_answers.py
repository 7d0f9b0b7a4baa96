"""Hints, replays and exports over the API, worked out in the gateway's worker processes: a
hostile hint answers 503 hint_timeout within its budget while the gateway goes on answering
everything else, a full pool answers 503 solver_busy, replays are the very replays the log gives
(secrecy included) and the same one asked again is not worked out again.

A hint that must stay in the pool while a test looks on is held in its worker until the test
kills it (``jobs.hint_held_for_fewest_cards``): a hostile deal takes the solver from seconds to
minutes, so one quick enough would end such a test early. The hostile deals serve the tests of
the budget, which a real solve must run past."""

from __future__ import annotations

import asyncio
import contextlib
import json
import os
import signal
from typing import Any

import pytest
from aiohttp.test_utils import TestClient, TestServer
from fakeredis import FakeServer
from fakeredis.aioredis import FakeRedis

from services.gateway import jobs as answer_jobs
from services.gateway.answers import Answers, Job
from services.gateway.app import make_app
from services.gateway.errors import ApiError
from services.gateway.jobs import Answer
from services.gateway.state import GATEWAY, Gateway
from shared.audit.record import build_record, dumps
from shared.audit.replay import SPECTATOR, replay
from shared.infra.settings import Settings
from shared.infra.store.redis import RedisEventStore
from shared.infra.workpool import PoolBusy
from tests.edge import jobs
from tests.edge.test_workpool import alive
from tests.gateway.api import Api, Reply, check_error, play_to_end
from tests.gateway.conftest import MakeStack, Stack, make_stack  # noqa: F401 - fixtures
from tests.servers import until

SAFETY = 120.0  # a hang fails the test; never what is asserted

# Legal options on which the exact solver takes seconds to minutes on most deals (compiled: 7-68
# s; plain Python: from half a second to more than 400 s a seat, by the deal), found by a hostile
# tester. Deals are random (the game id is), so a test skips a game whose deal is quick.
HOSTILE = {
    "jokers": 8,
    "run_max": 3,
    "set_max": 3,
    "ace": "wrap",
    "joker_policy": "to_hand",
    "hand_size": 52,
    "opening_points": 0,
}
TRIES = 6  # hostile games tried before a test gives up finding a slow deal


def gateway(stack: Stack) -> Gateway:
    return stack.server.app[GATEWAY]


def sample(stack: Stack, name: str, **labels: str) -> float:
    return gateway(stack).metrics.registry.get_sample_value(name, labels) or 0.0


async def hostile_game(stack: Stack) -> tuple[str, list[str]]:
    game_id, _, tokens = await stack.api.new_game("rummikub", 2, HOSTILE)
    return game_id, tokens


def hint_path(game_id: str, query: str = "") -> str:
    return f"/api/games/{game_id}/hint" + (f"?{query}" if query else "")


async def hint_in_hand(
    stack: Stack, monkeypatch: pytest.MonkeyPatch
) -> tuple[asyncio.Task[Reply], str, list[str]]:
    """A hint the pool is working out now, and goes on with until its worker is killed (a hint
    for the fewest cards, held: ``jobs.hint_held_for_fewest_cards``)."""
    monkeypatch.setattr(answer_jobs, "hint", jobs.hint_held_for_fewest_cards)
    pool = gateway(stack).answers.pool
    game_id, _, tokens = await stack.api.new_game("rummikub", 2, {"opening_points": 0})
    hint = asyncio.create_task(stack.api.call("GET", hint_path(game_id), token=tokens[0]))
    await until(lambda: pool.running() == 1, SAFETY, every=0.01)
    return hint, game_id, tokens


def idle(stack: Stack) -> bool:
    """Every worker of the pool started and waiting for a job."""
    pool = gateway(stack).answers.pool
    return len(pool._idle) == pool.size


def kill_workers(stack: Stack) -> list[int]:
    pids = gateway(stack).answers.pool.pids()
    for pid in pids:
        with contextlib.suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    return pids


async def test_a_hostile_hint_answers_hint_timeout_and_is_not_worked_out_twice(
    make_stack: MakeStack,  # noqa: F811
) -> None:
    stack = await make_stack(hint_seconds=0.5)
    api = stack.api
    await gateway(stack).answers.pool.start(warm=True)  # no hint below waits for a worker
    await until(lambda: gateway(stack).answers.pool.running() == 0 and idle(stack), SAFETY)
    late: tuple[str, str, Reply] | None = None
    for _ in range(TRIES):
        game_id, tokens = await hostile_game(stack)
        for token in tokens:
            async with asyncio.timeout(SAFETY):
                reply = await api.call("GET", hint_path(game_id), token=token)
            if reply.status != 200:
                late = game_id, token, reply
                break
        if late is not None:
            break
    assert late is not None, f"every hint of {TRIES} hostile deals was worked out in 0.5 s"
    game_id, token, reply = late
    assert reply.status == 503, reply
    check_error(reply.body, "hint_timeout")
    assert "0.5 s" in reply.body["error"]["message"]
    again = await api.call("GET", hint_path(game_id), token=token)  # same seat and version
    assert again.status == 503 and again.body == reply.body
    assert sample(stack, "gateway_pool_jobs_total", job="hint", outcome="timeout") == 1
    assert sample(stack, "gateway_answers_total", kind="hint", kept="yes") == 1
    # The pool goes on serving (a new worker in the killed one's place).
    easy, _, easy_tokens = await api.new_game("rummikub", 2, {"opening_points": 0})
    async with asyncio.timeout(SAFETY):
        reply = await api.call("GET", hint_path(easy), token=easy_tokens[0])
    assert reply.status == 200, reply
    assert reply.body["version"] == (await api.view(easy))["version"]


async def test_the_gateway_answers_everyone_else_while_a_hint_is_worked_out(
    make_stack: MakeStack,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = await make_stack(hint_seconds=3600)
    api = stack.api
    other, _, _ = await api.new_game("robbers", 2)
    pool = gateway(stack).answers.pool
    hint, game_id, tokens = await hint_in_hand(stack, monkeypatch)
    health = await api.call("GET", "/healthz")
    spectator = await api.call("GET", f"/api/games/{game_id}")
    unrelated = await api.call("GET", f"/api/games/{other}")
    seat = await api.call("GET", f"/api/games/{game_id}", token=tokens[0])
    statuses = (health.status, spectator.status, unrelated.status, seat.status)
    assert statuses == (200,) * 4
    assert not hint.done() and pool.running() == 1  # all that while the hint was worked out
    kill_workers(stack)  # (rather than wait for the budget: a lost worker is a 503 too)
    async with asyncio.timeout(SAFETY):
        reply: Reply = await hint
    assert reply.status == 503, reply
    check_error(reply.body, "solver_busy")
    assert reply.headers.get("Retry-After") == "3600"


async def test_a_full_pool_refuses_at_once_with_retry_after(
    make_stack: MakeStack,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = await make_stack(
        hint_seconds=3600, solver_workers=1, solver_queue=0, solver_per_address=8
    )
    api = stack.api
    slow, game_id, tokens = await hint_in_hand(stack, monkeypatch)
    reply = await api.call("GET", hint_path(game_id, "goal=points"), token=tokens[0])
    assert reply.status == 503, reply
    check_error(reply.body, "solver_busy")
    assert reply.headers.get("Retry-After") == "3600"
    replay = await api.call("GET", f"/api/games/{game_id}/replay?turn=1")  # the same pool
    assert replay.status == 503
    check_error(replay.body, "solver_busy")
    assert sample(stack, "gateway_pool_jobs_total", job="hint", outcome="busy") == 1
    assert not slow.done()
    kill_workers(stack)
    async with asyncio.timeout(SAFETY):
        assert (await slow).status == 503


async def test_one_address_has_one_answer_worked_out_at_a_time(
    make_stack: MakeStack,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = await make_stack(hint_seconds=3600, trusted_proxies="127.0.0.1")
    api = stack.api
    slow, game_id, tokens = await hint_in_hand(stack, monkeypatch)  # from this address
    pool = gateway(stack).answers.pool
    reply = await api.call("GET", hint_path(game_id, "goal=points"), token=tokens[0])
    assert reply.status == 503, reply  # a second question from the same address
    check_error(reply.body, "solver_busy")
    assert "this address already has 1" in reply.body["error"]["message"]
    assert reply.headers.get("Retry-After") == "3600"
    assert pool.running() == 1  # it never reached the pool
    same = asyncio.create_task(api.call("GET", hint_path(game_id), token=tokens[0]))
    easy, _, easy_tokens = await api.new_game("rummikub", 2, {"opening_points": 0})
    elsewhere = {"X-Forwarded-For": "198.51.100.9"}
    quick = hint_path(easy, "goal=points")  # (worked out: only the fewest cards are held)
    async with asyncio.timeout(SAFETY):
        other = await api.call("GET", quick, token=easy_tokens[0], headers=elsewhere)
    assert other.status == 200, other  # another address is served meanwhile
    assert not same.done() and not slow.done()  # the same question waits for the one job
    killed = kill_workers(stack)
    async with asyncio.timeout(SAFETY):
        assert (await slow).status == 503 and (await same).status == 503
    fresh = lambda: len(pool.pids()) == 2 and not set(pool.pids()) & set(killed)  # noqa: E731
    await until(fresh, SAFETY, every=0.01)
    async with asyncio.timeout(SAFETY):
        again = await api.call("GET", quick, token=easy_tokens[1])
    assert again.status == 200, again  # its job done, the address may ask again
    assert gateway(stack).answers._owned == {}


async def test_stopping_the_gateway_ends_its_workers(
    make_stack: MakeStack,  # noqa: F811
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    stack = await make_stack(hint_seconds=3600)
    hint, _, _ = await hint_in_hand(stack, monkeypatch)
    pool = gateway(stack).answers.pool
    await until(lambda: len(pool.pids()) == 2, SAFETY, every=0.01)
    pids = pool.pids()
    async with asyncio.timeout(SAFETY):
        await stack.client.close()  # the app's clean-up stops the pool
        with contextlib.suppress(Exception):
            await hint
    assert pool.closed and pool.pids() == []
    assert not any(alive(pid) for pid in pids)


async def play_some(api: Api, game_id: str, tokens: list[str], commands: int) -> None:
    """``commands`` more commands of the bots (the game goes on)."""
    with pytest.raises(AssertionError, match="did not finish"):
        await play_to_end(api, game_id, tokens, ["clumsy", "greedy"], commands, commands)


async def _live_game(stack: Stack) -> tuple[str, str, list[str]]:
    """A robbers game some sixty commands in (rejected attempts among them), still live."""
    api = stack.api
    game_id, host, tokens = await api.new_game("robbers", 2, {"match_rounds": 3})
    await play_some(api, game_id, tokens, 60)
    assert (await api.view(game_id))["status"] == "playing"
    return game_id, host, tokens


async def test_a_replay_from_the_pool_is_the_replay_of_the_log(
    make_stack: MakeStack,  # noqa: F811
) -> None:
    stack = await make_stack(operator_token="operator-token")
    api = stack.api
    game_id, host, tokens = await _live_game(stack)
    events = await RedisEventStore(stack.redis, stack.settings.prefix).read(game_id)
    head = {"version": events[-1].version, "hash": events[-1].hash}
    last_turn = (await api.view(game_id))["turn"]["number"]
    viewers: list[tuple[str | None, Any]] = [
        (tokens[0], 0),
        (tokens[1], 1),
        (host, SPECTATOR),
        (None, SPECTATOR),
        ("operator-token", None),
    ]
    asks: list[tuple[int | None, int | None]] = [
        *((n, None) for n in (1, 2, last_turn // 2, last_turn)),
        (None, 5),
    ]
    for token, viewer in viewers:
        for turn, version in asks:
            query = f"turn={turn}" if turn is not None else f"version={version}"
            path = f"/api/games/{game_id}/replay?{query}"
            async with asyncio.timeout(SAFETY):
                reply = await api.call("GET", path, token=token)
            assert reply.status == 200, reply
            expected = replay(events, turn=turn, version=version, viewer=viewer) | {"head": head}
            assert reply.body == json.loads(json.dumps(expected)), (path, viewer)
    reply = await api.call("GET", f"/api/games/{game_id}/replay?turn={last_turn + 5}")
    assert reply.status == 404
    check_error(reply.body, "not_found")
    # The operator's export of the live game, worked out in the pool too.
    async with asyncio.timeout(SAFETY):
        reply = await api.call("GET", f"/api/games/{game_id}/export", token="operator-token")
    assert reply.status == 200
    lines = reply.body.splitlines() if isinstance(reply.body, str) else None
    assert lines is not None, reply
    exported = json.loads(lines[0])["exported"]
    assert reply.body == dumps(build_record(events, exported=exported))


async def test_the_same_replay_asked_again_is_not_worked_out_again(
    make_stack: MakeStack,  # noqa: F811
) -> None:
    stack = await make_stack()
    api = stack.api
    game_id, _, tokens = await _live_game(stack)
    path = f"/api/games/{game_id}/replay?turn=2"

    def done() -> float:
        return sample(stack, "gateway_pool_jobs_total", job="replay", outcome="done")

    async with asyncio.timeout(SAFETY):
        first = await api.call("GET", path)
        many = await asyncio.gather(*(api.call("GET", path) for _ in range(20)))
    assert all(r.status == 200 and r.body == first.body for r in many)
    assert done() == 1  # one job for all of them
    assert sample(stack, "gateway_answers_total", kind="replay", kept="no") == 1
    assert sample(stack, "gateway_answers_total", kind="replay", kept="yes") == 20
    # Kept per viewer: a seat's replay (its own hand shown) is not the spectator's.
    async with asyncio.timeout(SAFETY):
        mine = await api.call("GET", path, token=tokens[0])
        theirs = await api.call("GET", path, token=tokens[1])
    assert done() == 3
    for reply, seat in ((first, None), (mine, 0), (theirs, 1)):
        for snap in (reply.body["before"], reply.body["after"]):
            shown = {int(s) for s, hand in snap["hands"].items() if hand is not None}
            assert shown == ({seat} if seat is not None else set()), (seat, snap["hands"])
    # A game that moved on is a new question.
    await play_some(api, game_id, tokens, 1)
    async with asyncio.timeout(SAFETY):
        later = await api.call("GET", path)
    assert later.status == 200 and later.body["head"] != first.body["head"]
    assert done() == 4


async def test_a_hint_asked_again_at_the_same_version_is_kept(
    make_stack: MakeStack,  # noqa: F811
) -> None:
    stack = await make_stack()
    api = stack.api
    game_id, _, tokens = await api.new_game("rummikub", 2, {"opening_points": 0})
    path = f"/api/games/{game_id}/hint"
    async with asyncio.timeout(SAFETY):
        first = await api.call("GET", path, token=tokens[0])
        again = await api.call("GET", path, token=tokens[0])
        other = await api.call("GET", path, token=tokens[1])
        points = await api.call("GET", path + "?goal=points", token=tokens[0])
    assert first.status == again.status == other.status == points.status == 200
    assert again.body == first.body and other.body["seat"] == 1
    assert points.body["goal"] == "points"
    assert sample(stack, "gateway_pool_jobs_total", job="hint", outcome="done") == 3


class AlwaysBusy:
    """A pool that finds no worker for any job within its budget."""

    async def run(self, job: str, fn: Any, *args: Any, budget: float) -> Any:
        raise PoolBusy(f"no worker was free within the {budget:g} s budget")


async def test_a_pool_too_busy_for_the_budget_is_a_refusal_that_is_not_kept() -> None:
    answers = Answers(Settings(solver_per_address=4), None)
    answers.pool = AlwaysBusy()  # type: ignore[assignment]

    async def job() -> Job:
        return jobs_answer, ("never worked out",)

    with pytest.raises(ApiError) as refused:
        await answers.answer("hint", ("g1", 5, 0), job, 0.05, "198.51.100.1")
    assert refused.value.status_code == 503
    assert refused.value.headers["Retry-After"] == "1"
    assert "no worker was free within the 0.05 s budget" in str(refused.value.text)
    assert answers.kept == {}  # a matter of load, not of the question: asked again, tried again
    assert answers._owned == {}


async def test_a_services_app_starts_its_workers_with_it_and_a_tests_app_does_not(
    make_stack: MakeStack,  # noqa: F811
) -> None:
    cold = await make_stack()
    assert gateway(cold).answers.pool.pids() == []  # none until a job comes
    settings = Settings(prefix=f"warm{os.getpid()}:")
    server = TestServer(make_app(FakeRedis(server=FakeServer()), settings, warm=True))
    client: TestClient[Any, Any] = TestClient(server)
    await client.start_server()
    try:
        pool = server.app[GATEWAY].answers.pool
        assert len(pool.pids()) == settings.solver_workers  # before any hint or replay
        await until(lambda: len(pool._idle) == pool.size, SAFETY)
    finally:
        await client.close()
    assert pool.pids() == []


def jobs_answer(text: str) -> Answer:
    return Answer(text)
