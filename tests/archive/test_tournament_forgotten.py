"""A tournament played to its finish by bots through the tournament service (the gateway's API
directing it, the referee, scoring and the bots playing its tables), then archived by the
archiver and let go by Redis after its retention: its page, its log and the lobby's listings
are read from the archive through the gateway's API as they were; it is audited from the
archive as ``rummy audit --tournament`` audits it; and a command for it (a ruling, a create sent
again with its Idempotency-Key) is refused (``tournament_finished``, ``tournament_exists``),
nothing made; the same from a tournament service that never held it (a restart)."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Any

import pytest

import shared.cli.audit as cli
from services.bots.bots import Bots
from services.gateway.state import GATEWAY
from services.tournament.service import TournamentService
from shared.archive.sqlite import SqliteArchive
from shared.infra.keys import Keys
from shared.infra.store.redis import RedisEventStore
from shared.infra.tournaments import ALL, STATUSES
from tests.archive.letting_go import archive_until
from tests.gateway.api import check_error
from tests.gateway.conftest import MakeStack, Stack, make_stack
from tests.servers import until
from tests.tournament.apitools import account

__all__ = ["make_stack"]  # the gateway tests' fixture, used here too

BOTS = ("greedy", "random", "clumsy", "stubborn")
WAIT = 120.0  # a safety net: a tournament that never finishes fails, nothing is timed


@dataclass
class Site:
    """The gateway stack, a tournament service and a bots service on it, and the archive."""

    stack: Stack
    archive: SqliteArchive
    path: Path
    services: list[tuple[Any, asyncio.Task[None]]]

    def start_tournaments(self) -> None:
        """A tournament service with the archive, running until the test ends."""
        stack = self.stack
        service = TournamentService(stack.redis, stack.settings, self.archive, sweep_seconds=0.5)
        self.services.append((service, asyncio.create_task(service.run())))

    async def restart_tournaments(self) -> None:
        """The tournament services stopped and a new one started (it holds no fold)."""
        for service, task in self.services:
            if isinstance(service, TournamentService):
                service.stop()
                await asyncio.wait_for(task, 20)
        self.services = [(s, t) for s, t in self.services if not isinstance(s, TournamentService)]
        self.start_tournaments()

    @property
    def keys(self) -> Keys:
        return Keys(self.stack.settings.prefix)

    async def held(self, tournament_id: str) -> list[str]:
        """What Redis still holds of the tournament: its log's keys, index entry, listings."""
        logs = Keys(self.keys.tournament_logs())
        redis = self.stack.redis
        held = [k for k in logs.game_keys(tournament_id) if await redis.exists(k)]
        if await redis.sismember(logs.games(), tournament_id):
            held.append("index")
        for status in (*STATUSES, ALL):
            if await redis.zscore(self.keys.tournaments(status), tournament_id) is not None:
                held.append(status)
        if await redis.hexists(self.keys.tournament_summaries(), tournament_id):
            held.append("row")
        return held


@pytest.fixture
async def site(make_stack: MakeStack, tmp_path: Path) -> AsyncIterator[Site]:
    path = tmp_path / "archive.db"
    stack = await make_stack(archive_url=f"sqlite://{path}", retain_seconds=0.0)
    settings = replace(stack.settings, consumer="bots-1", bot_delay_seconds=0.0)
    bots = Bots(stack.clock.redis(stack.redis), settings, clock=stack.clock)
    site = Site(stack, SqliteArchive(str(path)), path, [(bots, asyncio.create_task(bots.run()))])
    site.start_tournaments()
    try:
        yield site
    finally:
        for service, _ in site.services:
            service.stop()
        tasks = [task for _, task in site.services]
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 20)
        await site.archive.close()


async def played_out(site: Site) -> tuple[str, str, dict[str, Any]]:
    """A Swiss of four bots at tables of two, two rounds, created with an Idempotency-Key and
    run by the service to its finish: (its id, the director's session, its view)."""
    api = site.stack.api
    _, director = await account(site.stack, "Dana")
    body = {
        "name": "Club night",
        "rules": "robbers",
        "options": {"match_rounds": 1},
        "rounds": 2,
        "table_seats": 2,
    }
    key = {"Idempotency-Key": "club-night"}
    made = await api.call("POST", "/api/tournaments", body, token=director, headers=key)
    assert made.status == 201, made
    tid = made.body["tournament_id"]
    path = f"/api/tournaments/{tid}"
    opened = await api.call("POST", f"{path}/registration", {"open": True}, token=director)
    assert opened.status == 200, opened
    for bot in BOTS:
        entered = await api.call("POST", f"{path}/entrants", {"player": f"bot:{bot}"}, director)
        assert entered.status == 201, entered
    closed = await api.call("POST", f"{path}/registration", {"open": False}, token=director)
    assert closed.status == 200, closed

    async def finished() -> bool:
        return bool((await api.call("GET", path)).body["status"] == "finished")

    await until(finished, WAIT)
    return tid, director, (await api.call("GET", path)).body


