"""The scoring service: follows the feed; when a round ends it computes the score sheet with the
pure scoring module, appends ``ScoresRecorded`` (expected version, command id ``scores:<round>``
so a redelivered ending appends nothing twice) and asks the referees to carry on; and it keeps
the projections (standings, leaderboard, player statistics) up to date.

The feed is trimmed and scoring may be down when a round ends, so the referee also notes every
ended round in the ``awaiting-scores`` set (``<game>|<round>``); scoring sweeps that set every
``sweep_seconds`` and removes a round once its sheet is recorded and the game has carried on.
The feed is read as ``shared/infra/consumer.py`` reads a stream. A feed entry is acknowledged
only after everything it asked for is written (the score sheet, its news, the ``continue``, the
projections). One whose handling keeps failing is given up (acknowledged, logged, counted) at its
first delivery after ``max_deliveries`` handled ones; the sweep still covers the round it
announced. A delivery that failed for Redis's reasons (out of memory refuses every write that
adds data, but not the acknowledgement) is not counted: giving up the news of a finished match
while Redis is full would leave its projections unwritten.

Times (the stamp of ``ScoresRecorded``) are Redis's (``shared/infra/clock.py``), as the
referees' are.

Every scoring process heartbeats in the ``scorers`` set (``shared/infra/members.py``); the
outcome is its readiness (``shared/infra/readiness.py``: ``/readyz`` never calls Redis itself),
and the first live one by name forgets the departed scorers' consumers in the feed groups once
their pending entries are claimed (``shared/infra/departed.py``): each start is a new consumer.
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
from shared.archive.base import Archive
from shared.core.codes import Rejection
from shared.core.commands import Context, RecordScores
from shared.core.decide import decide, round_sheet
from shared.core.state import GameState
from shared.infra.autopipe import autopipe
from shared.infra.bus import FEED_MAXLEN, SCORING, Bus
from shared.infra.client import RedisClient
from shared.infra.clock import RedisClock
from shared.infra.consumer import ConsumerMetrics, Delivery, Reading, StreamConsumer
from shared.infra.departed import Departed
from shared.infra.gamelog import GameLog, change_of
from shared.infra.keys import Keys, awaiting_member, check_game_id
from shared.infra.members import Members
from shared.infra.observability import service_registry
from shared.infra.protocol import CommandEntry, MalformedEntry, News
from shared.infra.ratings import RESULT_TYPES, GameResult
from shared.infra.readiness import PING_SECONDS, Readiness
from shared.infra.settings import Settings
from shared.infra.store.base import VersionConflict
from shared.infra.store.redis import RedisEventStore

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
    "SeatLeft",  # a name gone from the seats
    "GameCancelled",  # the status
}
FOLLOW_PAUSE = 0.05  # seconds between reads of the feed after one that had little news
MAX_CONFLICTS = 10
SWEEP_SECONDS = 5.0
ASK_AGAIN_SECONDS = 5.0
"""A round's next deal, once asked for, is asked for again only after this long: every news of
the game while the deal is not in (its own score sheet's among them) found the game waiting and
asked again, and the referee answers a repeated command id by reading the game's whole log, a
cost that grew with the game, every round. Asked again after this long, a lost or refused ask
is still made good (by the next news, or the sweep)."""
GAUGE_SECONDS = 5.0  # between two updates of the per-partition feed gauges
REPORTED_GAMES = 20  # a rebuild names at most this many games whose standings differed
TIDY_EVERY = 20  # heartbeats between two looks for departed consumers


def carried_on(state: GameState, round_number: int) -> bool:
    """Whether round ``round_number`` is scored and the game has moved past it."""
    return state.status == "finished" or state.round > round_number


class Scoring:
    """One scoring process (several may run; every step is idempotent)."""

    def __init__(
        self,
        client: RedisClient,
        settings: Settings,
        clock: Callable[[], float] = time.monotonic,
        *,
        member_time: Callable[[], float] | None = None,
        readiness: Readiness | None = None,
    ) -> None:
        """``member_time``: the time of the heartbeats (tests step it; None: Redis's own
        ``TIME``); ``readiness``: where the heartbeats' outcomes are noted (tests step its
        clock)."""
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
        self.members = Members(
            client, self.keys.scorers(), self.consumer, settings.lease_ms, member_time
        )
        self.beat_seconds = min(PING_SECONDS, settings.lease_ms / 3000)
        self.readiness = readiness or Readiness()
        self.departed = Departed(client, SCORING)
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
        self.too_late = Counter(
            "scoring_results_too_late_total",
            "Finished games older than every ratings checkpoint of their rule set, not rated "
            "live (redelivered long after, or late by so many results: a rebuild rates them)",
            registry=self.registry,
        )
        self.projections.ratings.on_late = self._too_late
        self.sweep_seconds = SWEEP_SECONDS
        # Game -> (round, when) of the last ask for its next deal, while the game waits for it
        self.asked: dict[str, tuple[int, float]] = {}
        self.stopping = asyncio.Event()
        self.running = False
        reading = Reading.from_settings(
            settings,
            SCORING,
            self.bus.feed_streams(),
            None,  # no dead letters: an entry given up leaves its round to the sweep
            consumer=self.consumer,
            block_ms=min(1000, max(settings.claim_idle_ms, 50)),
            alone_block_ms=5000,  # a cluster's one-partition reads: news wakes them anyway
            # Nothing here is urgent (a round's score sheet may wait a tenth of a second): let
            # news gather, one read per pause instead of one per turn.
            gather_seconds=FOLLOW_PAUSE,
        )
        counts = ConsumerMetrics(
            self.failures,
            self.given_up,
            handled=self.handled,
            read_failures=self.failures,
            by_reason=False,
        )
        self.reader = StreamConsumer(
            client,
            reading,
            self.handle,
            counts,
            wants=lambda delivery: self._game_to_score(delivery) is not None,
            log=self.log,
        )

    async def run(self) -> None:
        """Follow every feed partition and sweep the awaiting rounds until ``stop``."""
        if not await self.reader.join(self.stopping):
            return
        self.running = True
        await self.beat()
        self.reader.start()
        loops = [
            asyncio.create_task(self._sweep_loop()),
            asyncio.create_task(self.clock.follow(self.stopping)),
            asyncio.create_task(self._presence_loop()),
            asyncio.create_task(self._gauge_loop()),
        ]
        try:
            await self.stopping.wait()
        finally:
            self.running = False
            # Drain: the entries in hand finish (within the deadline), the rest stay pending.
            await self.reader.drain()
            for task in loops:
                task.cancel()
            await asyncio.gather(*loops, return_exceptions=True)
            try:
                await asyncio.wait_for(self.members.leave(), 2.0)
            except Exception as err:
                self.log.warning("leaving the scorers failed", error=str(err))
            self.log.info("scoring stopped")

    async def beat(self) -> list[str]:
        """Heartbeat among the scorers, its outcome noted as the readiness; the live ones."""
        try:
            live = await self.members.beat()
        except asyncio.CancelledError:
            raise
        except Exception as err:
            self.readiness.failed(f"redis: {err}")
            self.log.warning("the scorers' heartbeat failed", error=str(err))
            return []
        self.readiness.reached()
        return live

    async def _presence_loop(self) -> None:
        beats = 0
        while not self.stopping.is_set():
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), self.beat_seconds)
            live = await self.beat()
            beats += 1
            if beats % TIDY_EVERY == 0:
                try:
                    await self.forget_departed(live)
                except asyncio.CancelledError:
                    raise
                except Exception as err:
                    self.log.warning("forgetting departed consumers failed", error=str(err))

    async def forget_departed(self, live: list[str]) -> list[str]:
        """On the first live scorer by name: delete the consumers of the scorers that are gone
        from the feed groups, once nothing is pending for them (``stream consumer``)."""
        if not live or live[0] != self.consumer:
            return []
        keep = {*live, self.consumer}
        gone = await self.departed.forget(self.bus.feed_streams(), keep.__contains__)
        if gone:
            self.log.info("departed consumers forgotten", consumers=gone[:20], count=len(gone))
        return gone

    async def update_feed_gauges(self) -> None:
        """Feed entries read but not acknowledged by the scorers, per partition, for /metrics
        (and the alert on a scoring that has stopped keeping up)."""
        for partition, stream in enumerate(self.bus.feed_streams()):
            for group in await self.client.xinfo_groups(stream):
                if _text(group["name"]) == SCORING:
                    self.pending.labels(str(partition)).set(group["pending"])

    async def _gauge_loop(self) -> None:
        while not self.stopping.is_set():
            try:
                await self.update_feed_gauges()
            except asyncio.CancelledError:
                raise
            except Exception as err:
                self.log.warning("updating the feed gauges failed", error=str(err))
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self.stopping.wait(), GAUGE_SECONDS)

    def stop(self) -> None:
        """Stop reading the feed (the entries in hand finish, within the drain deadline)."""
        self.stopping.set()

    async def handle(self, delivery: Delivery) -> None:
        """React to one feed entry (the consumer acknowledges it once this returns)."""
        game = self._game_to_score(delivery)
        if game is not None:
            await self.catch_up(game)

    def _game_to_score(self, delivery: Delivery) -> str | None:
        """The game a feed entry asks scoring to look at (a round or game changed), or None
        for news that needs nothing (most of them: turns)."""
        try:
            news = News.decode(delivery.fields)
        except MalformedEntry as err:
            self.log.warning("feed entry malformed", entry=delivery.entry, why=str(err)[:200])
            return None
        if not set(news.types) & INTERESTING:
            return None
        return news.game

    def _too_late(self, result: GameResult) -> None:
        self.too_late.inc()
        self.log.warning(
            "result not rated: older than every ratings checkpoint of its rule set (a "
            "redelivery of one rated long ago, or `rummy rebuild` rates it in its place)",
            game=result.game_id,
            rules=result.rules,
        )

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
                before = loaded
                try:
                    result, loaded = await self.games.append(
                        game_id,
                        before,
                        decision,
                        "scoring",
                        f"scores:{state.round}",
                        None,
                        now,
                    )
                except VersionConflict:
                    continue
                # Announced again after a duplicate too: the first appender may have died
                # before announcing, and the news is harmless twice. The news says what
                # changed (as the referee's does), so a follower folds it without a read.
                change = None if result.duplicate else change_of(before, result)
                key, news = self.bus.news(
                    game_id, loaded.version, ["ScoresRecorded"], change=change
                )
                await self.client.xadd(key, news, maxlen=FEED_MAXLEN, approximate=True)
                if not result.duplicate:
                    self.sheets.inc()
                    self.log.info("scores recorded", game=game_id, round=state.round)
                state = loaded.state
            await self._ask_to_carry_on(game_id, state)
            await self.projections.apply(state)
            if state.status == "finished" and not await self.projections.ratings.known(game_id):
                # (only the events the result reads, not the log's hundreds of turns decoded)
                events = await self.store.read_types(game_id, RESULT_TYPES)
                await self.projections.rate(game_id, events)
            done = [r for r in (state.round - 1, state.round) if r > 0 and carried_on(state, r)]
            if done:
                members = [awaiting_member(game_id, r) for r in done]
                await self.client.srem(self.keys.awaiting_scores(), *members)
            return state
        raise RuntimeError(f"game {game_id}: {MAX_CONFLICTS} version conflicts in a row")

    async def _ask_to_carry_on(self, game_id: str, state: GameState) -> None:
        """Ask the referee for the next deal of a game that waits for it, unless that was
        asked less than ``ASK_AGAIN_SECONDS`` ago. (A state older than the ask, such as the
        one a duplicate append of the sheet hands back, changes nothing.)"""
        last = self.asked.get(game_id)
        if last is not None and carried_on(state, last[0]):
            del self.asked[game_id]  # the game moved past that round
            last = None
        if state.phase != "next":
            return
        now = self.clock()
        if last is not None and last[0] == state.round and now - last[1] < ASK_AGAIN_SECONDS:
            return
        # Noted before the send: the sweep and the feed may catch the same game up at once.
        self.asked[game_id] = (state.round, now)
        try:
            await self.bus.send(
                CommandEntry(game_id, "continue", f"continue:{state.round}", at=now)
            )
        except BaseException:
            self.asked.pop(game_id, None)  # not asked after all: the next look asks
            raise

    async def rebuild(
        self,
        archive: Archive | None = None,
        done: Callable[[int, int], None] | None = None,
    ) -> dict[str, Any]:
        """Drop every projection and rebuild it from the logs, and the archived games Redis no
        longer holds from ``archive`` (they count in the ratings; their own standings left with
        their logs); report the parts that differed from what was live (``differences``) and
        which games' standings did. ``done(n, of)`` after each game (a progress bar's)."""
        game_ids = await self.store.list_games()
        before = await self.projections.snapshot(game_ids)
        await self.projections.drop(game_ids)
        for number, game_id in enumerate(game_ids, start=1):
            loaded = await self.games.load(game_id, fresh=True)
            if loaded.version:
                await self.projections.apply(loaded.state)
                if loaded.state.status == "finished":
                    events = await self.store.read(game_id)
                    await self.projections.rate(game_id, events, refold=False)
            if done is not None:
                done(number, len(game_ids))
        archived = 0
        if archive is not None:
            live = set(game_ids)
            for game_id in await archive.game_ids():
                record = None if game_id in live else await archive.fetch(game_id)
                if record is not None:
                    await self.projections.rate(game_id, list(record.events), refold=False)
                    archived += 1
        await self.projections.ratings.refold()
        after = await self.projections.snapshot(game_ids)
        differences = [part for part in ("games", "ratings") if before[part] != after[part]]
        differing = sorted(g for g in game_ids if before["games"][g] != after["games"][g])
        report: dict[str, Any] = {
            "games": len(game_ids) + archived,
            "differences": differences,
            "games_differing": differing[:REPORTED_GAMES],
        }
        if archive is not None:
            report["archived"] = archived
        return report

    async def ready(self) -> tuple[bool, str]:
        """Ready when the feed is followed (not draining) and the last heartbeat, recent
        enough, reached Redis: the last known state, no Redis call of its own."""
        if self.stopping.is_set():
            return False, "draining"
        if not self.running:
            return False, "not following the feed"
        return self.readiness.answer("following the feed")


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
