"""The bots service in process (fakeredis, or the real Redis at REDIS_URL): bot seats play whole
games with people in the other seats, every move an ordinary command applied once at the position
it was worked out for, with the bot named as the actor; moves are paced by the service's own
schedule (an injected clock, no sleeping), a solver bot past its budget still moves, a second
process shares the seats, and redelivered news never applies a move twice."""

from __future__ import annotations

import argparse
import json
import random
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest

from services.bots.bots import BOT_PLAYERS, Bots, bot_to_move, move_id
from shared.audit.replay import replay
from shared.core.commands import command_json
from shared.core.views import seat_view
from shared.infra.bus import partition_of
from shared.infra.protocol import CommandEntry
from shared.infra.settings import Settings
from shared.play.bots import BOTS
from shared.play.roster import SEATABLE
from tests.services.bot_games import (
    RULE_SETS,
    Players,
    bot_commands,
    double_moves,
    holding,
    log_of,
    play_people,
    seat_game,
)
from tests.services.conftest import Stack, settled


@pytest.fixture
async def players(stack: Stack) -> AsyncIterator[Players]:
    built = Players(stack)
    try:
        yield built
    finally:
        await built.stop_all()


def seatings(seats: int) -> list[dict[int, str]]:
    """Bots in 1..all-but-one of ``seats`` seats, a different mix each."""
    names = ["greedy", "random", "greedy", "random"]
    return [{seat: names[seat] for seat in range(1, count + 1)} for count in range(1, seats)]


@pytest.mark.parametrize("rules", RULE_SETS)
async def test_games_with_bots_in_all_but_one_seat_and_fewer_finish(
    stack: Stack, players: Players, rules: str
) -> None:
    bots = players.start()
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    for number, seated in enumerate(seatings(3)):
        game_id = await seat_game(stack.requester, rules, 3, seated, {"match_rounds": 1})
        people = await play_people(stack.requester, stack.games, game_id, seed=number)
        events = await log_of(stack, game_id)
        moves = bot_commands(events)
        assert people > 0 and moves, (people, len(moves))
        assert double_moves(events) == []
        assert {cid.split(":")[1] for cid in moves} <= set(seated.values())
    sent = bots.metrics.registry.get_sample_value(
        "bots_moves_total", {"bot": "greedy", "type": "draw"}
    )
    assert sent is not None and sent > 0


async def test_a_game_of_bots_alone_finishes(stack: Stack, players: Players) -> None:
    bots = players.start()
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    game_id = await seat_game(
        stack.requester,
        "robbers",
        2,
        {0: "greedy", 1: "random"},
        {"match_rounds": 2, "tie_break_rounds": 0},  # a tie would add rounds (Decision 8)
    )
    await stack.until(lambda: _finished(stack, game_id), timeout=60)
    events = await log_of(stack, game_id)
    assert double_moves(events) == []
    assert [e.type for e in events].count("RoundEnded") == 2
    # A replay shows a bot's move as the bot's: its actor, its command id.
    for cid, applied in list(bot_commands(events).items())[:5]:
        (command,) = replay(events, version=applied[0].version)["commands"]
        assert command["actor"] == f"bot:{cid.split(':')[1]}", command
        assert command["command_id"] == cid


