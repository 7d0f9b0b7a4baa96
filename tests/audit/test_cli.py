"""`rummy replay | audit | export | verify | import | rebuild`: output and exit codes (0 holds,
1 a check failed, 2 bad input), in process on fakeredis and as real processes."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import uuid
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import fakeredis
import pytest

import shared.cli.audit as cli
from services.main import main
from shared.audit.record import build_record, dumps
from tests.audit.games import Game, with_data
from tests.servers import RedisServer

ROOT = Path(__file__).resolve().parents[2]


def _write(path: Path, game: Game, events: list[Any] | None = None) -> Path:
    path.write_text(dumps(build_record(events or game.events, exported=0.0)), encoding="utf-8")
    return path


def _tampered(tmp_path: Path, game: Game) -> tuple[Path, int]:
    events = list(game.events)
    i = next(k for k, e in enumerate(events) if e.type == "ScoresRecorded")
    events[i] = with_data(events[i], winner=(events[i].data["winner"] + 1) % 3)
    return _write(tmp_path / "tampered.rrec", game, events), events[i].version


def _rummy(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    clean = {k: v for k, v in os.environ.items() if k != "REDIS_URL" and not k.startswith("RUMMY_")}
    return subprocess.run(
        [sys.executable, "-m", "services.main", *args],
        cwd=ROOT,
        env=clean | (env or {}),
        capture_output=True,
        text=True,
        timeout=60,
    )


# --- as real processes, on files -----------------------------------------------------------------


def test_verify_and_replay_a_record_file(tmp_path: Path, game: Game) -> None:
    good = _write(tmp_path / "good.rrec", game)
    done = _rummy("verify", str(good))
    assert done.returncode == 0, done.stderr
    assert "every check holds" in done.stdout and "seed      ok" in done.stdout
    bad, version = _tampered(tmp_path, game)
    done = _rummy("verify", str(bad))
    assert done.returncode == 1
    assert f"first bad event: version {version} (chain" in done.stdout
    assert f"version {version}" in done.stderr
    lines = good.read_text().splitlines()
    lines[3] = lines[3][:-3]
    (tmp_path / "cut.rrec").write_text("\n".join(lines))
    done = _rummy("verify", str(tmp_path / "cut.rrec"))
    assert done.returncode == 2 and "line 4" in done.stderr
    done = _rummy("replay", str(good), "--turn", "7", "--json")
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["turn"] == 7


def test_replay_of_a_turn_that_is_not_there(
    tmp_path: Path, game: Game, capsys: pytest.CaptureFixture[str]
) -> None:
    good = _write(tmp_path / "good.rrec", game)
    assert main(["replay", str(good), "--turn", "99999"]) == 2
    assert "no turn 99999" in capsys.readouterr().err
    assert main(["replay", str(good), "--version", "5", "--spectator"]) == 0
    assert "Shown to: all" in capsys.readouterr().out  # a finished game hides nothing
    assert main(["verify", str(tmp_path / "missing.rrec")]) == 2
    assert "No such file" in capsys.readouterr().err


def test_a_store_command_without_redis_url(game: Game) -> None:
    done = _rummy("audit", "some-game")
    assert done.returncode == 2 and "REDIS_URL" in done.stderr


# --- in process, on fakeredis --------------------------------------------------------------------


@pytest.fixture
def store(monkeypatch: pytest.MonkeyPatch) -> Iterator[str]:
    """Every command talks to one private fakeredis server under a unique prefix."""
    server = fakeredis.FakeServer()
    prefix = f"cli{uuid.uuid4().hex[:8]}:"
    monkeypatch.setattr(
        cli, "open_client", lambda: (fakeredis.aioredis.FakeRedis(server=server), prefix)
    )
    yield prefix


def test_import_audit_export_rebuild(
    store: str, tmp_path: Path, games: list[Game], capsys: pytest.CaptureFixture[str]
) -> None:
    game, other = games[0], games[3]
    first = _write(tmp_path / "a.rrec", game)
    assert main(["import", str(first)]) == 0
    assert main(["import", str(_write(tmp_path / "b.rrec", other))]) == 0
    assert f"imported game {game.game_id}" in capsys.readouterr().out
    assert main(["import", str(first)]) == 2
    assert "already exists" in capsys.readouterr().err

    assert main(["audit", game.game_id]) == 0
    out = capsys.readouterr().out
    for check in ("chain", "head", "receipts", "replay", "seed", "scores"):
        assert f"  {check} " in out
    assert "every check holds" in out
    assert main(["audit", "--all", "--json"]) == 0
    docs = json.loads(capsys.readouterr().out)
    assert {d["game_id"] for d in docs} == {game.game_id, other.game_id}

    kept = game.events[100]
    assert main(["audit", game.game_id, "--receipt", f"{kept.version}:{kept.hash}"]) == 0
    assert "1 receipt(s) in the chain" in capsys.readouterr().out
    assert main(["audit", game.game_id, "--receipt", f"{kept.version}:{'0' * 64}"]) == 1
    assert f"version {kept.version}" in capsys.readouterr().err
    assert main(["audit", game.game_id, "--receipt", "12"]) == 2
    assert "VERSION:HASH" in capsys.readouterr().err
    assert main(["audit", "no-such-game"]) == 2
    assert main(["audit"]) == 2
    capsys.readouterr()

    assert main(["export", game.game_id]) == 0
    exported = capsys.readouterr().out.splitlines()
    assert exported[1:] == first.read_text().splitlines()[1:]
    target = tmp_path / "out.rrec"
    assert main(["export", game.game_id, "-o", str(target)]) == 0
    assert target.read_text().splitlines()[1:] == exported[1:]
    assert main(["export", "no-such-game"]) == 2

    assert main(["replay", game.game_id, "--turn", "3", "--seat", "1"]) == 0
    out = capsys.readouterr().out
    assert "turn 3" in out and "Table diff:" in out

    # Projections were never built for imported games: the first rebuild differs, not the next.
    assert main(["rebuild"]) == 1
    assert json.loads(capsys.readouterr().out.splitlines()[0])["games"] == 2
    assert main(["rebuild"]) == 0


def test_audit_all_names_the_tampered_game(
    store: str, tmp_path: Path, games: list[Game], capsys: pytest.CaptureFixture[str]
) -> None:
    import asyncio

    from shared.infra import codec
    from shared.infra.store.redis import EVENT_FIELD, RedisEventStore

    game = games[2]
    assert main(["import", str(_write(tmp_path / "a.rrec", game))]) == 0
    assert main(["import", str(_write(tmp_path / "b.rrec", games[1]))]) == 0
    client, prefix = cli.open_client()

    async def tamper() -> None:
        store = RedisEventStore(client, prefix)
        key = store.keys.events(game.game_id)
        entries = [(i, f[EVENT_FIELD]) for i, f in await client.xrange(key)]
        event = codec.decode_stored(entries[20][1])
        entries[20] = (entries[20][0], codec.encode(with_data(event, forged=True)))
        await client.delete(key)
        for entry_id, raw in entries:
            await client.xadd(key, {EVENT_FIELD: raw}, id=entry_id)
        await client.aclose()

    asyncio.run(tamper())
    capsys.readouterr()
    assert main(["audit", "--all"]) == 1
    captured = capsys.readouterr()
    assert f"game {game.game_id} failed chain at version 21" in captured.err
    assert "2 games audited, 1 failed" in captured.out


def test_import_refuses_a_broken_record(
    store: str, tmp_path: Path, game: Game, capsys: pytest.CaptureFixture[str]
) -> None:
    events = list(game.events)
    events[10] = with_data(events[10], forged=True)
    assert main(["import", str(_write(tmp_path / "x.rrec", game, events))]) == 2
    assert "refusing to import" in capsys.readouterr().err
    assert main(["audit", game.game_id]) == 2  # nothing was imported


# --- as real processes, on a real Redis ----------------------------------------------------------


@pytest.fixture(scope="module")
def redis_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A redis-server of this module's own (skipped where none is installed)."""
    with RedisServer(tmp_path_factory.mktemp("redis")) as server:
        yield server.url


def test_the_commands_on_a_real_redis(redis_url: str, tmp_path: Path, game: Game) -> None:
    env = {"REDIS_URL": redis_url, "RUMMY_PREFIX": f"cli{uuid.uuid4().hex[:8]}:"}
    record = _write(tmp_path / "g.rrec", game)
    done = _rummy("import", str(record), env=env)
    assert done.returncode == 0, done.stderr
    done = _rummy("audit", game.game_id, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    done = _rummy("export", game.game_id, env=env)
    assert (
        done.returncode == 0
        and done.stdout.splitlines()[1:] == (record.read_text().splitlines()[1:])
    )
    import redis as sync_redis

    client = sync_redis.Redis.from_url(redis_url)
    key = f"{env['RUMMY_PREFIX']}game:{{{game.game_id}}}:events"
    client.xdel(key, "33-0")
    client.close()
    done = _rummy("audit", game.game_id, env=env)
    assert done.returncode == 1
    assert "first bad event: version 33 (chain: version 33 is missing" in done.stdout
