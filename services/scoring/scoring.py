"""The scoring service: follows the feed; when a round ends it computes the score sheet with the
pure scoring module, appends ``ScoresRecorded`` (expected version, command id ``scores:<round>``
so a redelivered ending appends nothing twice) and asks the referees to carry on; and it keeps
the projections (standings, leaderboard, player statistics) up to date.

The feed is trimmed and scoring may be down when a round ends, so the referee also notes every
ended round in the ``awaiting-scores`` set (``<game>|<round>``); scoring sweeps that set every
``sweep_seconds`` and removes a round once its sheet is recorded and the game has carried on.
A feed entry is acknowledged only after everything it asked for is written (the score sheet,
its news, the ``continue``, the projections). One whose handling keeps failing is given up
(acknowledged, logged, counted) after ``max_deliveries``; the sweep still covers the round it
announced. A delivery that failed for Redis's reasons (out of memory refuses every write that
adds data, but not the acknowledgement) is not counted (``shared/infra/transient.py``): giving up
the news of a finished match while Redis is full would leave its projections unwritten.

Times (the stamp of ``ScoresRecorded``) are Redis's (``shared/infra/clock.py``), as the
referees' are.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable
from typing import Any

import structlog
from prometheus_client import Counter, Gauge

from services.scoring.projections import Projections
from shared.core.codes import Rejection
from shared.core.commands import Context, RecordScores
from shared.core.decide import decide, round_sheet
from shared.core.state import GameState
from shared.infra.autopipe import autopipe
from shared.infra.bus import (
    FEED_MAXLEN,
    SCORING,
    Bus,
    CommandEntry,
    parse_json_field,
    read_plan,
    stream_batches,
)
from shared.infra.client import RedisClient
from shared.infra.clock import RedisClock
from shared.infra.gamelog import GameLog
from shared.infra.keys import Keys, awaiting_member, check_game_id
from shared.infra.observability import service_registry
from shared.infra.settings import Settings
from shared.infra.store.base import VersionConflict
from shared.infra.store.redis import RedisEventStore
from shared.infra.transient import forgive, transient

# News that changes a game's projected standings (``game_standings``) or needs a score sheet:
# every game is projected from its creation, so that a rebuild from the logs finds on a healthy
# deployment exactly what the live projections hold (a test checks that every command changing
# the standings announces one of these).
INTERESTING = {
    "GameCreated",
    "RoundEnded",
    "ScoresRecorded",
    "MatchEnded",
    "SeedRevealed",
    "PlayerSeated",
    "RoundDealt",
}
FOLLOW_PAUSE = 0.05  # seconds between reads of a partition that had little news
MAX_CONFLICTS = 10
SWEEP_SECONDS = 5.0
REPORTED_GAMES = 20  # a rebuild names at most this many games whose standings differed


def carried_on(state: GameState, round_number: int) -> bool:
    """Whether round ``round_number`` is scored and the game has moved past it."""
    return state.status == "finished" or state.round > round_number


class Scoring:
    """One scoring process (several may run; every step is idempotent)."""

    def __init__(
        self, client: RedisClient, settings: Settings, clock: Callable[[], float] = time.monotonic
    ) -> None:
        # Concurrent Redis calls share pipelines (blocking reads go straight through).
        client = self.client = autopipe(client)
        self.settings = settings
        self.clock = RedisClock(client, clock)  # Redis's time, carried by the host clock
        self.keys = Keys(settings.prefix)
        self.store = RedisEventStore(client, settings.prefix)
        self.games = GameLog(self.store, settings.cache_size)
        self.bus = Bus(client, self.keys, settings.partitions)
        self.projections = Projections(client, self.keys)
        self.consumer = settings.consumer_name()
        self.log = structlog.get_logger("scoring").bind(consumer=self.consumer)
        self.registry = service_registry()
        self.sheets = Counter(
            "scoring_sheets_total", "Score sheets recorded", registry=self.registry
        )
        self.handled = Counter(
            "scoring_feed_entries_total", "Feed entries handled", registry=self.registry
        )
        self.failures = Counter(
            "scoring_failures_total",
            "Feed entries whose handling raised",
            registry=self.registry,
        )
        self.pending = Gauge(
            "scoring_feed_pending",
            "Feed entries read but not acknowledged",
            ["partition"],
            registry=self.registry,
        )
        self.given_up = Counter(
            "scoring_given_up_total",
            "Feed entries acknowledged unhandled after max_deliveries failures",
            registry=self.registry,
        )
        self.swept = Counter(
            "scoring_swept_total",
            "Ended rounds the sweep of the awaiting-scores set looked at",
            registry=self.registry,
        )
        self.sweep_seconds = SWEEP_SECONDS
        self.stopping = asyncio.Event()
        self.running = False

    async def run(self) -> None:
        """Follow every feed partition and sweep the awaiting rounds until ``stop``."""
        while True:  # Redis may come up after scoring
            try:
                await self.bus.ensure_groups(SCORING, self.bus.feed_streams())
                break
            except Exception as err:
                self.log.warning("creating the consumer groups failed; retrying", error=str(err))
                try:
                    await asyncio.wait_for(self.stopping.wait(), 1.0)
                    return
                except TimeoutError:
                    continue
        self.running = True
        loops = [
            asyncio.create_task(self._follow(streams))
            for streams in read_plan(self.client, self.bus.feed_streams())
        ]
        loops.append(asyncio.create_task(self._sweep_loop()))
        loops.append(asyncio.create_task(self.clock.follow(self.stopping)))
        try:
            await self.stopping.wait()
            # Drain: each loop finishes the entry in hand and stops (a read blocks at most 1 s).
            await asyncio.wait(loops, timeout=self.settings.drain_seconds)
        finally:
            self.running = False
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            self.log.info("scoring stopped")

    def stop(self) -> None:
        """Stop reading the feed (the entries in hand finish, within the drain deadline)."""
        self.stopping.set()

    async def _follow(self, streams: list[str]) -> None:
        """Follow feed partitions (all in one read on a single Redis): first what this consumer
        read but did not acknowledge (a crash), then new entries."""
        starts: dict[str, str] = dict.fromkeys(streams, "0")
        claim_at = 0.0  # when to look for a crashed peer's entries next
        while not self.stopping.is_set():
            try:
                reply = await self.client.xreadgroup(
                    SCORING,
                    self.consumer,
                    starts,
                    count=self.settings.batch,
                    block=min(1000, max(self.settings.claim_idle_ms, 50)),
                )
                got = {_text(stream): entries for stream, entries in stream_batches(reply)}
                for stream in streams:
                    if starts[stream] != ">":
                        history = got.get(stream) or []
                        # The history goes on after the last one; none left: new entries.
                        starts[stream] = _text(history[-1][0]) if history else ">"
                total = 0
                for stream, entries in got.items():
                    total += len(entries)
                    plain = []  # news of nothing to score: acknowledged together
                    for entry_id, fields in entries:
                        if self.stopping.is_set():
                            break  # unacknowledged: read again here, or claimed by a peer
                        if self._game_to_score(entry_id, fields) is None:
                            plain.append(entry_id)
                        else:
                            await self._attempt(stream, entry_id, fields)
                    if plain:
                        await self.client.xack(stream, SCORING, *plain)
                        self.handled.inc(len(plain))
                if self.stopping.is_set():
                    break
                if 0 < total < self.settings.batch:
                    # Nothing here is urgent (a round's score sheet may wait a tenth of a
                    # second): let news gather, one read per pause instead of one per turn.
                    await asyncio.sleep(FOLLOW_PAUSE)
                if time.monotonic() < claim_at:
                    continue
                claim_at = time.monotonic() + self.settings.claim_idle_ms / 2000
                for stream in streams:
                    claimed = await self.client.xautoclaim(
                        stream,
                        SCORING,
                        self.consumer,
                        min_idle_time=self.settings.claim_idle_ms,
                        start_id="0-0",
                        count=self.settings.batch,
                    )
                    for entry_id, fields in claimed[1]:
                        if fields:
                            await self._attempt(stream, entry_id, fields)
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.failures.inc()
                self.log.warning("following the feed failed; retrying", error=str(err))
                await asyncio.sleep(0.5)

    async def _attempt(self, stream: str, entry_id: Any, fields: dict[Any, Any]) -> None:
        """``handle`` one entry; if it raises, leave it pending (it is claimed and retried),
        or give it up once it was delivered ``max_deliveries`` times."""
        try:
            await self.handle(stream, entry_id, fields)
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.failures.inc()
            if transient(err):  # Redis's reasons: handled again later, never given up for them
                self.log.warning(
                    "feed entry failed for Redis's reasons; it is handled again",
                    entry=_text(entry_id),
                    error=str(err),
                )
                with contextlib.suppress(Exception):
                    await forgive(self.client, stream, SCORING, self.consumer, entry_id)
                return
            self.log.exception("feed entry failed", entry=_text(entry_id), error=str(err))
            pending = await self.client.xpending_range(
                stream, SCORING, min=entry_id, max=entry_id, count=1
            )
            delivered = int(pending[0]["times_delivered"]) if pending else 0
            if delivered >= self.settings.max_deliveries:
                await self.client.xack(stream, SCORING, entry_id)
                self.given_up.inc()
                self.log.error("feed entry given up", entry=_text(entry_id), deliveries=delivered)

    async def handle(self, stream: str, entry_id: Any, fields: dict[Any, Any]) -> None:
        """React to one feed entry, then acknowledge it."""
        game = self._game_to_score(entry_id, fields)
        if game is not None:
            await self.catch_up(game)
        await self.client.xack(stream, SCORING, entry_id)
        self.handled.inc()

    def _game_to_score(self, entry_id: Any, fields: dict[Any, Any]) -> str | None:
        """The game a feed entry asks scoring to look at (a round or game changed), or None
        for news that needs nothing (most of them: turns)."""
        doc = parse_json_field(fields) or {}
        game, types = doc.get("game"), doc.get("types")
        if not isinstance(game, str) or not isinstance(types, list):
            return None
        if not {t for t in types if isinstance(t, str)} & INTERESTING:
            return None
        try:
            check_game_id(game)
        except ValueError:
            self.log.warning("feed entry for no game", entry=_text(entry_id), game=game[:200])
            return None
        return game

    async def _sweep_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.sweep()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.failures.inc()
                self.log.warning("sweeping the awaiting rounds failed", error=str(err))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.sweep_seconds)

    async def sweep(self) -> int:
        """Catch up every game with a round in the awaiting-scores set (whatever became of its
        feed entry); forget the rounds that are scored and carried on. Returns how many rounds
        are still waiting."""
        key = self.keys.awaiting_scores()
        waiting = 0
        async for raw in self.client.sscan_iter(key, count=500):
            member = _text(raw)
            game_id, _, number = member.rpartition("|")
            try:
                check_game_id(game_id)
                round_number = int(number)
            except ValueError:
                await self.client.srem(key, raw)
                continue
            self.swept.inc()
            state = await self.catch_up(game_id)
            if carried_on(state, round_number):
                await self.client.srem(key, raw)
            else:
                waiting += 1
        return waiting

    async def catch_up(self, game_id: str) -> GameState:
        """Record the score sheet of a finished round if it is missing, ask for the next round
        if it is not dealt yet, and refresh the projections; returns the state it saw."""
        for _ in range(MAX_CONFLICTS):
            loaded = await self.games.load(game_id, fresh=True)
            state = loaded.state
            if loaded.version == 0:
                return state  # no such game (news of nothing): nothing to score or project
            if state.phase == "scoring":
                sheet = round_sheet(state.rules, state.rounds[-1])
                command = RecordScores(
                    state.round, sheet.winner, sheet.went_out, sheet.seats, sheet.scores
                )
                now = self.clock()
                decision = decide(state, command, Context(now))
                if isinstance(decision, Rejection):
                    self.log.error("score sheet refused", game=game_id, code=decision.code)
                    return state
                try:
                    result, loaded = await self.games.append(
                        game_id,
                        loaded,
                        decision,
                        "scoring",
                        f"scores:{state.round}",
                        None,
                        now,
                    )
                except VersionConflict:
                    continue
                # Announced again after a duplicate too: the first appender may have died
                # before announcing, and the news is harmless twice.
                records = () if result.duplicate else result.records
                key, news = self.bus.news(game_id, loaded.version, ["ScoresRecorded"], records)
                await self.client.xadd(key, news, maxlen=FEED_MAXLEN, approximate=True)
                if not result.duplicate:
                    self.sheets.inc()
                    self.log.info("scores recorded", game=game_id, round=state.round)
                state = loaded.state
            if state.phase == "next":
                await self.bus.send(
                    CommandEntry(game_id, "continue", f"continue:{state.round}", at=self.clock())
                )
            await self.projections.apply(state)
            done = [r for r in (state.round - 1, state.round) if r > 0 and carried_on(state, r)]
            if done:
                members = [awaiting_member(game_id, r) for r in done]
                await self.client.srem(self.keys.awaiting_scores(), *members)
            return state
        raise RuntimeError(f"game {game_id}: {MAX_CONFLICTS} version conflicts in a row")

    async def rebuild(self) -> dict[str, Any]:
        """Drop every projection and rebuild it from the logs; report the parts that differed
        from what was live (``differences``) and which games' standings did."""
        game_ids = await self.store.list_games()
        before = await self.projections.snapshot(game_ids)
        await self.projections.drop(game_ids)
        for game_id in game_ids:
            loaded = await self.games.load(game_id, fresh=True)
            if loaded.version:
                await self.projections.apply(loaded.state)
        after = await self.projections.snapshot(game_ids)
        differences = [
            part for part in ("players", "leaderboard", "games") if before[part] != after[part]
        ]
        differing = sorted(g for g in game_ids if before["games"][g] != after["games"][g])
        return {
            "games": len(game_ids),
            "differences": differences,
            "games_differing": differing[:REPORTED_GAMES],
        }

    async def ready(self) -> tuple[bool, str]:
        """Ready when Redis answers and the feed is followed."""
        if not self.running:
            return False, "not following the feed"
        try:
            await self.client.ping()
        except Exception as err:
            return False, f"redis: {err}"
        return True, "following the feed"


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