async def test_a_move_waits_for_its_time_without_holding_the_feed(
    stack: Stack, players: Players
) -> None:
    """With a 30 s pause, the news that makes a bot's turn is acknowledged at once and the move
    is due 30 s later (Redis's time, moved by the test's clock): nothing is sent before, the
    move goes once the clock passes its time."""
    bots = players.start(bot_delay_seconds=30.0)
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    before = bots.clock()
    first = await seat_game(stack.requester, "robbers-classic", 2, {0: "greedy", 1: "greedy"})
    second = await seat_game(stack.requester, "robbers-classic", 2, {0: "random", 1: "random"})
    due_sets = {
        bots.keys.bot_moves(partition_of(g, stack.settings.partitions)) for g in (first, second)
    }

    async def both_due() -> bool:
        members = set()
        for key in due_sets:
            members |= {m.decode() for m in await stack.client.zrange(key, 0, -1)}
        return {first, second} <= members

    await stack.until(both_due)
    for feed in bots.bus.feed_streams():
        await stack.until(lambda feed=feed: settled(stack.client, feed, BOT_PLAYERS))
    assert bots.metrics.registry.get_sample_value("bots_moves_due") == 2
    for game_id in (first, second):
        key = bots.keys.bot_moves(partition_of(game_id, stack.settings.partitions))
        due = await stack.client.zscore(key, game_id)
        # 30 s after its news came, which was between ``before`` and now (give or take the
        # clock's resyncs with Redis, a few milliseconds).
        assert due is not None and before + 29.5 <= due <= bots.clock() + 30.5
        assert bot_commands(await log_of(stack, game_id)) == {}
    assert await bots.sweep() == 0  # nothing is due yet

    stack.clock.advance(31.0)
    assert await bots.sweep() == 2
    for game_id in (first, second):
        await stack.until(lambda game_id=game_id: _moved(stack, game_id))
    late = bots.metrics.registry.get_sample_value("bots_move_late_seconds_count")
    assert late == 2  # each sent about a second after its time: the clock jumped past it


async def test_redelivered_news_and_a_second_process_never_apply_a_move_twice(
    stack: Stack, players: Players
) -> None:
    """With the referee stopped at a bot's turn, the same position's move is worked out by a
    process, again by it (its memory of the sending lost, as after a restart) and by a second
    process: the same command id and body every time. The referee, started again, applies it
    once, at that position."""
    first = players.start("bots-1", bot_delay_seconds=30.0)  # moves only when told here
    await stack.until(lambda: holding(first, stack.settings.partitions))
    game_id = await seat_game(stack.requester, "robbers", 3, {1: "greedy", 2: "random"})
    await _people_until_bot(stack, game_id)
    await stack.stop(stack.referee)
    loaded = await stack.games.load(game_id, fresh=True)
    mover = bot_to_move(loaded.state)
    assert mover is not None and loaded.state.turn is not None

    sent = [await first.move(game_id)]
    first._sent.clear()  # a restart forgets what it sent
    sent.append(await first.move(game_id))
    await players.stop(first)
    second = players.start("bots-2", bot_delay_seconds=30.0)
    await stack.until(lambda: holding(second, stack.settings.partitions))
    sent.append(await second.move(game_id))
    commands = [s for s in sent if s is not None]
    assert len(commands) == 3
    assert len({(s.cid, json.dumps(s.body, sort_keys=True)) for s in commands}) == 1
    assert commands[0].cid == move_id(mover[1], loaded.state.turn.number, loaded.version)
    assert commands[0].body["expected_version"] == loaded.version

    stack.start_referee("referee-2")
    await stack.until(lambda: _moved(stack, game_id, loaded.version))
    stream = stack.keys.command_stream(partition_of(game_id, stack.settings.partitions))
    await stack.until(lambda: settled(stack.client, stream, "referees"))
    events = await log_of(stack, game_id)
    assert list(bot_commands(events)) == [commands[0].cid]
    assert double_moves(events) == []


