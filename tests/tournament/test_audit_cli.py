"""`rummy audit --tournament ID` in process on fakeredis: the tournament's log where the
tournament service appends it, its tables' games in Redis or (one of them) only in the archive;
exit 0 when it holds, 1 naming the difference, 2 when it cannot be read."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import fakeredis
import pytest

import shared.cli.audit as cli
from services.main import main
from shared.archive.opening import open_archive
from shared.audit.record import build_record
from shared.audit.source import import_record
from shared.infra.store.redis import RedisEventStore
from shared.infra.stored import NewEvent, StoredEvent
from tests.tournament.desk import TOURNAMENT
from tests.tournament.played import Played, played, rewritten

PREFIX = "htaudit:cli:"


@pytest.fixture(scope="module")
def tournament() -> Played:
    return played()


@pytest.fixture
def server(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    server = fakeredis.FakeServer()
    monkeypatch.setattr(
        cli, "open_client", lambda: (fakeredis.aioredis.FakeRedis(server=server), PREFIX)
    )
    monkeypatch.setenv("RUMMY_ARCHIVE_URL", f"sqlite://{tmp_path}/archive.db")
    monkeypatch.delenv("REDIS_URL", raising=False)
    return server


async def put(server: Any, tournament: Played, log: list[StoredEvent], tmp_path: Path) -> None:
    """The tournament log appended as the service appends it (hashes unchanged), three games
    in Redis and the last only in the archive."""
    client = fakeredis.aioredis.FakeRedis(server=server)
    logs = RedisEventStore(client, cli.tournament_logs(PREFIX))
    for stored in log:
        new = NewEvent(stored.type, stored.data, stored.schema, stored.actor)
        result = await logs.append(
            TOURNAMENT,
            [new],
            stored.version - 1,
            command_id=stored.command_id,
            time=stored.time,
        )
        assert result.head == stored.hash
    *kept, archived = tournament.games.values()
    for game in kept:
        await import_record(RedisEventStore(client, PREFIX), build_record(game.events, 1.0))
    await client.aclose()
    archive = open_archive(f"sqlite://{tmp_path}/archive.db")
    await archive.open()
    await archive.store(build_record(archived.events, 1.0), 2.0)
    await archive.close()


def install(server: Any, tournament: Played, log: list[StoredEvent], tmp_path: Path) -> None:
    asyncio.run(put(server, tournament, log, tmp_path))


def test_a_clean_tournament_from_redis_and_the_archive(
    server: Any, tournament: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    install(server, tournament, tournament.log(), tmp_path)
    assert main(["audit", "--tournament", TOURNAMENT]) == 0
    out = capsys.readouterr().out
    assert f"tournament {TOURNAMENT}: 16 events" in out and "4 table games" in out
    for check in ("chain", "head", "events", "games", "tables", "standings"):
        assert f"  {check} " in out
    assert out.rstrip().endswith("every check holds")
    assert main(["audit", "--tournament", TOURNAMENT, "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["ok"] and doc["differences"] == [] and len(doc["games"]) == 4
    assert all(g["ok"] for g in doc["games"])


def test_a_tampered_result_exits_1_naming_it(
    server: Any, tournament: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    log = tournament.log()
    version = next(e.version for e in log if e.type == "TableFinished")
    results = [dict(r) for r in log[version - 1].data["results"]]
    results[1]["outs"] += 3
    install(server, tournament, rewritten(log, version, results=results), tmp_path)
    assert main(["audit", "--tournament", TOURNAMENT, "--json"]) == 1
    captured = capsys.readouterr()
    doc = json.loads(captured.out)
    (difference,) = doc["differences"]
    assert difference | {"message": ""} == {
        "check": "tables",
        "message": "",
        "version": version,
        "round": 1,
        "table": 1,
        "game_id": log[version - 1].data["game_id"],
        "player": results[1]["player"],
        "field": "outs",
        "recorded": results[1]["outs"],
        "recomputed": results[1]["outs"] - 3,
    }
    assert f"version {version}, round 1, table 1" in captured.err
    assert main(["audit", "--tournament", TOURNAMENT]) == 1
    out = capsys.readouterr().out
    assert "  tables    FAILED" in out and "field outs" in out and "FAILED: 1 difference" in out


def test_what_cannot_be_read_exits_2(
    server: Any, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    assert main(["audit", "--tournament", TOURNAMENT]) == 2
    assert f"there is no tournament {TOURNAMENT!r}" in capsys.readouterr().err
    assert main(["audit", "--tournament", TOURNAMENT, "g" + "0" * 16]) == 2
    assert "--tournament ID audits one tournament" in capsys.readouterr().err
    assert main(["audit", "--tournament", "t{x}"]) == 2


async def put_archived(tournament: Played, tmp_path: Path) -> None:
    """The tournament and every table's game only in the archive (Redis let them all go)."""
    from shared.archive.tournaments import tournament_record

    archive = open_archive(f"sqlite://{tmp_path}/archive.db")
    await archive.open()
    for game in tournament.games.values():
        await archive.store(build_record(game.events, 1.0), 2.0)
    await archive.store_tournament(tournament_record(tournament.log(), 1.0), 3.0)
    await archive.close()


def test_a_tournament_redis_let_go_is_audited_from_the_archive(
    server: Any, tournament: Played, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(put_archived(tournament, tmp_path))
    assert main(["audit", "--tournament", TOURNAMENT]) == 0
    out = capsys.readouterr().out
    assert f"tournament {TOURNAMENT}: 16 events" in out and "4 table games" in out
    assert out.rstrip().endswith("every check holds")
    assert main(["audit", "--tournament", "t" + "9" * 16]) == 2
    assert "nor in the archive" in capsys.readouterr().err
