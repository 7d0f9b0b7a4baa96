"""A finished tournament's games leave the game -> table map, whoever finishes it and wherever a
crash falls: on either side of the finish's append, the service started again leaves none of
them there. On fakeredis, or the real Redis at REDIS_URL (a key prefix of the test's own); the
tables' results are recorded as the service's steps would, with no referee."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, replace
from typing import Any

import pytest

from services.tournament.service import MAP_PAGE, TournamentService
from shared.infra.settings import Settings
from shared.infra.store.base import AppendResult
from shared.infra.tournaments import Folded
from shared.tournament.commands import SERVICE, PairRound
from shared.tournament.events import Event, TournamentFinished
from tests.services.conftest import delete_prefixed, redis_client
from tests.tournament.desk import DIRECTOR, TOURNAMENT, create_payload, player


@dataclass
class Place:
    """The test's Redis and a key prefix of its own."""

    client: Any
    settings: Settings

    def service(self, consumer: str) -> TournamentService:
        """A tournament service process there (its loops not run)."""
        return TournamentService(self.client, replace(self.settings, consumer=consumer))


@pytest.fixture
async def place() -> AsyncIterator[Place]:
    client = redis_client()
    settings = Settings(prefix=f"t{uuid.uuid4().hex[:10]}:", partitions=2)
    try:
        yield Place(client, settings)
    finally:
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


async def send(
    service: TournamentService,
    kind: str,
    payload: dict[str, Any] | None = None,
    actor: str = DIRECTOR,
    cid: str = "",
    tournament_id: str = TOURNAMENT,
) -> None:
    cid = cid or f"{actor}:{kind}"
    answer = await service.apply(tournament_id, kind, cid, payload or {}, actor)
    assert answer["status"] == "accepted", answer


async def play_round(service: TournamentService, number: int) -> None:
    """Pair round ``number`` and start and finish its tables as the service's steps do (each
    game put in the map as ``start_table`` puts it)."""
    await service.step(TOURNAMENT, PairRound(number))
    state = (await service.log.load(TOURNAMENT)).state
    for table in state.played[-1].tables:
        where = f"{TOURNAMENT}|{table.round}|{table.table}"
        await service.client.hset(service.keys.tournament_tables(), table.game_id, where)
        at = {"round": table.round, "table": table.table, "game_id": table.game_id}
        await send(service, "table_started", at, SERVICE, f"started:{number}:{table.table}")
        results = [
            {"player": who, "seat": seat, "winner": not seat, "total": seat, "outs": 1, "wins": 0}
            for seat, who in enumerate(table.seats)
        ]
        finished = {**at, "results": results, "head": [42, "f" * 64]}
        await send(service, "table_finished", finished, SERVICE, f"finished:{number}:{table.table}")


async def running(service: TournamentService, rounds: int) -> None:
    """A Swiss of four entrants at tables of two, running."""
    await send(service, "create", create_payload(rounds, 2))
    await send(service, "open")
    for i in range(4):
        entrant = {"player": player(i), "name": f"P{i}", "rating": 0.0}
        await send(service, "register", entrant, player(i))
    await send(service, "close")


OTHER_TOURNAMENT = "t000000000000000b"
OTHER = ("g0000000000000000", f"{OTHER_TOURNAMENT}|1|1")  # a table of another tournament


async def other_tournament(service: TournamentService) -> None:
    """Another tournament, not over (registering), with an entry in the map."""
    payload = create_payload(1, 2, OTHER_TOURNAMENT)
    await send(service, "create", payload, tournament_id=OTHER_TOURNAMENT)
    await send(service, "open", tournament_id=OTHER_TOURNAMENT)
    await service.client.hset(service.keys.tournament_tables(), *OTHER)


async def mapped(service: TournamentService) -> int:
    """How many games of the tournament the game -> table map holds (another's stays)."""
    held = await service.client.hgetall(service.keys.tournament_tables())
    assert held.get(OTHER[0].encode()) == OTHER[1].encode()
    return len(held) - 1


