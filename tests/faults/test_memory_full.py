"""A timed game on a real Redis that runs out of memory four times (``maxmemory`` with
``noeviction``): each time right after an append whose side effects nobody sends again, so the
append is in and every write after it (the news, the awaiting-scores note, the turn's deadline,
the answer) is refused, while the ``XACK`` would be accepted.

- a turn's timeout (fired by the timer; nobody retries it): the next turn needs its deadline;
- the play that ends round 1 (its player sees its move in the game and sends nothing again):
  the round needs its awaiting-scores note and its news, or it is never scored;
- scoring's score sheet of round 1: its news and its ``continue``;
- scoring's ``continue`` (the first turn of round 2 needs its deadline).

Each spell lasts through more deliveries of the stuck entry than ``max_deliveries`` (so a
consumer that counted them would dead-letter or give it up), then the ballast is freed. The game
must play to its end with every round scored, every started turn with its timer whenever the
game is at rest, nothing dead-lettered or given up, and every command applied exactly once.
The referee and scoring run in this process (to put the ballast in at those moments); the
Redis is a redis-server of the test's own.
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import uuid
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import pytest
import redis.asyncio as aioredis
from redis.exceptions import OutOfMemoryError, RedisError

from services.referee.referee import Referee
from services.scoring.scoring import Scoring
from shared.core.commands import command_json
from shared.core.events import Event, RoundEnded
from shared.core.views import seat_view
from shared.infra.bus import REFEREES, Bus, Requester, partition_of
from shared.infra.connection import connect
from shared.infra.gamelog import GameLog, Loaded
from shared.infra.keys import Keys
from shared.infra.protocol import CommandEntry
from shared.infra.settings import Settings
from shared.infra.store.base import AppendResult
from shared.infra.store.redis import RedisEventStore
from shared.play.bots import BOTS
from tests.clocks import Clock
from tests.faults.harness import Ack, Ledger, check_logs
from tests.servers import RedisServer, until
from tests.services.conftest import settled
from tests.services.driver import create_game

pytestmark = pytest.mark.slow

TURN_SECONDS = 5
OPTIONS = {
    "turn_seconds": TURN_SECONDS,
    "match_rounds": 2,
    "tie_break_rounds": 0,
    "hand_size": 3,
    "opening_points": 0,
}
MAX_DELIVERIES = 2
SAFETY = 90.0  # seconds: a hang fails; nothing here is timed
ANSWER_SECONDS = 3.0  # a player waits this long for an answer before it looks at the game
WINDOWS = ("timeout", "round-end", "scores", "continue")

# Fills the ballast past the limit in one script: its first write is allowed (Redis is below
# the limit then) and a script that has written runs to its end.
FILL = """
redis.call('SET', KEYS[1], '')
local chunk = string.rep('x', 65536)
for i = 1, tonumber(ARGV[1]) do
  redis.call('APPEND', KEYS[1], chunk)
end
return redis.call('STRLEN', KEYS[1])
"""


class Memory:
    """The ballast key that takes the test's Redis past its ``maxmemory``, and frees it."""

    def __init__(self, url: str, key: str) -> None:
        self.client = aioredis.Redis.from_url(url)
        self.key = key
        self.full = False

    async def fill(self) -> None:
        info = await self.client.info("memory")
        over = int(info["maxmemory"]) - int(info["used_memory"]) + 4 * 2**20
        await self.client.eval(FILL, 1, self.key, math.ceil(over / 65536))
        self.full = True
        with pytest.raises(OutOfMemoryError):  # a write that adds data is refused now
            await self.client.set(f"{self.key}:probe", "1")

    async def free(self) -> None:
        await self.client.delete(self.key)
        self.full = False
        await self.client.set(f"{self.key}:probe", "1")  # and accepted again
        await self.client.delete(f"{self.key}:probe")


