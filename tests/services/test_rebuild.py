"""One rebuild command with one exit code: `rummy rebuild` (and `rummy scoring --rebuild`, the
same code path) finds no difference on a healthy deployment, whatever state its games are in
(unseated, waiting, in play, finished, several rule sets), and reports and repairs a projection
that is actually wrong (exit 1)."""

from __future__ import annotations

import asyncio
import json
import os
import random
from typing import Any

import fakeredis
import pytest

import shared.cli.audit as audit_cli
from services.main import main
from services.scoring.projections import game_standings
from services.scoring.scoring import INTERESTING
from shared.core.codes import Rejection
from shared.core.commands import Command
from shared.core.events import Event
from shared.infra.bus import REFEREES, SCORING
from shared.infra.connection import connect
from shared.infra.protocol import CommandEntry
from shared.infra.settings import Settings
from shared.play.bots import BOTS
from shared.play.selfplay import SelfPlay
from tests.services.conftest import Stack, settled
from tests.services.driver import create_game, drive


class Watched(SelfPlay):
    """Self-play that notes the event types of every command that changed the standings."""

    changed: list[set[str]]

    def apply(self, command: Command) -> list[Event] | Rejection:
        before = game_standings(self.state) if self.state.status != "new" else None
        decision = super().apply(command)
        if not isinstance(decision, Rejection) and game_standings(self.state) != before:
            self.changed.append({e.TYPE for e in decision})
        return decision


@pytest.mark.parametrize(
    ("rules", "options"),
    [
        ("robbers", {"match_rounds": 2}),
        ("rummikub", {}),
        ("robbers-classic", {}),
        ("robbers", {"discard_pile": True, "match": "single"}),
    ],
)
def test_every_command_that_changes_the_standings_is_news_scoring_follows(
    rules: str, options: dict[str, Any]
) -> None:
    """The live projections follow the feed's news of ``INTERESTING`` types only; a rebuild
    projects every game from its log. They agree on a healthy deployment only if every command
    that changes a game's standings (its creation included) announces one of those types."""
    bots = [BOTS[name]() for name in ("greedy", "stubborn", "random")]
    game = Watched(rules, options, bots, b"rebuild" * 4, random.Random(5), check=False)
    game.changed = []
    assert game.play().finished
    assert game.changed and {"GameCreated"} in game.changed
    for types in game.changed:
        assert types & INTERESTING, types


async def quiet(stack: Stack) -> bool:
    """Every command and every piece of news handled, no round waiting for its score sheet."""
    for partition in range(stack.settings.partitions):
        if not await settled(stack.client, stack.keys.feed(partition), SCORING):
            return False
        if not await settled(stack.client, stack.keys.command_stream(partition), REFEREES):
            return False
    return int(await stack.client.scard(stack.keys.awaiting_scores())) == 0


async def games_of_every_kind(stack: Stack) -> dict[str, str]:
    """Games unseated, waiting, in play and finished, of all three rule sets."""
    requester, games = stack.requester, stack.games
    unseated = "g-unseated"
    answer = await requester.request(
        CommandEntry(unseated, "create", "create", {"rules": "robbers", "seats": 2}), 10
    )
    assert answer["status"] == "accepted", answer
    waiting = "g-waiting"
    body = {"rules": "rummikub", "seats": 3, "options": {"max_rejections": 0}}
    answer = await requester.request(CommandEntry(waiting, "create", "create", body), 10)
    assert answer["status"] == "accepted", answer
    sit = CommandEntry(waiting, "sit", "sit:0", {"name": "p0"})
    assert (await requester.request(sit, 10))["status"] == "accepted"
    made = {"unseated": unseated, "waiting": waiting}
    for kind, rules, options in (
        ("robbers", "robbers", {"match_rounds": 1}),
        ("rummikub", "rummikub", {"turn_seconds": None}),
        ("classic", "robbers-classic", {}),
    ):
        made[kind] = await create_game(requester, rules, 2, options)
        await drive(requester, games, made[kind], ["greedy", "stubborn"])
    made["playing"] = await create_game(requester, "robbers-classic", 3)
    await drive(
        requester, games, made["playing"], ["greedy"] * 3, until=lambda s: s.turn_number >= 6
    )
    await stack.until(lambda: quiet(stack), timeout=30)
    return made


def cli_client(stack: Stack) -> Any:
    """What `rummy rebuild` connects to: the stack's Redis, under the stack's prefix."""
    prefix = stack.settings.prefix
    url = os.environ.get("REDIS_URL")
    if url:
        return lambda: (connect(Settings(redis_url=url)), prefix)
    server = stack.client.connection_pool.connection_kwargs["server"]
    return lambda: (fakeredis.aioredis.FakeRedis(server=server), prefix)


async def rummy(argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, dict[str, Any]]:
    """Run a `rummy` command in its own thread (it runs its own event loop), as an operator
    would while the services go on; its exit code and its JSON report."""
    capsys.readouterr()
    code = await asyncio.to_thread(main, argv)
    out = capsys.readouterr().out.strip().splitlines()
    return code, json.loads(out[-1])


async def test_a_healthy_deployment_rebuilds_with_no_difference(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    made = await games_of_every_kind(stack)
    ids = sorted(made.values())
    live = await stack.scoring.projections.snapshot(ids)
    monkeypatch.setattr(audit_cli, "open_client", cli_client(stack))

    for argv in (["rebuild"], ["scoring", "--rebuild"]):
        code, report = await rummy(argv, capsys)
        assert (code, report) == (0, {"games": 6, "differences": [], "games_differing": []}), argv
    assert await stack.scoring.projections.snapshot(ids) == live
    assert live["games"][made["unseated"]]["seats"] == []
    assert live["games"][made["waiting"]]["status"] == "waiting"
    assert live["games"][made["playing"]]["status"] == "playing"
    assert {live["games"][made[k]]["status"] for k in ("robbers", "rummikub", "classic")} == {
        "finished"
    }


async def test_a_wrong_projection_is_reported_and_repaired(
    stack: Stack, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    made = await games_of_every_kind(stack)
    ids = sorted(made.values())
    projections, keys, client = stack.scoring.projections, stack.keys, stack.client
    live = await projections.snapshot(ids)
    monkeypatch.setattr(audit_cli, "open_client", cli_client(stack))

    # One game's standings edited, a rating no game earned: both parts differ, and are
    # repaired.
    wrong = dict(live["games"][made["rummikub"]], rounds=99)
    await client.hset(keys.standings(made["rummikub"]), "standings", json.dumps(wrong))
    ratings = projections.ratings
    await client.sadd(ratings.rules_key, "robbers")
    await client.hset(ratings.key("robbers", "figures"), "bot:ghost", "[25.0, 8.0, 1, 1, 1]")
    code, report = await rummy(["rebuild"], capsys)
    assert code == 1
    assert report == {
        "games": 6,
        "differences": ["games", "ratings"],
        "games_differing": [made["rummikub"]],
    }
    assert await projections.snapshot(ids) == live
    code, report = await rummy(["rebuild"], capsys)
    assert (code, report["differences"]) == (0, [])

    # The same through `rummy scoring --rebuild`: a lost standings key.
    await client.delete(keys.standings(made["unseated"]))
    code, report = await rummy(["scoring", "--rebuild"], capsys)
    assert code == 1
    assert report["differences"] == ["games"]
    assert report["games_differing"] == [made["unseated"]]
    assert await projections.snapshot(ids) == live
    code, report = await rummy(["scoring", "--rebuild"], capsys)
    assert (code, report["differences"]) == (0, [])