async def test_two_processes_share_the_seats_and_only_the_holder_moves(
    stack: Stack, players: Players
) -> None:
    first = players.start("bots-1")
    second = players.start("bots-2")
    await stack.until(lambda: _shared(first, second, stack.settings.partitions))
    assert first.held.isdisjoint(second.held)
    game_id = await seat_game(stack.requester, "robbers", 2, {0: "greedy", 1: "greedy"})
    partition = partition_of(game_id, stack.settings.partitions)
    holder, other = (first, second) if partition in first.held else (second, first)
    assert await other.move(game_id) is None  # not its partition: the holder's
    await stack.until(lambda: _finished(stack, game_id), timeout=60)
    moved = holder.metrics.registry.get_sample_value
    assert (
        sum(
            moved("bots_moves_total", {"bot": "greedy", "type": kind}) or 0
            for kind in ("play", "draw", "pass")
        )
        > 0
    )
    assert double_moves(await log_of(stack, game_id)) == []
    # The holder stops: the other takes its partitions and plays on.
    await players.stop(holder)
    await stack.until(lambda: holding(other, stack.settings.partitions))
    next_game = await seat_game(stack.requester, "robbers", 2, {0: "random", 1: "greedy"})
    await stack.until(lambda: _finished(stack, next_game), timeout=60)


async def test_a_solver_bot_past_its_budget_moves_with_its_cheaper_bot(
    stack: Stack, players: Players
) -> None:
    bots = players.start(bot_seconds=0.000_001, bot_workers=1)
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    game_id = await seat_game(stack.requester, "rummikub", 2, {1: "solver"}, {"match_rounds": 1})
    await _people_until_bot(stack, game_id)
    await stack.until(lambda: _quick(stack, game_id))
    registry = bots.metrics.registry
    fallbacks = registry.get_sample_value(
        "bots_fallbacks_total", {"bot": "solver", "reason": "JobTimeout"}
    )
    assert fallbacks is not None and fallbacks >= 1
    assert double_moves(await log_of(stack, game_id)) == []


async def test_a_solver_bot_thinks_in_a_worker_within_its_budget(
    stack: Stack, players: Players
) -> None:
    bots = players.start(bot_seconds=30.0, bot_workers=1)
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    game_id = await seat_game(stack.requester, "rummikub", 2, {1: "solver"}, {"match_rounds": 1})
    await _people_until_bot(stack, game_id)

    async def thought() -> bool:
        moves = bot_commands(await log_of(stack, game_id))
        return any(cid.startswith("bot:solver:") and not cid.endswith(":quick") for cid in moves)

    await stack.until(thought, timeout=60)
    done = bots.metrics.registry.get_sample_value(
        "bots_pool_jobs_total", {"job": "solver", "outcome": "done"}
    )
    assert done is not None and done >= 1
    assert double_moves(await log_of(stack, game_id)) == []


async def test_bad_news_is_given_up_and_the_bots_play_on(stack: Stack, players: Players) -> None:
    bots = players.start()
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    feed = stack.keys.feed(0)
    for doc in (
        b"\xff junk",
        b"[1]",
        json.dumps({"game": "a{b}", "types": ["TurnStarted"]}).encode(),
        json.dumps({"game": "no-such-game", "types": ["TurnStarted"]}).encode(),
    ):
        await stack.client.xadd(feed, {b"c": doc})
    await stack.until(lambda: settled(stack.client, feed, BOT_PLAYERS))

    async def given_up() -> bool:  # counted just after the acknowledgement's answer
        return bots.metrics.registry.get_sample_value("bots_given_up_total") == 3

    await stack.until(given_up, timeout=5)
    game_id = await seat_game(stack.requester, "robbers-classic", 2, {1: "greedy"})
    await play_people(stack.requester, stack.games, game_id)
    assert double_moves(await log_of(stack, game_id)) == []


async def test_draining_gives_the_partitions_up_and_says_so(stack: Stack, players: Players) -> None:
    bots = players.start()
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    assert await bots.ready() == (True, "playing")
    bots.stop()
    assert (await bots.ready())[0] is False
    await players.stop(bots)
    for partition in range(stack.settings.partitions):
        assert await stack.client.get(stack.keys.bot_lease(partition)) is None