class Spells:
    """Memory runs out right after the first append of each kind in ``WINDOWS``."""

    def __init__(self, memory: Memory, counts: Callable[[], tuple[float, float]]) -> None:
        self.memory = memory
        self.counts = counts  # (entries the referee claimed, scoring's failures) so far
        self.begun: asyncio.Queue[tuple[str, str, tuple[float, float]]] = asyncio.Queue()
        self.seen: list[str] = []

    def after_appends(
        self, games: GameLog, window_of: Callable[[str, Sequence[Event]], str]
    ) -> None:
        append = games.append

        async def append_then_fill(
            game_id: str,
            loaded: Loaded,
            events: Sequence[Event],
            actor: str | None,
            command_id: str | None,
            fingerprint: str | None,
            now: float,
            salt_key: bytes | None = None,
        ) -> tuple[AppendResult, Loaded]:
            result = await append(
                game_id, loaded, events, actor, command_id, fingerprint, now, salt_key
            )
            window = window_of(actor or "", events)
            fresh = not result[0].duplicate and not self.memory.full
            if fresh and window in WINDOWS and window not in self.seen:
                self.seen.append(window)
                before = self.counts()
                await self.memory.fill()
                self.begun.put_nowait((window, command_id or "", before))
            return result

        games.append = append_then_fill  # type: ignore[method-assign]


def referee_window(actor: str, events: Sequence[Event]) -> str:
    if any(isinstance(e, RoundEnded) for e in events):
        return "round-end"
    return actor  # "timeout", "continue", or a seat (no spell)


def scoring_window(actor: str, events: Sequence[Event]) -> str:
    return "scores" if actor == "scoring" else ""