async def archived_and_let_go(site: Site, tournament_id: str, games: list[str]) -> None:
    """Run an archiver (retention 0) until the tournament and its tables' ``games`` have left
    Redis; the gateway forgets its folds and views too (a cold gateway, or one that
    restarted)."""

    async def gone() -> bool:
        logs = [site.keys.events(game_id) for game_id in games]
        return not await site.held(tournament_id) and not await site.stack.redis.exists(*logs)

    archive = SqliteArchive(str(site.path))
    stack = site.stack
    archiver = await archive_until(stack.redis, stack.settings, archive, gone, 0.1, WAIT)
    sample = archiver.registry.get_sample_value
    assert sample("archiver_tournaments_total", {"outcome": "archived"}) == 1
    assert sample("archiver_tournaments_forgotten_total") == 1
    gw = site.stack.server.app[GATEWAY]
    gw.tournaments.log.forget(tournament_id)
    gw.tournament_views.clear()


async def test_a_tournament_let_go_by_redis_is_read_and_audited_from_the_archive(
    site: Site,
) -> None:
    api = site.stack.api
    tid, director, view = await played_out(site)
    path = f"/api/tournaments/{tid}"
    log = await api.call("GET", f"{path}/events?limit=500")
    assert log.status == 200 and log.body["version"] == view["version"]
    assert len(log.body["events"]) == view["version"]
    held = await site.held(tid)
    assert len(held) == 7, held  # log, head, outcomes, index, finished, all, row

    games = [table["game_id"] for played in view["played"] for table in played["tables"]]
    assert len(games) == 4
    await archived_and_let_go(site, tid, games)
    await site.archive.open()
    entry = await site.archive.tournament_entry(tid)
    assert entry is not None and (entry.events, entry.head) == (view["version"], view["head"])
    for game_id in games:  # (the games, for the archive's games)
        assert await site.archive.entry(game_id) is not None

    # Read through the API as it was.
    again = await api.call("GET", path)
    assert again.status == 200 and again.body == view
    assert await api.call("GET", f"{path}/events?limit=500") == log
    page = await api.call("GET", f"{path}/events?after=3&limit=2")
    assert [e["version"] for e in page.body["events"]] == [4, 5]
    for status in ("finished", "all"):
        lobby = await api.call("GET", f"/api/tournaments?status={status}")
        assert lobby.status == 200, lobby
        (row,) = lobby.body["tournaments"]
        assert row["tournament_id"] == tid and row["status"] == "finished"
        assert row["director"]["name"] == "Dana" and row["version"] == view["version"]
        assert lobby.body["next"] is None
    running = await api.call("GET", "/api/tournaments?status=running")
    assert running.body["tournaments"] == []

    # Audited from the archive, as `rummy audit --tournament` does.
    store = RedisEventStore(site.stack.redis, site.stack.settings.prefix)
    audit = await cli._tournament_audit(store, site.archive, tid)
    assert audit.ok, audit.differences
    assert audit.head == (view["version"], view["head"]) and len(audit.games) == 4

    # Its record is final: its create sent again, or a ruling, is refused; nothing is made. The
    # same from a tournament service that never held it (its fold would say it exists).
    for restart in (False, True):
        if restart:
            await site.restart_tournaments()
        body = {"name": "Club night", "rules": "robbers", "options": {"match_rounds": 1}}
        body |= {"rounds": 2, "table_seats": 2}
        key = {"Idempotency-Key": "club-night"}
        made = await api.call("POST", "/api/tournaments", body, token=director, headers=key)
        assert made.status == 409, made
        check_error(made.body, "tournament_exists")
        ruling = {"kind": "annul", "round": 1, "table": 1, "reason": "too late"}
        refused = await api.call("POST", f"{path}/rulings", ruling, token=director)
        assert refused.status == 409, refused
        check_error(refused.body, "tournament_finished")
        assert "archived" in refused.body["error"]["message"]
        assert await site.held(tid) == []
        assert (await api.call("GET", path)).body == view
