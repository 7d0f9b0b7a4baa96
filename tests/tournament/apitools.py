"""The tournament API tests' helpers: the gateway stack of ``tests.gateway.conftest`` with a
tournament service of its own (which answers the desk's commands, seats and starts the tables'
games and pairs each round once the last is over), accounts with sessions, and a tournament
made and run as far as a test needs."""

from __future__ import annotations

import asyncio
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import pytest

from services.gateway.state import GATEWAY
from services.tournament.service import TournamentService
from shared.infra.tournaments import TournamentDesk
from shared.tournament.state import Tournament
from tests.gateway.api import Reply
from tests.gateway.conftest import MakeStack, Stack
from tests.servers import until as poll

PASSWORD = "a fine password"
WAIT = 20.0  # seconds a step of the service is waited for at most (a failure names it)

MakeServed = Callable[..., Awaitable[Stack]]


@pytest.fixture
async def served(make_stack: MakeStack) -> AsyncIterator[MakeServed]:
    """``await served(**settings)``: a gateway stack and a tournament service on it."""
    running: list[tuple[TournamentService, asyncio.Task[None]]] = []

    async def make(**overrides: Any) -> Stack:
        stack = await make_stack(**overrides)
        service = TournamentService(stack.redis, stack.settings, sweep_seconds=0.5)
        running.append((service, asyncio.create_task(service.run())))
        return stack

    yield make
    for service, task in running:
        service.stop()
        await asyncio.wait_for(task, WAIT)


@pytest.fixture
async def stack(served: MakeServed) -> Stack:
    return await served()


async def account(stack: Stack, name: str) -> tuple[str, str]:
    """A new account's (id, session token)."""
    reply = await stack.api.call("POST", "/api/accounts", {"name": name, "password": PASSWORD})
    assert reply.status == 201, reply
    stack.client.session.cookie_jar.clear()  # each request names its session (or none)
    return reply.body["player"]["id"], reply.body["token"]


def desk(stack: Stack) -> TournamentDesk:
    """The gateway's own desk (to look behind the API, or to act as the service does)."""
    return stack.server.app[GATEWAY].tournaments


async def state(stack: Stack, tournament_id: str) -> Tournament:
    return (await desk(stack).log.load(tournament_id)).state


async def version(stack: Stack, tournament_id: str) -> int:
    return (await state(stack, tournament_id)).version


async def until(
    stack: Stack, tournament_id: str, what: str, test: Callable[[Tournament], bool]
) -> Tournament:
    """The tournament once ``test`` holds of it (the service works on its own time)."""
    found: list[Tournament] = []

    async def check() -> bool:
        found[:] = [await state(stack, tournament_id)]
        return test(found[0])

    await poll(check, WAIT, message=lambda: f"{what}: {found}")
    return found[0]


async def create(stack: Stack, token: str, **overrides: Any) -> Reply:
    body: dict[str, Any] = {
        "name": "Club night",
        "rules": "robbers",
        "options": {"match": "single"},
        "format": "swiss",
        "rounds": 2,
        "table_seats": 2,
        "fill": "byes",
    }
    body.update(overrides)
    return await stack.api.call("POST", "/api/tournaments", body, token=token)


async def registering(stack: Stack, players: int) -> tuple[str, str, list[tuple[str, str]]]:
    """A tournament open for registration with ``players`` entrants: (id, the director's
    token, the entrants' (id, token))."""
    _, director = await account(stack, f"Director {uuid.uuid4().hex[:6]}")
    made = await create(stack, director)
    assert made.status == 201, made
    tid = made.body["tournament_id"]
    opened = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/registration", {"open": True}, token=director
    )
    assert opened.status == 200, opened
    entrants = []
    for n in range(players):
        who, token = await account(stack, f"Entrant {n} {uuid.uuid4().hex[:6]}")
        reply = await stack.api.call("POST", f"/api/tournaments/{tid}/entrants", {}, token=token)
        assert reply.status == 201, reply
        entrants.append((who, token))
    return tid, director, entrants


async def running(stack: Stack, players: int = 4) -> tuple[str, str, list[tuple[str, str]]]:
    """As ``registering``, then registration closed and round 1's tables seated and started
    by the service."""
    tid, director, entrants = await registering(stack, players)
    closed = await stack.api.call(
        "POST", f"/api/tournaments/{tid}/registration", {"open": False}, token=director
    )
    assert closed.status == 200, closed
    await until(
        stack,
        tid,
        "round 1 paired and its tables started",
        lambda t: t.current == 1 and all(x.status == "started" for x in t.played[0].tables),
    )
    return tid, director, entrants


def text(body: Any) -> str:
    return json.dumps(body, sort_keys=True)