async def test_a_full_redis_leaves_no_turn_without_its_timer_and_no_round_unscored(
    tmp_path: Path,
) -> None:
    server = RedisServer(tmp_path / "redis", maxmemory="32mb")
    server.start()
    settings = Settings(
        redis_url=server.url,
        prefix=f"m{uuid.uuid4().hex[:8]}:",
        partitions=2,
        claim_idle_ms=300,
        lease_ms=600,
        max_deliveries=MAX_DELIVERIES,
        drain_seconds=5,
    )
    keys = Keys(settings.prefix)
    client = connect(settings)
    raw = aioredis.Redis.from_url(server.url)
    memory = Memory(server.url, f"{settings.prefix}ballast")
    clock = Clock()
    referee = Referee(clock.redis(client), settings, clock=clock)
    scoring = Scoring(client, settings)
    scoring.sweep_seconds = 0.5
    spells = Spells(memory, lambda: (_count(referee, "claimed"), _count(scoring, "failures")))
    spells.after_appends(referee.games, referee_window)
    spells.after_appends(scoring.games, scoring_window)
    tasks = [asyncio.create_task(referee.run()), asyncio.create_task(scoring.run())]
    requester = Requester(Bus(client, keys, settings.partitions), "memory-test")
    games = GameLog(RedisEventStore(client, settings.prefix))
    ledger = Ledger()
    idle, paused = asyncio.Event(), asyncio.Event()
    try:
        game_id = await create_game(requester, "robbers", 2, OPTIONS, timeout=SAFETY)
        partition = partition_of(game_id, settings.partitions)
        stream, timers = keys.command_stream(partition), keys.timers(partition)

        async def at_rest() -> None:
            """No player moves and every command is handled (read and acknowledged): then the
            turn in play, if it has a deadline, must have its timer. (Scoring and the timers go
            on meanwhile: the look counts only if nothing was pending before or after it. If
            the next spell begins first, the look is left to that spell's end.)"""
            idle.set()
            await until(lambda: _either(memory, paused), SAFETY)
            while not memory.full:
                if not await settled(raw, stream, REFEREES):
                    await asyncio.sleep(0.02)
                    continue
                state = (await games.load(game_id, fresh=True)).state
                timer = None
                if state.turn is not None:
                    timer = await raw.zscore(timers, f"{game_id}|{state.turn.number}")
                after = (await games.load(game_id, fresh=True)).version
                if after != state.version or not await settled(raw, stream, REFEREES):
                    continue  # a command was under way meanwhile: look again
                if state.phase == "turns" and state.turn is not None and state.turn.deadline:
                    assert timer is not None, (
                        f"turn {state.turn.number} has no timer (v{state.version})"
                    )
                break
            idle.clear()

        async def ride_out(window: str, cid: str, before: tuple[float, float]) -> None:
            """Keep Redis full through more deliveries than ``max_deliveries`` (the referee's
            claims of the stuck entry; scoring's failed attempts), then free it."""
            consumer = 1 if window == "scores" else 0
            counts = (lambda: _count(referee, "claimed"), lambda: _count(scoring, "failures"))

            async def lasted() -> bool:
                if consumer == 0:
                    assert await _pending_with(raw, stream, cid), (
                        f"{window}: {cid} was acknowledged while its side effects were refused"
                    )
                return counts[consumer]() >= before[consumer] + MAX_DELIVERIES + 2

            await until(lasted, SAFETY, message=f"{window}: no deliveries while Redis was full")
            await memory.free()
            await at_rest()

        player = asyncio.create_task(
            _play(requester, games, game_id, ledger, idle, paused), name="player"
        )

        provoked_at = 0  # the game's version when the turn was run out

        async def run_out_a_turn() -> bool:
            """Let the turn in play run out (the players idle, time moved past its deadline):
            the timer fires its timeout. Whether it was done (not if a spell began, or no turn
            is in play, meanwhile)."""
            idle.set()
            await until(lambda: _either(memory, paused), SAFETY)
            nonlocal provoked_at
            state = (await games.load(game_id, fresh=True)).state
            if memory.full or state.phase != "turns" or not spells.begun.empty():
                idle.clear()
                return False
            provoked_at = state.version
            clock.advance(TURN_SECONDS + 1)
            return True

        provoked = False
        ridden: list[str] = []
        deadline = asyncio.get_running_loop().time() + SAFETY * 3
        while len(ridden) < len(WINDOWS):
            assert asyncio.get_running_loop().time() < deadline, f"spells so far: {ridden}"
            if provoked and "timeout" not in spells.seen and spells.begun.empty():
                # The turn ran out without its spell (its timeout ended the round: that append
                # is the round-end's window): run out another.
                provoked = not await _version_at_least(games, game_id, provoked_at + 1)
            wanted = not provoked and "timeout" not in spells.seen and not memory.full
            if wanted and await _version_at_least(games, game_id, 9):  # a move or more in
                provoked = await run_out_a_turn()
            try:
                window, cid, before = await asyncio.wait_for(spells.begun.get(), 0.1)
            except TimeoutError:
                continue
            await ride_out(window, cid, before)
            ridden.append(window)
        await asyncio.wait_for(player, SAFETY * 3)
        assert sorted(ridden) == sorted(WINDOWS)

        state = (await games.load(game_id, fresh=True)).state
        events = await games.store.read(game_id)
        types = [e.type for e in events]
        assert state.status == "finished"
        assert types.count("RoundEnded") == types.count("ScoresRecorded") == 2, types
        numbers = [e.data["number"] for e in events if e.type == "TurnTimedOut"]
        assert len(numbers) == len(set(numbers)), "a turn timed out twice"
        await check_logs(server.url, settings.prefix, [game_id], ledger)
        assert await raw.xlen(keys.dead_letters()) == 0
        assert _count(scoring, "given_up") == 0
        await until(lambda: _nothing_left(raw, keys, timers, game_id), SAFETY)
    finally:
        referee.stop()
        scoring.stop()
        await asyncio.wait_for(asyncio.gather(*tasks, return_exceptions=True), 30)
        await requester.close()
        await client.aclose()
        await raw.aclose()
        await memory.client.aclose()
        server.close()