async def test_a_departed_bots_consumer_is_forgotten_once_its_entries_are_claimed(
    stack: Stack, players: Players
) -> None:
    # A process that read a news entry and died: a consumer of the group, its entry pending.
    feed = stack.keys.feed(0)
    await stack.client.xgroup_create(feed, BOT_PLAYERS, id="0", mkstream=True)
    await stack.client.xadd(feed, {b"c": json.dumps({"game": "g-x", "types": []}).encode()})
    read = await stack.client.xreadgroup(BOT_PLAYERS, "bots-gone", {feed: ">"}, count=1)
    assert read
    bots = players.start("bots-1")
    await stack.until(lambda: holding(bots, stack.settings.partitions))
    await stack.until(lambda: settled(stack.client, feed, BOT_PLAYERS))  # claimed, handled
    assert await bots.forget_departed() == [f"{feed} bots-gone"]
    consumers = await stack.client.xinfo_consumers(feed, BOT_PLAYERS)
    assert "bots-gone" not in {_name(c["name"]) for c in consumers}


def _name(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def test_every_bot_the_rules_core_can_seat_can_play() -> None:
    from shared.core.botnames import BOT_NAMES

    assert set(SEATABLE) == set(BOT_NAMES)


def test_bad_bot_settings_are_refused_with_the_variable_named() -> None:
    from shared.infra.settings import SettingsError

    for env, named in (
        ({"RUMMY_BOT_DELAY_SECONDS": "-1"}, "RUMMY_BOT_DELAY_SECONDS"),
        ({"RUMMY_BOT_DELAY_SECONDS": "nan"}, "RUMMY_BOT_DELAY_SECONDS"),
        ({"RUMMY_BOT_SECONDS": "0"}, "RUMMY_BOT_SECONDS"),
        ({"RUMMY_BOT_WORKERS": "0"}, "RUMMY_BOT_WORKERS"),
        ({"RUMMY_BOT_QUEUE": "-3"}, "RUMMY_BOT_QUEUE"),
    ):
        with pytest.raises(SettingsError, match=named):
            Settings.from_env(env)
    assert Settings.from_env({"RUMMY_BOT_DELAY_SECONDS": "0"}).bot_delay_seconds == 0.0


# --- helpers ------------------------------------------------------------------------------------


async def _people_until_bot(stack: Stack, game_id: str) -> None:
    """Play the people's seats (greedy) until it is a bot's turn."""
    rng = random.Random(1)
    person = BOTS["greedy"]()
    for _ in range(100):
        state = (await stack.games.load(game_id, fresh=True)).state
        if bot_to_move(state) is not None:
            return
        assert state.turn is not None, state.phase
        body = command_json(person.choose(seat_view(state, state.turn.seat), rng), with_seat=False)
        entry = CommandEntry(game_id, "seat", uuid.uuid4().hex, body, seat=state.turn.seat)
        answer = await stack.requester.request(entry, 10)
        assert answer["status"] in ("accepted", "rejected"), answer
    raise AssertionError("no bot's turn came")


async def _finished(stack: Stack, game_id: str) -> bool:
    return (await stack.games.load(game_id, fresh=True)).state.status == "finished"


async def _moved(stack: Stack, game_id: str, after: int = 0) -> bool:
    events = await log_of(stack, game_id)
    return any(e.version > after for applied in bot_commands(events).values() for e in applied)


async def _quick(stack: Stack, game_id: str) -> bool:
    return any(cid.endswith(":quick") for cid in bot_commands(await log_of(stack, game_id)))


async def _shared(first: Bots, second: Bots, partitions: int) -> bool:
    return len(first.held) + len(second.held) == partitions and bool(first.held and second.held)


def test_rummy_bots_without_redis_url_says_so(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from services.bots import main as bots_main
    from services.main import build_parser

    monkeypatch.delenv("REDIS_URL", raising=False)
    assert build_parser().parse_args(["bots"]).command == "bots"
    assert bots_main.run(argparse.Namespace(command="bots")) == 2
    assert "set REDIS_URL" in capsys.readouterr().err
