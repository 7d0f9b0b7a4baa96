"""The tournament service and a finished tournament whose log has left Redis for the archive:
a command for it is refused (``tournament_exists`` for a create, ``tournament_finished`` for the
rest) and appends nothing, even from a service that still holds its fold; its sweep does not
list it again from that fold."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from services.tournament.service import TournamentService
from shared.archive.sqlite import SqliteArchive
from shared.archive.tournaments import tournament_record
from shared.infra.keys import Keys
from shared.infra.retention import TournamentRetention
from shared.infra.settings import Settings
from shared.infra.tournaments import ALL
from tests.archive.tournament_memory import DIRECTOR, TOURNAMENT, run_tournament
from tests.services.conftest import delete_prefixed, redis_client
from tests.tournament.desk import create_payload


@pytest.fixture
async def service(tmp_path: Path) -> AsyncIterator[TournamentService]:
    """A service (not running: its commands are applied by hand) whose finished tournament
    was archived and let go by Redis; it still holds its fold."""
    client = redis_client()
    settings = Settings(prefix=f"wts{uuid.uuid4().hex[:10]}:")
    archive = SqliteArchive(tmp_path / "archive.db")
    built = TournamentService(client, settings, archive)
    try:
        await run_tournament(built, entrants=4, rounds=1, seats=2)
        log = await built.log.store.read(TOURNAMENT)
        await archive.open()
        entry = await archive.store_tournament(tournament_record(log, 1.0), 1.0)
        assert await TournamentRetention(client, Keys(settings.prefix)).forget(
            TOURNAMENT, entry.head
        )
        yield built
    finally:
        await built.referees.close()
        await archive.close()
        await delete_prefixed(client, settings.prefix)
        await client.aclose()


async def test_commands_for_it_are_refused_and_append_nothing(service: TournamentService) -> None:
    verdict = {"kind": "verdict", "round": 1, "table": 1, "reason": "late", "turn": 1}
    create = create_payload(1, 2, TOURNAMENT, name="Again", options={})
    for fresh in (False, True):  # with its fold held, then without (a restarted service)
        if fresh:
            service.log.forget(TOURNAMENT)
        for kind, payload, code in (
            ("rule", verdict | {"verdict": "stands"}, "tournament_finished"),
            ("open", {}, "tournament_finished"),
            ("create", create, "tournament_exists"),
        ):
            answer = await service.apply(TOURNAMENT, kind, f"{kind}-{fresh}", payload, DIRECTOR)
            assert (answer["status"], answer["code"]) == ("rejected", code), (kind, answer)
        assert (await service.log.store.version(TOURNAMENT))[0] == 0  # nothing appended


async def test_its_sweep_does_not_list_it_again(service: TournamentService) -> None:
    assert (await service.log.load(TOURNAMENT)).state.status == "finished"  # (the held fold)
    await service._relist(TOURNAMENT)
    keys = Keys(service.settings.prefix)
    assert await service.client.zscore(keys.tournaments(ALL), TOURNAMENT) is None
    assert not await service.client.hexists(keys.tournament_summaries(), TOURNAMENT)