async def _play(
    requester: Requester,
    games: GameLog,
    game_id: str,
    ledger: Ledger,
    idle: asyncio.Event,
    paused: asyncio.Event,
) -> None:
    """Both seats, with greedy bots, until the game ends; idle (and says so) while ``idle``."""
    rng = random.Random(7)
    bot = BOTS["greedy"]()
    while True:
        if idle.is_set():
            paused.set()
            await asyncio.sleep(0.02)
            continue
        paused.clear()
        state = (await games.load(game_id, fresh=True)).state
        if state.status == "finished":
            paused.set()
            return
        if state.phase != "turns" or state.turn is None:
            await asyncio.sleep(0.02)
            continue
        seat = state.turn.seat
        body = command_json(bot.choose(seat_view(state, seat), rng), with_seat=False)
        body["expected_version"] = state.version
        entry = CommandEntry(game_id, "seat", f"{seat}:{uuid.uuid4().hex}", body, seat)
        await _send(requester, games, entry, ledger)


async def _send(requester: Requester, games: GameLog, entry: CommandEntry, ledger: Ledger) -> None:
    """Send until answered; a command whose answer is lost but that the game shows applied is
    not sent again (as a client that sees its move in the game's view)."""
    while True:
        try:
            answer = await requester.request(entry, ANSWER_SECONDS)
        except (TimeoutError, RedisError):  # no answer, or refused by a full Redis
            seen = await games.store.outcome(entry.game, entry.cid)
            if seen is not None:
                ledger.acks.append(await _ack_of(games, entry, seen))
                return
            ledger.retries += 1
            await asyncio.sleep(0.2)
            continue
        if answer["status"] in ("accepted", "rejected"):
            status = 200 if answer["status"] == "accepted" else 422
            ack = Ack(entry.game, entry.cid, status, answer["version"], answer["head"])
            ledger.acks.append(ack)
        else:  # refused (the game moved on: a timeout): nothing was appended
            ledger.refusals[str(answer["code"])] += 1
        return


async def _ack_of(games: GameLog, entry: CommandEntry, seen: AppendResult) -> Ack:
    stored = await games.store.read(
        entry.game, after=seen.first_version - 1, limit=seen.last_version - seen.first_version + 1
    )
    rejected = [s.type for s in stored] == ["CommandRejected"]
    return Ack(entry.game, entry.cid, 422 if rejected else 200, seen.last_version, seen.head)


async def _pending_with(client: Any, stream: str, cid: str) -> bool:
    """Whether an entry of command ``cid`` is pending (read, not acknowledged) on ``stream``."""
    pending = await client.xpending_range(stream, REFEREES, min="-", max="+", count=1000)
    for item in pending:
        entries = await client.xrange(stream, item["message_id"], item["message_id"])
        for _, fields in entries:
            if json.loads(fields[b"c"]).get("cid") == cid:
                return True
    return False


async def _either(memory: Memory, paused: asyncio.Event) -> bool:
    return memory.full or paused.is_set()


async def _version_at_least(games: GameLog, game_id: str, version: int) -> bool:
    return (await games.load(game_id, fresh=True)).version >= version


async def _nothing_left(client: Any, keys: Keys, timers: str, game_id: str) -> bool:
    """The finished game has no timer and no round waiting for its score sheet."""
    left = [m for m in await client.zrange(timers, 0, -1) if m.decode().startswith(game_id)]
    waiting = [m for m in await client.smembers(keys.awaiting_scores()) if game_id in m.decode()]
    return not left and not waiting


def _count(service: Referee | Scoring, name: str) -> float:
    metric = {
        ("Referee", "claimed"): "referee_claimed_total",
        ("Scoring", "failures"): "scoring_failures_total",
        ("Scoring", "given_up"): "scoring_given_up_total",
    }[(type(service).__name__, name)]
    registry = service.metrics.registry if isinstance(service, Referee) else service.registry
    return registry.get_sample_value(metric) or 0.0
