"""`rummy archive now | list | fetch`, and `rummy export | audit | replay` of a game Redis let
go: in process, on fakeredis and an SQLite archive; output and exit codes."""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import fakeredis
import pytest

import shared.cli.audit as cli
from services.main import main
from shared.audit.record import GameRecord, build_record, read_record
from shared.audit.source import import_record
from shared.infra.store.redis import RedisEventStore
from tests.audit.games import play_game

PREFIX = "wtcli:"
ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
def redis(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Any:
    server = fakeredis.FakeServer()
    monkeypatch.setattr(
        cli, "open_client", lambda: (fakeredis.aioredis.FakeRedis(server=server), PREFIX)
    )
    monkeypatch.setenv("RUMMY_ARCHIVE_URL", f"sqlite://{tmp_path}/archive.db")
    monkeypatch.setenv("RUMMY_RETAIN_SECONDS", "0")
    monkeypatch.delenv("REDIS_URL", raising=False)
    return server


@pytest.fixture(scope="module")
def finished() -> list[GameRecord]:
    return [
        build_record(play_game(800 + n, "robbers", {"match_rounds": 1}, bots).events, 1.0)
        for n, bots in enumerate([("clumsy", "greedy"), ("greedy", "random", "clumsy")])
    ]


async def put(server: Any, records: list[GameRecord]) -> None:
    client = fakeredis.aioredis.FakeRedis(server=server)
    for record in records:
        await import_record(RedisEventStore(client, PREFIX), record)
    await client.aclose()


def test_archive_now_then_list_fetch_and_export_by_id(
    redis: Any, finished: list[GameRecord], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    asyncio.run(put(redis, finished))
    assert main(["archive", "now"]) == 0
    counts = json.loads(capsys.readouterr().out)
    assert counts == {"archived": 2, "forgotten": 2, "due": 0, "kept": 0}
    assert main(["archive", "now"]) == 0  # nothing left to do
    assert json.loads(capsys.readouterr().out)["forgotten"] == 0

    assert main(["archive", "list", "--json"]) == 0
    page = json.loads(capsys.readouterr().out)
    assert sorted(g["game_id"] for g in page["games"]) == sorted(r.game_id for r in finished)
    name = finished[1].header.players[2]
    assert main(["archive", "list", "--json", "--player", name]) == 0
    assert [g["game_id"] for g in json.loads(capsys.readouterr().out)["games"]] == [
        finished[1].game_id
    ]
    assert main(["archive", "list", "--since", "2000-01-01", "--limit", "1"]) == 0
    out = capsys.readouterr()
    assert len(out.out.splitlines()) == 1 and "more: --cursor" in out.err

    target = tmp_path / "fetched.rrec"
    assert main(["archive", "fetch", finished[0].game_id, "-o", str(target)]) == 0
    capsys.readouterr()
    assert read_record(str(target)).events == finished[0].events
    assert main(["verify", str(target)]) == 0
    assert "every check holds" in capsys.readouterr().out
    # Gone from Redis, the game is still exported, audited and replayed by id.
    assert main(["export", finished[0].game_id]) == 0
    exported = capsys.readouterr().out
    assert exported.splitlines()[1:] == target.read_text().splitlines()[1:]
    assert main(["audit", finished[0].game_id]) == 0
    assert "every check holds" in capsys.readouterr().out
    assert main(["replay", finished[0].game_id, "--turn", "1"]) == 0


@pytest.mark.parametrize(
    ("argv", "why"),
    [
        (["archive", "list", "--since", "yesterday"], "--since 'yesterday' is not a date"),
        (["archive", "list", "--limit", "0"], "limit: must be 1-200"),
        (["archive", "list", "--cursor", "nope"], "cursor: must be the 'next' of a page"),
        (["archive", "fetch", "bad id"], "a game id is"),
    ],
)
def test_bad_input_is_refused_with_what_is_allowed(
    redis: Any, argv: list[str], why: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(argv) == 2
    assert why in capsys.readouterr().err


def test_an_unknown_game_is_not_archived(redis: Any, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["archive", "fetch", "nobody"]) == 1
    assert "game nobody is not archived" in capsys.readouterr().err


def test_without_an_archive_it_says_what_to_set(
    redis: Any, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.delenv("RUMMY_ARCHIVE_URL")
    assert main(["archive", "list"]) == 2
    assert "set RUMMY_ARCHIVE_URL" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("settings", "why"),
    [
        ({}, "set RUMMY_ARCHIVE_URL"),
        ({"RUMMY_ARCHIVE_URL": "mysql://db/x"}, "scheme 'mysql' is not known"),
        (
            {"RUMMY_ARCHIVE_URL": "sqlite://a.db", "RUMMY_RETAIN_SECONDS": "-5"},
            "RUMMY_RETAIN_SECONDS must be 0 or more",
        ),
    ],
)
def test_the_archiver_refuses_to_start_without_an_archive(
    settings: dict[str, str], why: str
) -> None:
    """As a process: a refusal must say which setting, and start nothing."""
    clean = {k: v for k, v in os.environ.items() if not k.startswith("RUMMY_")}
    done = subprocess.run(
        [sys.executable, "-m", "services.main", "archiver"],
        cwd=ROOT,
        env=clean | {"REDIS_URL": "redis://127.0.0.1:1/0"} | settings,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2, done.stderr
    assert why in done.stderr