def crash_at_the_finish(service: TournamentService, recorded: bool) -> None:
    """The process dies at the append of ``TournamentFinished``: before it reaches Redis, or
    just after (``recorded``: the finish is in the log, nothing after it was done)."""
    append = service.log.append

    async def crashing(
        tournament_id: str,
        events: list[Event],
        after: Folded,
        command_id: str,
        actor: str,
        digest: str,
    ) -> AppendResult:
        finish = any(isinstance(e, TournamentFinished) for e in events)
        if finish and not recorded:
            raise ConnectionError("the process died")
        result = await append(tournament_id, events, after, command_id, actor, digest)
        if finish:
            raise ConnectionError("the process died")
        return result

    service.log.append = crashing  # type: ignore[method-assign]


@pytest.mark.parametrize("recorded", [False, True], ids=["before-the-finish", "after-the-finish"])
async def test_a_crash_at_the_finish_leaves_none_of_its_games_in_the_map(
    place: Place, recorded: bool
) -> None:
    first = place.service("tournaments-1")
    await other_tournament(first)
    await running(first, rounds=1)
    await play_round(first, 1)
    assert await mapped(first) == 2
    crash_at_the_finish(first, recorded)
    with pytest.raises(ConnectionError):
        await first.advance(TOURNAMENT)
    finished = (await first.log.load(TOURNAMENT)).state.status == "finished"
    assert finished == recorded
    await first.referees.close()

    # Started again: its first sweep finishes what the crash left undone.
    second = place.service("tournaments-2")
    await second.sweep()
    assert (await second.log.load(TOURNAMENT)).state.status == "finished"
    assert await second.index.listed(TOURNAMENT, "finished")
    assert await mapped(second) == 0
    await second.referees.close()


async def test_a_director_s_early_finish_forgets_the_games_too(place: Place) -> None:
    service = place.service("tournaments-1")
    await other_tournament(service)
    await running(service, rounds=3)
    await play_round(service, 1)
    await play_round(service, 2)
    assert await mapped(service) == 4
    await send(service, "finish")  # between rounds, the director's own
    assert (await service.log.load(TOURNAMENT)).state.status == "finished"
    assert await mapped(service) == 0
    await service.referees.close()


async def test_a_first_sweep_forgets_the_tables_of_tournaments_over_left_in_the_map(
    place: Place,
) -> None:
    """Entries an older service left behind (or a map restored from an older backup): those of
    a finished tournament and of one let go from Redis go at a service's first sweep, page by
    page; those of a tournament not over stay."""
    older = place.service("tournaments-1")
    await other_tournament(older)
    await running(older, rounds=1)
    await play_round(older, 1)
    games = [t.game_id for t in (await older.log.load(TOURNAMENT)).state.played[-1].tables]
    await older.advance(TOURNAMENT)
    assert (await older.log.load(TOURNAMENT)).state.status == "finished"
    assert await mapped(older) == 0
    await older.referees.close()
    key = older.keys.tournament_tables()
    for game in games:  # as a service that did not forget them left them
        await older.client.hset(key, game, f"{TOURNAMENT}|1|1")
    let_go = {f"g{i:015x}e": "t00000000000000ff|1|1" for i in range(2 * MAP_PAGE + 3)}
    await older.client.hset(key, mapping=let_go)  # no log left in Redis

    service = place.service("tournaments-2")
    await service.sweep()
    assert await mapped(service) == 0
    assert await service.client.hlen(key) == 1  # the other tournament's, not over
    assert await service.tidy_tables() == 0
    await service.referees.close()


async def test_a_tidying_that_fails_holds_up_no_sweep_and_is_tried_again(place: Place) -> None:
    service = place.service("tournaments-1")
    await other_tournament(service)  # registering: looked at by the first sweep only
    tidy = service.tidy_tables
    tried: list[bool] = []

    async def tidy_once_failing() -> int:
        tried.append(True)
        if len(tried) == 1:
            raise ConnectionError("Redis hiccup")
        return await tidy()

    service.tidy_tables = tidy_once_failing  # type: ignore[method-assign]
    assert await service.sweep() == 1  # its steps done all the same
    assert await service.sweep() == 0
    assert await service.sweep() == 0
    assert tried == [True, True]  # tried again once, then done
    await service.referees.close()
